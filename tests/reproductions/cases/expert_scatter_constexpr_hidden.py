"""Mixture-of-experts un-permutation: each expert output row is scattered back to the token
position it came from, a loaded index. The row step is HIDDEN, a `tl.constexpr` bound to the
hidden size, and the destination is the caller's tensor: a row-padded output (a slice of a wider
buffer) is written skewed. The loaded index times HIDDEN is also 32-bit arithmetic: at 262,144
tokens of 8,192 values it wraps.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _unpermute_kernel(out_ptr, expert_out_ptr, dest_ptr, HIDDEN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    dest = tl.load(dest_ptr + i)
    offs = tl.arange(0, BLOCK)
    mask = offs < HIDDEN
    row = tl.load(expert_out_ptr + i * HIDDEN + offs, mask=mask)
    tl.store(out_ptr + dest * HIDDEN + offs, row, mask=mask)  # expect: SC003 SC006


def unpermute(expert_out, dest, out):
    n, hidden = expert_out.shape
    if out.shape[1] != hidden:
        raise ValueError(f"out has {out.shape[1]} columns, the expert outputs {hidden}")
    expert_out = expert_out.contiguous()
    _unpermute_kernel[(n,)](out, expert_out, dest, HIDDEN=hidden, BLOCK=triton.next_power_of_2(hidden))
    return out


def run():
    expert_out = torch.randn(4, 6)
    dest = torch.tensor([2, 0, 3, 1], dtype=torch.int32)
    buffer = torch.zeros(4, 8)
    out = buffer[:, :6]  # rows 8 apart
    unpermute(expert_out, dest, out)
    expected = torch.zeros(4, 6)
    expected[dest.long()] = expert_out
    return torch.equal(out, expected)
