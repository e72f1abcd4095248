"""Fixed twin of int64_strides_behind_switch.py: the batch index is promoted unconditionally;
one 64-bit multiply per program costs nothing next to the loads."""
import torch
import triton
import triton.language as tl

@triton.jit
def _head_mean_kernel(
    out_ptr, stride_ob, stride_oh, x_ptr, stride_xb, stride_xs, stride_xh, n_seq, D: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    off_b = tl.program_id(0).to(tl.int64)
    off_h = tl.program_id(1)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    x_ptrs = x_ptr + off_b * stride_xb + off_h * stride_xh + offs_s[:, None] * stride_xs + offs_d[None, :]
    x = tl.load(x_ptrs, mask=offs_s[:, None] < n_seq, other=0.0)
    tl.store(out_ptr + off_b * stride_ob + off_h * stride_oh + offs_d, tl.sum(x, axis=0) / n_seq)


def head_mean(x):
    """Mean over the sequence of x [B, S, H, D] (float32, unit last stride): [B, H, D]."""
    n_b, n_s, n_h, d = x.shape
    out = torch.empty(n_b, n_h, d, dtype=torch.float32)
    _head_mean_kernel[(n_b, n_h)](
        out, out.stride(0), out.stride(1), x, x.stride(0), x.stride(1), x.stride(2), n_s, D=d,
        BLOCK_S=triton.next_power_of_2(n_s),
    )
    return out


def run():
    x = torch.randn(3, 5, 2, 8)
    return torch.allclose(head_mean(x), x.mean(dim=1), atol=1e-5)
