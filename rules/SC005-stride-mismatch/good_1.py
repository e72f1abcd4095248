# The strides in the order of the kernel's dimensions.
import torch
import triton
import triton.language as tl


@triton.jit
def _matvec_kernel(y_ptr, a_ptr, x_ptr, n_rows, n_cols, stride_am, stride_ak, BLOCK: tl.constexpr):
    m = tl.program_id(0).to(tl.int64)
    k = tl.arange(0, BLOCK)
    mask = k < n_cols
    a = tl.load(a_ptr + m * stride_am + k * stride_ak, mask=mask, other=0.0)
    x = tl.load(x_ptr + k, mask=mask, other=0.0)
    tl.store(y_ptr + m, tl.sum(a * x, axis=0))


def matvec(a, x):
    n_rows, n_cols = a.shape
    y = torch.empty(n_rows, dtype=a.dtype)
    x = x.contiguous()
    _matvec_kernel[(n_rows,)](y, a, x, n_rows, n_cols, a.stride(0), a.stride(1), BLOCK=triton.next_power_of_2(n_cols))
    return y
