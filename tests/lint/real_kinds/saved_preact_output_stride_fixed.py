"""Fixed twin of saved_preact_output_stride.py: the saved pre-activation is stored with its own
strides."""
import torch
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_kernel(
    out_ptr, stride_om, stride_on, x_ptr, stride_xm, stride_xn, bias_ptr, pre_ptr, stride_pm, stride_pn, N,
    SAVE_PRE: tl.constexpr, BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    valid = cols < N
    h = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=valid, other=0.0)
    h += tl.load(bias_ptr + cols, mask=valid, other=0.0)
    if SAVE_PRE:
        tl.store(pre_ptr + row * stride_pm + cols * stride_pn, h, mask=valid)
    y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
    tl.store(out_ptr + row * stride_om + cols * stride_on, y, mask=valid)


def bias_gelu(x, bias, pre_out=None):
    """GELU(x + bias) for x [M, N] (float32), bias [N]; when `pre_out` [M, N] is given (any
    layout), x + bias is saved into it for the backward pass."""
    m, n = x.shape
    if pre_out is not None and pre_out.shape != (m, n):
        raise ValueError(f"pre_out has shape {tuple(pre_out.shape)}, expected {(m, n)}")
    out = torch.empty(m, n, dtype=torch.float32)
    pre_strides = pre_out.stride() if pre_out is not None else (0, 0)
    _bias_gelu_kernel[(m,)](
        out, out.stride(0), out.stride(1), x, x.stride(0), x.stride(1), bias, pre_out, pre_strides[0], pre_strides[1], n,
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
