"""An attention-style kernel knows its batch offset can pass 2**31 elements, so it promotes its
strides to 64 bits, but only under a `USE_INT64_STRIDES` constexpr that the module leaves off by
default for speed. On the default path `off_b * stride_xb` is a 32-bit product: a batch of
activations [B, S, H, D] wraps once b * S * H * D passes 2**31 - 1 (B = 9 at S = 32768, H = 32,
D = 256).

Kind: 64-bit promotion on one path only, behind a switch that defaults to off (seen in aiter's
Triton MHA, ROCm/aiter#434, which shipped with the switch off until #634 turned it on).

run() uses a small batch, so it returns True: the fault needs more than 2**31 elements."""
import torch
import triton
import triton.language as tl

_USE_INT64_STRIDES = False


def set_use_int64_strides(value):
    global _USE_INT64_STRIDES
    _USE_INT64_STRIDES = value


@triton.jit
def _head_mean_kernel(
    out_ptr, stride_ob_in, stride_oh, x_ptr, stride_xb_in, stride_xs_in, stride_xh, n_seq, D: tl.constexpr,
    BLOCK_S: tl.constexpr, USE_INT64_STRIDES: tl.constexpr,
):
    off_b = tl.program_id(0)
    off_h = tl.program_id(1)
    if USE_INT64_STRIDES:
        stride_xb = tl.cast(stride_xb_in, tl.int64)
        stride_xs = tl.cast(stride_xs_in, tl.int64)
        stride_ob = tl.cast(stride_ob_in, tl.int64)
    else:
        stride_xb = stride_xb_in
        stride_xs = stride_xs_in
        stride_ob = stride_ob_in
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, D)
    x_ptrs = x_ptr + off_b * stride_xb + off_h * stride_xh + offs_s[:, None] * stride_xs + offs_d[None, :]  # expect: SC006
    x = tl.load(x_ptrs, mask=offs_s[:, None] < n_seq, other=0.0)
    tl.store(out_ptr + off_b * stride_ob + off_h * stride_oh + offs_d, tl.sum(x, axis=0) / n_seq)  # expect: SC006


def head_mean(x):
    """Mean over the sequence of x [B, S, H, D] (float32, unit last stride): [B, H, D]."""
    n_b, n_s, n_h, d = x.shape
    out = torch.empty(n_b, n_h, d, dtype=torch.float32)
    _head_mean_kernel[(n_b, n_h)](
        out, out.stride(0), out.stride(1), x, x.stride(0), x.stride(1), x.stride(2), n_s, D=d,
        BLOCK_S=triton.next_power_of_2(n_s), USE_INT64_STRIDES=_USE_INT64_STRIDES,
    )
    return out


def run():
    x = torch.randn(3, 5, 2, 8)
    return torch.allclose(head_mean(x), x.mean(dim=1), atol=1e-5)
