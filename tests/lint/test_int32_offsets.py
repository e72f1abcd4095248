"""SC006 reports only products that can pass 2**31 - 1, once per (kernel, pointer, index), with
the size at which they wrap (issue 17). The rule is opt-in: selected here as a user selects it."""

from __future__ import annotations

import textwrap

import pytest

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"


def sc006(findings):
    return [f for f in findings if f.code == "SC006"]


@pytest.fixture
def lint_files(lint_files):
    """SC006 is opt-in (see its rule text): these tests select it, as a user does."""
    return lambda files, **kw: lint_files(files, select=("SC", "SC006"), **kw)


def lines(src: str, needle: str) -> list[int]:
    return [i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if needle in line]


ROWS = HEADER + """
@triton.jit
def _copy(src_ptr, dst_ptr, src_stride, dst_stride, n_cols, BLOCK: tl.constexpr):
    row = ROW
    cols = tl.arange(0, BLOCK)
    x = tl.load(src_ptr + row * src_stride + cols, mask=cols < n_cols)
    tl.store(dst_ptr + row * dst_stride + cols, x, mask=cols < n_cols)
"""


@pytest.mark.parametrize(
    "row, reported",
    [
        ("tl.program_id(0)", True),
        ("tl.program_id(0).to(tl.int64)", False),
        ("tl.program_id(0).cast(tl.int64)", False),  # the real fix of a shipped bug
        ("tl.cast(tl.program_id(0), tl.int64)", False),
        ("tl.load(src_ptr).to(tl.int64)", False),
    ],
)
def test_a_row_index_times_a_row_stride_in_32_bits(lint_files, row, reported):
    src = ROWS.replace("ROW", row)
    found = sc006(lint_files({"m.py": src}))
    assert bool(found) is reported
    if reported:
        # One finding per (kernel, pointer, index): the two pointers are two.
        assert sorted(f.span.line for f in found) == lines(src, "row * ")


def test_the_stride_annotated_int64_makes_the_product_64_bit(lint_files):
    src = ROWS.replace("ROW", "tl.program_id(0)").replace("src_stride, dst_stride,", "src_stride: tl.int64, dst_stride: tl.int64,")
    assert sc006(lint_files({"m.py": src})) == []


def test_a_constexpr_size_counts_like_any_other(lint_files):
    src = HEADER + """
@triton.jit
def _gather(x_ptr, out_ptr, idx_ptr, NUM_COLUMNS: tl.constexpr, BLOCK: tl.constexpr):
    src = tl.load(idx_ptr + tl.program_id(0))
    offs = tl.arange(0, BLOCK)
    mask = offs < NUM_COLUMNS
    tl.store(out_ptr + tl.program_id(0).to(tl.int64) * NUM_COLUMNS + offs,
             tl.load(x_ptr + src * NUM_COLUMNS + offs, mask=mask), mask=mask)
"""
    (f,) = sc006(lint_files({"m.py": src}))
    assert f.span.line == lines(src, "src * NUM_COLUMNS")[0]
    assert "a loaded value" in f.message and "524,288" in f.message and ".to(tl.int64)" in f.message


def test_products_bounded_by_one_row_or_tile_are_silent(lint_files):
    src = HEADER + """
@triton.jit
def _mm(A, C, M, K, stride_am, stride_ak, stride_cm, BM: tl.constexpr, BK: tl.constexpr):
    rm = (tl.program_id(0) * BM + tl.arange(0, BM)).to(tl.int64)
    rk = tl.program_id(1) * BK + tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * stride_am + rk[None, :] * stride_ak, mask=(rm[:, None] < M) & (rk[None, :] < K))
    tl.store(C + rm * stride_cm, tl.sum(a, axis=1), mask=rm < M)
"""
    # rk is a column index (the second dimension its address names): bounded by one row.
    assert sc006(lint_files({"m.py": src})) == []


def test_a_vector_addressed_by_its_row_alone_is_silent(lint_files):
    src = HEADER + """
@triton.jit
def _scale(x_ptr, s_ptr, x_stride, s_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    s = tl.load(s_ptr + row * s_stride)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row.to(tl.int64) * x_stride + cols, mask=cols < n_cols)
    tl.store(x_ptr + row.to(tl.int64) * x_stride + cols, x * s, mask=cols < n_cols)
"""
    # `s` [rows]: its row index times its stride stays below its element count.
    assert sc006(lint_files({"m.py": src})) == []


def test_a_repeated_product_is_one_finding_with_related_locations(lint_files):
    src = HEADER + """
@triton.jit
def _twice(x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + row * x_stride + cols, mask=cols < n_cols)
    b = tl.load(x_ptr + row * x_stride + cols + 1, mask=cols + 1 < n_cols)
    tl.store(x_ptr + row * x_stride + cols, a + b, mask=cols < n_cols)
"""
    (f,) = sc006(lint_files({"m.py": src}))
    rows = lines(src, "row * x_stride")
    assert f.span.line == rows[0]
    assert sorted(r.span.line for r in f.related) == rows[1:]
