"""The layouts, the poison and the gap bookkeeping of stridecheck.testing.layouts."""

import math

import pytest
import torch

from stridecheck.testing import invariant, layouts
from stridecheck.testing.layouts import (
    ALL_LAYOUTS,
    MIN_GUARD,
    ROW_PAD,
    STORAGE_OFFSET,
    constant_dims,
    contiguous_strides,
    guard_length,
    materialise,
    placement,
    poison_value,
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64,
          torch.int8, torch.uint8, torch.bool, torch.complex64]


def _values(shape, dtype):
    g = torch.Generator().manual_seed(0)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(0, 100, shape, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_poison_is_nan_minus_one_or_a_sentinel(dtype):
    value = poison_value(dtype)
    if dtype.is_floating_point or dtype.is_complex:
        assert math.isnan(value)
    elif dtype == torch.bool:
        assert value is True
    elif dtype == torch.uint8:
        assert value == 255
    else:
        assert value == -1  # no valid index; as an offset, one row back into a guard zone


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ("contiguous",) + ALL_LAYOUTS)
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4), (7,), (), (4, 1), (0, 3)], ids=str)
def test_materialised_view_holds_the_same_values_and_every_gap_is_poison(dtype, layout, shape):
    t = _values(shape, dtype)
    if layout == "expanded":
        t = t.narrow(0, 0, 1).expand(shape).clone() if len(shape) and shape[0] else t
    m = materialise(t, layout, constant_dims(t) if layout == "expanded" else ())
    if m is None:
        return _assert_not_applicable_only_where_documented(layout, shape)
    assert m.view.shape == t.shape and m.view.dtype == t.dtype
    assert torch.equal(m.view, t)
    gap = m.buffer[m.gap]
    # Two guard zones at least, and the gap is exactly the buffer minus the view's addresses.
    assert gap.numel() >= 2 * MIN_GUARD
    covered = m.buffer.numel() - gap.numel()
    if t.numel() and layout != "expanded":
        assert covered == t.numel()
    if dtype.is_floating_point or dtype.is_complex:
        assert bool(torch.isnan(gap).all())
    else:
        assert bool((gap == poison_value(dtype)).all())
    assert m.gap_writes() == (0, [])


def _assert_not_applicable_only_where_documented(layout, shape):
    nontrivial = sum(1 for s in shape if s > 1)
    if layout in ("padded_last", "padded_outer"):
        assert len(shape) < 2
    elif layout == "transposed":
        assert nontrivial < 2
    elif layout == "size_one_strides":
        assert 1 not in shape
    elif layout == "strided":
        assert nontrivial == 0
    elif layout == "expanded":
        pass  # no constant dimension: random values
    else:
        pytest.fail(f"{layout} must apply to every shape, not to {shape}")


def test_layouts_strides_and_offsets():
    t = torch.arange(24.0).reshape(2, 3, 4)
    assert materialise(t, "padded_last").view.stride() == (3 * (4 + ROW_PAD), 4 + ROW_PAD, 1)
    outer = materialise(t, "padded_outer").view
    assert outer.stride() == (4 * (2 * 4 + ROW_PAD), 2 * 4 + ROW_PAD, 1)
    # A view into a larger buffer: the outer strides are not the products of the inner sizes.
    assert outer.stride(0) != outer.shape[1] * outer.stride(1)
    off = materialise(t, "storage_offset")
    assert off.view.stride() == t.stride() and off.start - guard_length(t.numel()) == STORAGE_OFFSET
    assert materialise(t, "contiguous").start == guard_length(t.numel())
    tr = materialise(t, "transposed").view
    assert tr.stride() == (1, 2, 6) and tr.stride(-1) != 1
    assert materialise(t, "strided").view.stride() == (96, 16, 2)
    assert materialise(torch.arange(5.0), "strided").view.stride() == (2,)
    assert materialise(t, "expanded", constant_dims(t)) is None  # no constant dimension
    assert materialise(t, "size_one_strides") is None  # no dimension of size 1


@pytest.mark.parametrize(
    "shape,strides",
    [
        ((2, 8, 1, 16), (128, 16, 0, 1)),  # a decode step's q: (B, H, T=1, D)
        ((1, 5, 3), (0, 3, 1)),
        ((4, 1), (1, 0)),
        ((1, 1), (0, 0)),
    ],
    ids=str,
)
def test_size_one_strides_changes_only_the_strides_of_size_one_dimensions(shape, strides):
    t = torch.randn(shape)
    m = materialise(t, "size_one_strides")
    assert m.view.stride() == strides and torch.equal(m.view, t)
    assert m.view.is_contiguous()  # what a launcher's contiguity check sees: nothing to copy
    for size, st, contiguous in zip(shape, strides, contiguous_strides(shape)):
        assert st == (0 if size == 1 else contiguous)
    # The same addresses as the contiguous layout: only the unused strides differ.
    assert placement("size_one_strides", shape).region == placement("contiguous", shape).region


def test_expanded_gives_stride_zero_to_constant_and_size_one_dimensions():
    row = torch.randn(1, 6)
    t = row.expand(4, 6).clone()
    assert constant_dims(t) == (0,)
    m = materialise(t, "expanded", constant_dims(t))
    assert m.view.stride() == (0, 1) and torch.equal(m.view, t)
    s = torch.randn(1, 6)
    m1 = materialise(s, "expanded", constant_dims(s))
    assert m1.view.stride(0) == 0 and torch.equal(m1.view, s)


def test_constant_dims_treats_nan_as_equal():
    t = torch.full((3, 2), math.nan)
    assert constant_dims(t) == (0, 1)


@pytest.mark.parametrize("layout", ALL_LAYOUTS + ("contiguous",))
def test_a_write_into_any_gap_element_is_reported_with_its_position(layout):
    t = torch.randn(3, 1, 5).expand(3, 4, 5).clone()  # constant along dim 1, so expanded applies
    if layout == "size_one_strides":
        t = t[:, :1].clone()  # needs a dimension of size 1
    m = materialise(t, layout, constant_dims(t))
    gap_idx = torch.nonzero(m.gap).flatten().tolist()
    first, last = gap_idx[0], gap_idx[-1]
    end = m.start + sum((s - 1) * st for s, st in zip(m.view.shape, m.view.stride()))
    inner = [i for i in gap_idx if m.start < i < end]
    targets = [first, last] + inner[:1]
    for i in targets:
        m.buffer[i] = 1.5
    count, writes = m.gap_writes()
    assert count == len(targets) and [w[0] for w in writes] == sorted(targets)
    assert all(math.isnan(before) and after == 1.5 for _, before, after in writes)
    assert "before the view's first element" in m.describe_position(first)
    assert "after the view's last element" in m.describe_position(last)
    if layout in ("padded_last", "padded_outer", "strided"):
        assert "in a gap inside the view" in m.describe_position(inner[0])
    else:
        assert inner == []  # dense layouts have no gap between their first and last element


def test_a_write_of_the_same_bits_is_no_change_but_another_nan_payload_is():
    m = materialise(torch.randn(2, 3), "padded_last")
    i = int(torch.nonzero(m.gap)[0])
    m.buffer[i] = math.nan
    assert m.gap_writes() == (0, [])
    m.buffer.view(torch.int32)[i] = 0x7FC00001  # a NaN with another payload: a real write
    assert m.gap_writes()[0] == 1 and m.gap_writes()[1][0][0] == i


def test_writes_inside_the_view_are_not_gap_writes():
    m = materialise(torch.randn(3, 4), "padded_outer")
    m.view.fill_(7.0)
    assert m.gap_writes() == (0, [])


def test_unknown_layout_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown layout 'diagonal'.*padded_last"):
        materialise(torch.zeros(2, 2), "diagonal")


def test_gap_writes_counts_all_and_lists_the_first_ones():
    m = materialise(torch.randn(4, 5), "padded_last")
    m.buffer.fill_(0.0)  # every gap element written, the view's elements too
    count, first = m.gap_writes(limit=2)
    assert count == int(m.gap.sum()) and len(first) == 2 and first[0][0] == 0


def test_the_assertion_module_names_the_same_layouts_as_the_layouts_module():
    # invariant keeps its own copy of the names so that reading them imports no torch.
    assert invariant.DEFAULT_LAYOUTS == layouts.DEFAULT_LAYOUTS
    assert invariant.ALL_LAYOUTS == layouts.ALL_LAYOUTS
    assert invariant._NON_UNIT_INNER == layouts.NON_UNIT_INNER_LAYOUTS
    assert set(layouts.LAYOUT_DOCS) == {"contiguous", *ALL_LAYOUTS}
