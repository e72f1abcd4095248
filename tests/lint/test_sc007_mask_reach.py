"""SC007 counts a mask bound only when the index it bounds reaches the stored address.

A size that bounds a read index (`tids < num_tokens` guarding the read of a slot map), or an
index whose value reaches the address only through a load (the slot read at it), says nothing
about how wide the written tensor must be. A bound whose index is (or is computed into) the
written address, directly, through an assignment or through an inlined helper, still counts,
unless the same term is also bounded by the written tensor's own extent.
"""

from __future__ import annotations

import textwrap

import pytest

from stridecheck.lint import analysis
from tests.lint.test_rules_launch import lint_tree

OPTS = analysis.AnalysisOptions()

HEADER = '''
import torch
import triton
import triton.language as tl
'''


def _sc007(tmp_path, src: str) -> list[int]:
    """Lines of the SC007 findings when ``src`` is linted as one module."""
    return [f.span.line for f in lint_tree(tmp_path, {"m.py": HEADER + textwrap.dedent(src)}) if f.code == "SC007"]


def _store_access(src: str, kernel: str):
    text = HEADER + textwrap.dedent(src)
    model = analysis.build_module_model(text, path="m.py", module="m", options=OPTS)
    k = next(k for k in model.kernels if k.name == kernel)
    return [a for a in k.accesses if a.writes]


# A token index bounded by the token count read a slot; the row written is the loaded slot, the
# columns are bounded by the cache's own width.
SLOT_SCATTER = '''
@triton.jit
def _scatter_kernel(cache_ptr, cache_stride, x_ptr, x_stride, slot_ptr, num_tokens, width,
                    TOK: tl.constexpr, BLOCK: tl.constexpr):
    tids = tl.program_id(0) * TOK + tl.arange(0, TOK)
    cols = tl.arange(0, BLOCK)
    tok_ok = tids < num_tokens
    slot = tl.load(slot_ptr + tids, mask=tok_ok, other=0)
    vals = tl.load(x_ptr + tids[:, None] * x_stride + cols[None, :], mask=tok_ok[:, None])
    tl.store(cache_ptr + slot[:, None] * cache_stride + cols[None, :], vals,
             mask=tok_ok[:, None] & (cols[None, :] < width))


def scatter(cache, x, slots):
    num_tokens = x.shape[0]
    _scatter_kernel[(triton.cdiv(num_tokens, 16),)](
        cache, cache.stride(0), x, x.stride(0), slots, num_tokens, WIDTH,
        TOK=16, BLOCK=triton.next_power_of_2(cache.shape[1]),
    )
'''


def test_bound_on_a_read_index_and_a_loaded_slot_is_silent(tmp_path):
    assert _sc007(tmp_path, SLOT_SCATTER.replace("WIDTH", "cache.shape[1]")) == []


def test_the_column_bound_still_counts_when_it_is_another_tensors(tmp_path):
    # Same kernel, but the columns written are bounded by x's width: that bound reaches the address.
    lines = _sc007(tmp_path, SLOT_SCATTER.replace("WIDTH", "x.shape[1]"))
    assert len(lines) == 1


def test_the_model_says_which_bound_reaches_which_term():
    (store,) = _store_access(SLOT_SCATTER.replace("WIDTH", "cache.shape[1]"), "_scatter_kernel")
    assert store.mask_bounds == ("num_tokens", "width")
    assert store.reached_terms("num_tokens") == ()  # reaches the address only through `slot`
    reached = store.reached_terms("width")
    assert [store.terms[i].text for i in reached] == ["tl.arange(0, BLOCK)"]  # `cols`, as written
    assert store.covering_bounds(reached[0]) == ("width",)


# `pos = tids - starts`: the token bound reaches the written column, but that column is also
# bounded by the written pool's own width (a conjunct), which is what holds the store in the row.
POS_SCATTER = '''
@triton.jit
def _pos_kernel(pool_ptr, pool_stride, ids_ptr, start_ptr, row_ptr, num_tokens, pool_width,
                TOK: tl.constexpr):
    tids = tl.program_id(0) * TOK + tl.arange(0, TOK)
    tok_ok = tids < num_tokens
    starts = tl.load(start_ptr + tids, mask=tok_ok, other=0)
    rows = tl.load(row_ptr + tids, mask=tok_ok, other=0)
    pos = tids - starts
    ids = tl.load(ids_ptr + tids, mask=tok_ok, other=0)
    tl.store(pool_ptr + rows * pool_stride + pos, ids, mask=MASK)


def scatter_ids(pool, ids, starts, rows):
    num_tokens = ids.shape[0]
    _pos_kernel[(triton.cdiv(num_tokens, 64),)](
        pool, pool.stride(0), ids, starts, rows, num_tokens, pool.shape[1], TOK=64,
    )
'''


@pytest.mark.parametrize(
    "mask, fires",
    [
        ("tok_ok & (pos < pool_width)", False),  # the own-width conjunct holds the column
        ("tok_ok", True),  # nothing but the token count bounds the written column
        ("tok_ok | (pos < pool_width)", True),  # a disjunct bounds nothing
    ],
)
def test_own_width_conjunct_on_the_reached_term(tmp_path, mask, fires):
    assert bool(_sc007(tmp_path, POS_SCATTER.replace("MASK", mask))) is fires


# The written index bounded by another tensor's size, reaching the address through assignments
# or a helper: still a finding.
DIRECT = '''
@triton.jit
def _copy_kernel(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    vals = tl.load(x_ptr + row * x_stride + offs, mask=mask)
    tl.store(out_ptr + row * out_stride + offs, vals, mask=mask)


def copy_rows(out, x):
    n_rows, n_cols = x.shape
    _copy_kernel[(n_rows,)](out, out.stride(0), x, x.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))
'''

THROUGH_ASSIGNMENT = '''
@triton.jit
def _copy_kernel(out_ptr, out_stride, x_ptr, x_stride, n_cols, col0, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    shifted = cols + col0
    dst = out_ptr + row * out_stride
    dst = dst + shifted
    vals = tl.load(x_ptr + row * x_stride + cols, mask=mask)
    tl.store(dst, vals, mask=mask)


def copy_rows(out, x, col0):
    n_rows, n_cols = x.shape
    _copy_kernel[(n_rows,)](out, out.stride(0), x, x.stride(0), n_cols, col0, BLOCK=triton.next_power_of_2(n_cols))
'''

THROUGH_HELPER = '''
@triton.jit
def _row_ptrs(base, stride, row, idx):
    return base + row * stride + idx


@triton.jit
def _in_row(idx, n):
    return idx < n


@triton.jit
def _copy_kernel(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = _in_row(offs, n_cols)
    vals = tl.load(x_ptr + row * x_stride + offs, mask=mask)
    tl.store(_row_ptrs(out_ptr, out_stride, row, offs), vals, mask=mask)


def copy_rows(out, x):
    n_rows, n_cols = x.shape
    _copy_kernel[(n_rows,)](out, out.stride(0), x, x.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))
'''

# The bounded index is the sum of two parts that the address adds separately.
SPLIT_SUM = '''
@triton.jit
def _copy_kernel(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    start = tl.program_id(1) * BLOCK
    cols = tl.arange(0, BLOCK)
    idx = start + cols
    mask = idx < n_cols
    vals = tl.load(x_ptr + row * x_stride + idx, mask=mask)
    tl.store(out_ptr + row * out_stride + start + cols, vals, mask=mask)


def copy_rows(out, x):
    n_rows, n_cols = x.shape
    _copy_kernel[(n_rows, triton.cdiv(n_cols, 64))](out, out.stride(0), x, x.stride(0), n_cols, BLOCK=64)
'''


@pytest.mark.parametrize("src", [DIRECT, THROUGH_ASSIGNMENT, THROUGH_HELPER, SPLIT_SUM],
                         ids=["direct", "assignment", "helper", "split-sum"])
def test_bound_reaching_the_written_index_still_fires(tmp_path, src):
    assert len(_sc007(tmp_path, src)) == 1


def test_read_index_bound_only_is_silent_though_the_size_is_anothers(tmp_path):
    # The row read is bounded by x's row count; the row written is a loaded destination row.
    src = '''
    @triton.jit
    def _gather_kernel(out_ptr, out_stride, x_ptr, x_stride, dst_ptr, n_rows, D: tl.constexpr):
        r = tl.program_id(0) * 8 + tl.arange(0, 8)
        ok = r < n_rows
        dst = tl.load(dst_ptr + r, mask=ok, other=0)
        d = tl.arange(0, D)
        vals = tl.load(x_ptr + r[:, None] * x_stride + d[None, :], mask=ok[:, None])
        tl.store(out_ptr + dst[:, None] * out_stride + d[None, :], vals, mask=ok[:, None])


    def gather(out, x, dst):
        n_rows = x.shape[0]
        _gather_kernel[(triton.cdiv(n_rows, 8),)](out, out.stride(0), x, x.stride(0), dst, n_rows, D=x.shape[1])
    '''
    assert _sc007(tmp_path, src) == []
    # ...while the same bound on the written row fires.
    assert len(_sc007(tmp_path, src.replace("dst[:, None] * out_stride", "r[:, None] * out_stride"))) == 1


def test_program_id_alone_is_not_the_bounded_index(tmp_path):
    # `off = tid - start` is bounded; the address uses `tid`, not `off`: `start` (a loaded value)
    # is not part of the written address, so `off` never reaches it.
    src = '''
    @triton.jit
    def _k(out_ptr, start_ptr, table_ptr, width, D: tl.constexpr):
        tid = tl.program_id(0)
        start = tl.load(start_ptr + tid)
        off = tid - start
        ok = (off >= 0) & (off < width)
        blk = tl.load(table_ptr + off, mask=ok, other=0)
        d = tl.arange(0, D)
        tl.store(out_ptr + tid * D + d, blk + d, mask=ok)


    def run(out, starts, table):
        _k[(out.shape[0],)](out, starts, table, table.shape[0], D=out.shape[1])
    '''
    assert _sc007(tmp_path, src) == []


def test_pointer_advanced_in_a_loop_carries_the_loop_counter(tmp_path):
    # The mask bounds `cols + k * BLOCK`; the address never names `k`, the pointer is advanced
    # by BLOCK each iteration instead: the bound still reaches it.
    src = '''
    @triton.jit
    def _acc_kernel(y_ptr, y_stride, x_ptr, x_stride, K, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        y_ptrs = y_ptr + row * y_stride + cols
        x_ptrs = x_ptr + row * x_stride + cols
        for k in range(0, tl.cdiv(K, BLOCK)):
            m = (cols + k * BLOCK) < K
            tl.atomic_add(y_ptrs, tl.load(x_ptrs, mask=m), mask=m)
            y_ptrs += BLOCK
            x_ptrs += BLOCK


    def accumulate(y, x):
        n_rows, K = x.shape
        _acc_kernel[(n_rows,)](y, y.stride(0), x, x.stride(0), K, BLOCK=64)
    '''
    assert len(_sc007(tmp_path, src)) == 1
