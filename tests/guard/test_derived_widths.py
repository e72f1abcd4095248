"""Derived contracts: what a launch walks must fit the tensor. A masked store must fit the dims
its unit index walks (a width too small is named with the bound, the width and the element the
store would reach), a dim no term steps cannot be walked into unless packed, a tensor stored
through must not have two elements at one address, and all tensors share a device."""

from __future__ import annotations

import re

import torch
import triton
import triton.language as tl

from stridecheck import stride_guard
from tests.guard.conftest import DEV, refusal
from tests.guard.test_kernel_launch import copy_rows_bare


def test_a_store_wider_than_the_output_is_refused():
    x = torch.randn(5, 30, device=DEV)
    out = torch.empty(5, 29, device=DEV)
    msg = refusal(copy_rows_bare[(5,)], out, out.stride(0), x, x.stride(0), 30, BLOCK=32)
    assert re.fullmatch(
        r"_copy_rows: the store through out_ptr \(line \d+\) is masked by `< n_cols` = 30 along its last dim, which "
        r"hold only 29 elements \(shape \[5, 29\], strides \[29, 1\]\): `tl.arange\(0, BLOCK\)` reaches offset 29 when "
        r"its index is 29 \(that is out_ptr\[1, 0\]\); the store would run past them — allocate out_ptr at least 30 wide",
        msg,
    )


@triton.jit
def _tile_store(out_ptr, stride_m, M, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    tl.store(out_ptr + offs_m[:, None] * stride_m + offs_n[None, :], 1.0, mask=offs_m[:, None] < M)


def test_a_row_masked_tile_store_is_not_judged_against_the_last_dim():
    # `offs_m < M` bounds the rows of a 2-D tile, not the walk along the last dim.
    k = stride_guard(_tile_store)
    out = torch.zeros(8, 4, device=DEV)
    k[(1,)](out, out.stride(0), 8, BM=8, BN=4)
    assert torch.equal(out, torch.ones(8, 4, device=DEV))


@triton.jit
def _gather_rows(out_ptr, pool_ptr, slot_stride, n_inner, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_inner
    tl.store(out_ptr + i * n_inner + offs, tl.load(pool_ptr + i * slot_stride + offs, mask=mask), mask=mask)  # stridecheck: ignore[SC001]


gather_rows = stride_guard(_gather_rows)


def test_a_dim_no_term_steps_must_be_packed_with_the_walk():
    pool = torch.randn(3, 4, 8, device=DEV)
    out = torch.empty(3, 4, 8, device=DEV)
    gather_rows[(3,)](out, pool, pool.stride(0), 32, BLOCK=32)
    assert torch.equal(out, pool)
    padded = torch.randn(3, 4, 10, device=DEV)[:, :, :8]  # `offs` walks [4, 8] flattened: rows 10 apart break it
    msg = refusal(gather_rows[(3,)], out, padded, padded.stride(0), 32, BLOCK=32)
    assert "pool_ptr dim 1 has no term of its own in the address (line " in msg
    assert "that needs pool_ptr.stride(1) == 8, but it is 10" in msg
    assert "pool_ptr[0, 1, 0] is at offset 10, but `tl.arange(0, BLOCK)` reaches offset 8 when its index is 8" in msg
    assert msg.endswith("pass pool_ptr.contiguous(), or step dim 1 by its own stride argument in the kernel")


def test_a_written_dim_that_is_not_packed_is_told_to_be_allocated():
    pool = torch.randn(3, 4, 8, device=DEV)
    out = torch.randn(3, 4, 10, device=DEV)[:, :, :8]
    msg = refusal(gather_rows[(3,)], out, pool, pool.stride(0), 32, BLOCK=32)
    assert "`i * n_inner` (line " in msg and "steps out_ptr dim 0 by n_inner = 32, but out_ptr.stride(0) is 40" in msg
    assert msg.endswith("or allocate out_ptr packed (torch.empty([3, 4, 8]))")
    assert ".contiguous()" not in msg  # a copy would take the kernel's writes


def test_an_output_whose_elements_share_memory_is_refused_with_two_indices():
    out = torch.empty(1, 30, device=DEV).expand(5, 30)
    msg = refusal(copy_rows_bare[(5,)], out, 30, torch.randn(5, 30, device=DEV), 30, 30, BLOCK=32)
    assert msg == (
        "_copy_rows: out_ptr is stored through but two of its elements share memory: out_ptr[0, 0] and out_ptr[1, 0] "
        "are both at offset 0 (shape [5, 30], strides [0, 1]); programs would race on one address — allocate "
        "out_ptr with torch.empty(...) so that each element has memory of its own"
    )


def test_an_input_may_repeat_its_elements():
    x = torch.randn(1, 30, device=DEV).expand(5, 30)
    out = torch.empty(5, 30, device=DEV)
    copy_rows_bare[(5,)](out, 30, x, 0, 30, BLOCK=32)
    assert torch.equal(out, x)


def test_tensors_on_two_devices_are_refused():
    x = torch.randn(5, 30)
    out = torch.empty(5, 30, device="meta")  # checked from metadata only: never launched
    msg = refusal(copy_rows_bare._check, out, 30, x, 30, 30, BLOCK=32)
    assert msg == "_copy_rows: x_ptr is on cpu but out_ptr is on meta; move all tensors to one device"
