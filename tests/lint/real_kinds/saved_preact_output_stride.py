"""A fused bias + GELU kernel can also save the pre-activation for the backward pass into a buffer
the caller provides. That buffer has no strides of its own in the kernel: it is stored with the
output's strides. The output is freshly allocated and packed; the caller's buffer is a column
block of a wider activation arena, so every row after the first lands in the wrong place.

Kind: a side output stored with the main output's (or input's) strides (seen in kernl's linear
layer, ELS-RD/kernl#227 fixed by #279, and its layer norm, kernl#190; and in ROCm's flash-attention
Triton backward, where dq was addressed with q's strides, ROCm/flash-attention#122)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_kernel(
    out_ptr, stride_om, stride_on, x_ptr, stride_xm, stride_xn, bias_ptr, pre_ptr, N,
    SAVE_PRE: tl.constexpr, BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    valid = cols < N
    h = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=valid, other=0.0)
    h += tl.load(bias_ptr + cols, mask=valid, other=0.0)
    if SAVE_PRE:
        tl.store(pre_ptr + row * stride_om + cols * stride_on, h, mask=valid)  # expect: SC005
    y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
    tl.store(out_ptr + row * stride_om + cols * stride_on, y, mask=valid)


def bias_gelu(x, bias, pre_out=None):
    """GELU(x + bias) for x [M, N] (float32), bias [N]; when `pre_out` [M, N] is given (any
    layout), x + bias is saved into it for the backward pass."""
    m, n = x.shape
    if pre_out is not None and pre_out.shape != (m, n):
        raise ValueError(f"pre_out has shape {tuple(pre_out.shape)}, expected {(m, n)}")
    out = torch.empty(m, n, dtype=torch.float32)
    _bias_gelu_kernel[(m,)](
        out, out.stride(0), out.stride(1), x, x.stride(0), x.stride(1), bias, pre_out, n,
        SAVE_PRE=pre_out is not None, BLOCK_N=triton.next_power_of_2(n),
    )
    return out


def run():
    x, bias = torch.randn(4, 6), torch.randn(6)
    arena = torch.zeros(4, 14)  # saved activations of several layers, side by side
    out = bias_gelu(x, bias, pre_out=arena[:, 2:8])
    return torch.allclose(arena[:, 2:8], x + bias, atol=1e-6) and torch.allclose(
        out, torch.nn.functional.gelu(x + bias), atol=1e-5
    )
