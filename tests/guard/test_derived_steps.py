"""Derived contracts: every step of an address (a stride argument, a product of sizes, a
``tl.constexpr`` stride, a tile) must reach the tensor's elements as the tensor's own strides do;
a refusal names an index whose address differs. Kernels run in the CPU interpreter."""

from __future__ import annotations

import re

import pytest
import torch
import triton
import triton.language as tl

from stridecheck import stride_guard
from tests.guard.conftest import DEV, refusal


@triton.jit
def _store_step(cache_ptr, cache_row_stride, step, logits_ptr, logits_row_stride, n_vocab, BLOCK: tl.constexpr):
    req = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(logits_ptr + req * logits_row_stride + offs, mask=offs < n_vocab)
    # A logical size as the stride of dim 1: right only while the cache rows are n_vocab wide.
    tl.store(cache_ptr + req * cache_row_stride + step * n_vocab + offs, vals, mask=offs < n_vocab)  # stridecheck: ignore[SC001]


store_step = stride_guard(_store_step)


def test_a_size_used_as_a_stride_is_refused_with_the_index_it_misplaces():
    logits = torch.randn(3, 300, device=DEV)
    cache = torch.zeros(3, 3, 301, device=DEV)  # rows one column wider than the vocabulary
    msg = refusal(store_step[(3,)], cache, cache.stride(0), 1, logits, logits.stride(0), 300, BLOCK=512)
    assert re.fullmatch(
        r"_store_step: `step \* n_vocab` \(line \d+\) steps cache_ptr dim 1 by n_vocab = 300, but "
        r"cache_ptr.stride\(1\) is 301 \(shape \[3, 3, 301\], strides \[903, 301, 1\]\): cache_ptr\[0, 1, 0\] is at "
        r"offset 301, but `step \* n_vocab` reaches offset 300 when its index is 1 \(that is cache_ptr\[0, 0, 300\]\); "
        r"a logical size used as a stride — pass cache_ptr.stride\(1\) to the kernel and step by it",
        msg,
    )
    assert torch.count_nonzero(cache) == 0  # nothing was launched


def test_the_same_kernel_with_packed_rows_launches():
    logits = torch.randn(3, 300, device=DEV)
    cache = torch.zeros(3, 3, 300, device=DEV)
    store_step[(3,)](cache, cache.stride(0), 2, logits, logits.stride(0), 300, BLOCK=512)
    assert torch.equal(cache[:, 2], logits)


@triton.jit
def _flat_rows(x_ptr, out_ptr, row_stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * row_stride + offs, mask=offs < n)
    tl.store(out_ptr + row * row_stride + offs, v + 1, mask=offs < n)


flat_rows = stride_guard(_flat_rows)


def test_a_flat_buffer_read_as_rows_is_accepted():
    x = torch.arange(12.0, device=DEV)
    out = torch.zeros(12, device=DEV)
    flat_rows[(3,)](x, out, 4, 4, BLOCK=4)
    assert torch.equal(out, x + 1)


def test_rows_a_wrong_stride_apart_are_refused():
    x = torch.arange(24.0, device=DEV).reshape(3, 8)[:, :4]
    msg = refusal(flat_rows[(3,)], x, torch.zeros(3, 4, device=DEV), 4, 4, BLOCK=4)
    assert msg.startswith("_flat_rows: `row * row_stride` (line ")
    assert "x_ptr[1, 0] is at offset 8, but `row * row_stride` reaches offset 4 when its index is 1" in msg
    assert msg.endswith(
        "row_stride also steps out_ptr: step x_ptr by a stride argument of its own (x_ptr.stride(0) = 8), or pass "
        "x_ptr.contiguous() (its dim 0 is then 4 apart)"
    )


@triton.jit
def _gather_column(x_ptr, out_ptr, start, stride_x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + start + offs * stride_x, mask=offs < n)
    tl.store(out_ptr + offs, v, mask=offs < n)


gather_column = stride_guard(_gather_column)


def test_a_scalar_offset_is_not_a_unit_step():
    # `x_ptr + start + offs * stride_x`: `start` shifts the address, it does not walk elements.
    col = torch.arange(20.0, device=DEV).reshape(5, 4)[:, 1]
    out = torch.zeros(3, device=DEV)
    gather_column[(1,)](col, out, 2 * col.stride(0), col.stride(0), 3, BLOCK=4)
    assert torch.equal(out, col[2:5])
    assert "`offs * stride_x`" in refusal(gather_column[(1,)], col, out, 2, 1, 3, BLOCK=4)
    # The arange-addressed output still needs unit inner stride.
    msg = refusal(gather_column[(1,)], col, torch.zeros(3, 2, device=DEV)[:, 0], 2, col.stride(0), 3, BLOCK=4)
    assert msg.startswith("_gather_column: out_ptr is addressed as `... + tl.arange(0, BLOCK)` (line ")
    assert "a unit step along dim 0, but out_ptr.stride(0) is 2" in msg


@triton.jit
def _batched(x_ptr, out_ptr, stride_b, stride_m, M, N, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    m = tl.program_id(1).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + b * stride_b + m * stride_m + offs, mask=offs < N)
    tl.store(out_ptr + b * (M * N) + m * N + offs, v, mask=offs < N)  # stridecheck: ignore[SC001]


batched = stride_guard(_batched)


def test_flattened_leading_dims_are_accepted_and_a_wrong_stride_refused():
    # A [B*M, N] tensor addressed as [B, M, N]: stride_b = M * stride(0) steps two rows at once.
    x = torch.arange(60.0, device=DEV).reshape(6, 10)[:, :5]
    out = torch.zeros(6, 5, device=DEV)
    batched[(2, 3)](x, out, 3 * x.stride(0), x.stride(0), 3, 5, BLOCK=8)
    assert torch.equal(out, x)
    x3 = torch.arange(60.0, device=DEV).reshape(2, 3, 10)[:, :, :5]
    msg = refusal(batched[(2, 3)], x3, out, x3.stride(0), 5, 3, 5, BLOCK=8)
    assert "`m * stride_m` (line " in msg and "steps x_ptr dim 1 by stride_m = 5, but x_ptr.stride(1) is 10" in msg


@triton.jit
def _k_major(b_ptr, out_ptr, stride_bn, K, N, BK: tl.constexpr, BN: tl.constexpr):
    offs_k = tl.arange(0, BK)
    offs_n = tl.arange(0, BN)
    mask = (offs_k[:, None] < K) & (offs_n[None, :] < N)
    v = tl.load(b_ptr + offs_k[:, None] + offs_n[None, :] * stride_bn, mask=mask)
    tl.store(out_ptr + offs_k[:, None] * N + offs_n[None, :], v, mask=mask)  # stridecheck: ignore[SC001]


k_major = stride_guard(_k_major)


def test_the_unit_index_may_walk_a_dim_of_stride_one_other_than_the_last():
    # A K-major operand handed as w.t(): [K, N], strides [1, K].
    b = torch.randn(3, 4, device=DEV).t()
    out = torch.zeros(4, 3, device=DEV)
    k_major[(1,)](b, out, b.stride(1), 4, 3, BK=4, BN=4)
    assert torch.equal(out, b)
    strided = torch.randn(4, 6, device=DEV)[:, ::2]  # no dim of stride 1
    msg = refusal(k_major[(1,)], strided, out, strided.stride(1), 4, 3, BK=4, BN=4)
    assert "b_ptr is addressed as `... + tl.arange(0, BK)`" in msg and "b_ptr.stride(1) is 2" in msg


@triton.jit
def _heads(x_ptr, out_ptr, stride_b, STRIDE_H: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1)
    offs = tl.arange(0, D)
    v = tl.load(x_ptr + b * stride_b + h * STRIDE_H + offs)
    tl.store(out_ptr + (b * tl.num_programs(1) + h) * D + offs, v)


heads = stride_guard(_heads)


def test_a_constexpr_stride_is_checked_like_any_stride_argument():
    assert "`h * STRIDE_H` steps by STRIDE_H" in heads.contract.describe()
    qk = torch.randn(2, 3, 2, 4, device=DEV)
    q = qk[:, :, 0, :]  # [B, H, D], strides [24, 8, 1]: one head of two interleaved
    out = torch.empty(2, 3, 4, device=DEV)
    heads[(2, 3)](q, out, q.stride(0), STRIDE_H=8, D=4)
    assert torch.equal(out, q)
    msg = refusal(heads[(2, 3)], q, out, q.stride(0), STRIDE_H=4, D=4)
    assert "`h * STRIDE_H` (line " in msg and "steps x_ptr dim 1 by STRIDE_H = 4, but x_ptr.stride(1) is 8" in msg


@triton.jit
def _row_tiles(x_ptr, out_ptr, stride_m, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    x_ptr += pid * BLOCK_M * stride_m
    out_ptr += pid * BLOCK_M * N
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (pid * BLOCK_M + rows[:, None] < M) & (cols[None, :] < N)
    v = tl.load(x_ptr + rows[:, None] * stride_m + cols[None, :], mask=mask)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], v, mask=mask)  # stridecheck: ignore[SC001]


row_tiles = stride_guard(_row_tiles)


def test_a_tile_step_judges_the_stride_it_tiles():
    # `pid * BLOCK_M * stride_m`: tiles of rows; a tile may span the boundary of a flattened dim
    # ([2, 3, 5] read as 6 rows in tiles of 4).
    x = torch.randn(2, 3, 5, device=DEV)
    out = torch.zeros(6, 5, device=DEV)
    row_tiles[(2,)](x, out, 5, 6, 5, BLOCK_M=4, BLOCK_N=8)
    assert torch.equal(out, x.reshape(6, 5))
    padded = torch.randn(6, 7, device=DEV)[:, :5]
    assert "stride_m = 5, but x_ptr.stride(0) is 7" in refusal(row_tiles[(2,)], padded, out, 5, 6, 5, BLOCK_M=4, BLOCK_N=8)


def test_dims_of_size_one_take_any_stride():
    x = torch.randn(1, 30, device=DEV)
    out = torch.empty(1, 30, device=DEV)
    from tests.guard.test_kernel_launch import copy_rows_bare

    copy_rows_bare[(1,)](out, 12345, x, 777, 30, BLOCK=32)  # one row: its stride is never stepped
    assert torch.equal(out, x)


@pytest.mark.parametrize("rows", [1, 4])
def test_an_empty_tensor_has_no_layout_to_check(rows):
    x = torch.empty(0, device=DEV).as_strided((rows, 0), (3, 7))
    flat_rows._check(x, x, 99, 0, BLOCK=4)
