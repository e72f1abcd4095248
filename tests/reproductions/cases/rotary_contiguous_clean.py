"""Correct code that addresses rows by sizes: the rotary-embedding launcher makes the query and
the cos/sin table contiguous and allocates the output, so `token * n_cols` is the row stride of
every tensor the kernel touches. Nothing here may be reported.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rotary_kernel(out_ptr, x_ptr, cos_sin_ptr, pos_ptr, n_cols, half, BLOCK: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    pos = tl.load(pos_ptr + token).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < half
    x1 = tl.load(x_ptr + token * n_cols + offs, mask=mask)
    x2 = tl.load(x_ptr + token * n_cols + half + offs, mask=mask)
    cos = tl.load(cos_sin_ptr + pos * n_cols + offs, mask=mask)
    sin = tl.load(cos_sin_ptr + pos * n_cols + half + offs, mask=mask)
    tl.store(out_ptr + token * n_cols + offs, x1 * cos - x2 * sin, mask=mask)
    tl.store(out_ptr + token * n_cols + half + offs, x2 * cos + x1 * sin, mask=mask)


def apply_rotary(x, cos_sin, positions):
    x = x.contiguous()
    cos_sin = cos_sin.contiguous()
    n_tokens, n_cols = x.shape
    assert cos_sin.shape[1] == n_cols and n_cols % 2 == 0
    out = torch.empty_like(x)
    half = n_cols // 2
    _rotary_kernel[(n_tokens,)](out, x, cos_sin, positions, n_cols, half, BLOCK=triton.next_power_of_2(half))
    return out


def _reference(x, cos_sin, positions):
    half = x.shape[1] // 2
    cos, sin = cos_sin[positions, :half], cos_sin[positions, half:]
    x1, x2 = x[:, :half], x[:, half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=1)


def run():
    x = torch.randn(8, 12)[::2]  # every other token of a batch: rows 24 apart
    cos_sin = torch.randn(10, 12)
    positions = torch.tensor([3, 0, 9, 4])
    return torch.allclose(apply_rotary(x, cos_sin, positions), _reference(x, cos_sin, positions), atol=1e-6)
