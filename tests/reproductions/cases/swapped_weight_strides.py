"""A per-output-channel dequantisation kernel declares the weight's strides as (output channel,
input channel); the launch passes them in the opposite order. The kernel then walks the weight
transposed: right only for a symmetric weight, so every test with an identity or a symmetric
matrix passes.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _dequant_rows_kernel(
    out_ptr,  # [n_out, n_in], float32, contiguous
    w_ptr,  # [n_out, n_in], int8
    scale_ptr,  # [n_out]
    n_in,
    stride_w_out,
    stride_w_in,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_in
    w = tl.load(w_ptr + row * stride_w_out + cols * stride_w_in, mask=mask, other=0)
    s = tl.load(scale_ptr + row)
    tl.store(out_ptr + row * n_in + cols, w.to(tl.float32) * s, mask=mask)


def dequant_rows(w, scale):
    n_out, n_in = w.shape
    out = torch.empty(n_out, n_in, dtype=torch.float32)
    _dequant_rows_kernel[(n_out,)](
        out, w, scale, n_in,
        w.stride(1),  # expect: SC005
        w.stride(0),  # expect: SC005
        BLOCK=triton.next_power_of_2(n_in),
    )
    return out


def run():
    w = torch.randint(-8, 8, (6, 6), dtype=torch.int8)  # square: the swap stays inside the buffer
    scale = torch.rand(6)
    return torch.allclose(dequant_rows(w, scale), w.float() * scale[:, None])
