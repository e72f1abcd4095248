"""Fixed twin of gate_heads_unit_stride_view.py: the kernel takes the head strides of `a` and `b`
and steps the head index by them."""
import torch
import triton
import triton.language as tl


@triton.jit
def _gate_prep_kernel(
    g_ptr, beta_ptr, a_ptr, stride_a_tok, stride_a_head, b_ptr, stride_b_tok, stride_b_head,
    a_log_ptr, dt_bias_ptr, n_heads, BLOCK_H: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.arange(0, BLOCK_H)
    valid = h < n_heads
    a = tl.load(a_ptr + t * stride_a_tok + h * stride_a_head, mask=valid, other=0.0)
    b = tl.load(b_ptr + t * stride_b_tok + h * stride_b_head, mask=valid, other=0.0)
    a_log = tl.load(a_log_ptr + h, mask=valid, other=0.0)
    dt_bias = tl.load(dt_bias_ptr + h, mask=valid, other=0.0)
    x = a + dt_bias
    softplus = tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))
    tl.store(g_ptr + t * n_heads + h, -tl.exp(a_log) * softplus, mask=valid)
    tl.store(beta_ptr + t * n_heads + h, tl.sigmoid(b), mask=valid)


def gate_prep(ba, a_log, dt_bias):
    """Decay g and write strength beta [T, H] (float32) from the fused projection `ba` [T, 2 * H]
    laid out head by head as (b, a) pairs."""
    n_tok = ba.shape[0]
    n_heads = a_log.shape[0]
    b, a = ba.view(n_tok, n_heads, 2).unbind(-1)
    g = torch.empty(n_tok, n_heads, dtype=torch.float32)
    beta = torch.empty(n_tok, n_heads, dtype=torch.float32)
    _gate_prep_kernel[(n_tok,)](
        g, beta, a, a.stride(0), a.stride(1), b, b.stride(0), b.stride(1), a_log, dt_bias, n_heads,
        BLOCK_H=triton.next_power_of_2(n_heads),
    )
    return g, beta


def run():
    n_tok, n_heads = 5, 4
    ba = torch.randn(n_tok, 2 * n_heads)
    a_log, dt_bias = torch.randn(n_heads), torch.randn(n_heads)
    g, beta = gate_prep(ba, a_log, dt_bias)
    b, a = ba.view(n_tok, n_heads, 2).unbind(-1)
    g_ref = -torch.exp(a_log) * torch.nn.functional.softplus(a + dt_bias)
    return torch.allclose(g, g_ref, atol=1e-5) and torch.allclose(beta, torch.sigmoid(b), atol=1e-6)
