"""Which layouts run by default, for which arguments, and what counts as a refusal.

By default every argument gets the unit-inner-stride layouts (padded_last, padded_outer,
storage_offset, size_one_strides) and the non-unit ones (transposed, strided); the non-unit ones
are fully checked for arguments the baseline left unchanged (read-only), and for an argument
the baseline wrote they only check that the writes reach the caller's tensor.
"""

import pytest
import torch

from stridecheck.guard import Tensor, stride_guard
from stridecheck.testing import DEFAULT_LAYOUTS, LayoutError, assert_layout_invariant
from tests.testing.kernels import (
    add_into,
    add_into_with_x_stride,
    guarded_scale_rows_dense_only,
    scale_rows,
    scale_rows_by_width,
    scale_rows_dense_only,
)

# --- size_one_strides -----------------------------------------------------------------------


def _rows_of_b_h_1_d(q):
    """Rows of a [B, H, 1, D] tensor flattened to [B * H, D] by stepping ``stride(2)`` per row
    after ``.contiguous()``: right while stride(2) == D, which a copy gives, but
    ``.contiguous()`` copies nothing when only the stride of a size-1 dimension is unusual
    (``is_contiguous()`` ignores it, as PyTorch leaves it arbitrary)."""
    q = q.contiguous()
    b, h, _, d = q.shape
    return torch.as_strided(q, (b * h, d), (q.stride(2), q.stride(3)), q.storage_offset()).clone()


def _rows_of_b_h_1_d_fixed(q):
    return q.reshape(q.shape[0] * q.shape[1], q.shape[3])


def test_size_one_strides_is_a_default_layout():
    assert "size_one_strides" in DEFAULT_LAYOUTS


def test_a_stride_read_from_a_size_one_dimension_fails_only_on_size_one_strides(randn):
    q = randn(2, 3, 1, 4)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_rows_of_b_h_1_d, q)
    assert info.value.report.failing_pairs == [("q", "size_one_strides")]
    (failure,) = info.value.report.failures
    assert failure.strides == (12, 4, 0, 1)
    assert "the contiguous baseline gave" in failure.detail and "q as size_one_strides gave" in failure.detail


def test_a_function_that_never_needs_a_size_one_stride_passes(randn):
    report = assert_layout_invariant(_rows_of_b_h_1_d_fixed, randn(2, 3, 1, 4))
    assert "size_one_strides" in [v.layout for v in report.passed]


# --- non-unit inner strides for read-only arguments ---------------------------------------


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_a_read_only_argument_read_as_dense_fails_by_default(randn, layout):
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(scale_rows_dense_only, randn(4, 6))
    assert ("x", layout) in info.value.report.failing_pairs


def test_a_kernel_that_honours_every_stride_passes_the_non_unit_layouts(randn):
    report = assert_layout_invariant(scale_rows, randn(4, 6))
    assert {"transposed", "strided"} <= {v.layout for v in report.passed}


def test_a_guard_refusal_is_declared_unsupported_not_a_failure(randn):
    report = assert_layout_invariant(guarded_scale_rows_dense_only, randn(4, 6))
    assert [(v.argument, v.layout) for v in report.unsupported] == [("x", "transposed"), ("x", "strided")]
    assert all(v.problems[0].startswith("refused by @stride_guard: StrideGuardError") for v in report.unsupported)
    assert "guarded_scale_rows_dense_only" in report.unsupported[0].detail
    assert not report.failures


@stride_guard(x="M N", writes=())
def guarded_width_bug(x):
    return scale_rows_by_width(x)


def test_the_error_lists_failures_and_the_declared_unsupported_layouts(randn):
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(guarded_width_bug, randn(4, 6))
    message = str(info.value)
    assert "x as padded_last" in message
    assert "declared unsupported, not failures:" in message and "x as transposed: refused by @stride_guard" in message


def _refuses_with(message):
    def fn(x):
        if x.stride(-1) != 1:
            raise ValueError(message)
        return x * 2

    return fn


@pytest.mark.parametrize(
    "message", ["x must be contiguous", "unsupported stride (1, 4)", "needs a row-major layout", "expected a dense tensor"]
)
def test_an_exception_naming_the_layout_before_any_write_is_a_refusal(message):
    report = assert_layout_invariant(_refuses_with(message), torch.randn(4, 6))
    assert [v.layout for v in report.unsupported] == ["transposed", "strided"]
    assert report.unsupported[0].problems == (f"refused before writing anything: ValueError: {message}",)


def test_an_exception_that_does_not_name_the_layout_is_a_failure():
    with pytest.raises(LayoutError, match="x as transposed raised ValueError: bad value"):
        assert_layout_invariant(_refuses_with("bad value"), torch.randn(4, 6))


def test_an_exception_after_a_write_is_a_failure_even_if_it_names_the_layout():
    def writes_then_refuses(out, x):
        out.fill_(1.0)
        if x.stride(-1) != 1:
            raise ValueError("x must be contiguous")
        return x * 2

    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(writes_then_refuses, torch.zeros(4, 6), torch.randn(4, 6))
    assert ("x", "transposed") in info.value.report.failing_pairs


# --- non-unit inner strides for written arguments: the writes must reach the caller ------


def test_a_written_argument_in_a_non_unit_layout_is_unsupported_when_its_writes_differ(randn):
    # add_into assumes unit inner stride for y (it writes y), and honours x's strides.
    report = assert_layout_invariant(add_into, randn(4, 6), randn(4, 6))
    unsupported = {(v.argument, v.layout): v for v in report.unsupported}
    assert set(unsupported) == {("y", "transposed"), ("y", "strided")}
    assert "y, which the function writes, has a non-unit inner stride here" in unsupported["y", "transposed"].problems[0]
    assert {("x", "transposed"), ("x", "strided")} <= {(v.argument, v.layout) for v in report.passed}
    assert not report.failures


def _zero_first_row(y):
    # The kernel it stands for needs a unit inner stride; the copy loses the caller's write.
    if y.stride(-1) != 1:
        y = y.contiguous()
    y[0] = 0
    return y.sum()


@pytest.mark.parametrize("layout", ["transposed", "strided"])
def test_writes_lost_to_a_copy_fail_by_default(layout):
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_zero_first_row, torch.randn(3, 4))
    failure = next(v for v in info.value.report.failures if v.layout == layout)
    assert failure.problems[0].startswith("the contiguous baseline modified argument y (first change at [0, 0]")
    assert failure.problems[0].endswith(f"y as {layout} left it unchanged")


def test_explicit_layouts_check_written_arguments_fully(randn):
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(add_into, randn(4, 6), randn(4, 6), layouts="transposed")
    assert info.value.report.failing_pairs == [("y", "transposed")]


def test_explicit_layouts_replace_the_defaults(randn):
    report = assert_layout_invariant(scale_rows, randn(4, 6), layouts=("storage_offset",))
    assert [v.layout for v in report.variants] == ["storage_offset"]


def test_a_written_argument_compares_its_state_after_the_call(randn):
    y, x = randn(4, 6), randn(4, 6)
    assert not assert_layout_invariant(add_into, y, x).failures
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(add_into_with_x_stride, y, x)
    pairs = info.value.report.failing_pairs
    # y padded, x dense: y's rows are written at x's stride; x padded: y written at the wrong stride.
    assert ("y", "padded_last") in pairs and ("x", "padded_last") in pairs


# --- @stride_guard contracts ------------------------------------------------------------------


@stride_guard(x=Tensor("M N", inner_stride=None))
def guarded_row_sums(x):
    return x.sum(dim=-1)


@stride_guard(x="M N")
def guarded_read_only(x):
    return x.sum(dim=-1)


def test_a_contract_that_declares_an_argument_read_only_adds_expanded():
    x = torch.randn(1, 6).expand(4, 6).clone()
    report = assert_layout_invariant(guarded_read_only, x)
    assert "expanded" in [v.layout for v in report.passed]
    assert [v.layout for v in report.unsupported] == ["transposed", "strided"]


def test_a_contract_that_opts_out_of_unit_inner_stride_runs_every_layout():
    x = torch.randn(1, 6).expand(4, 6).clone()
    report = assert_layout_invariant(guarded_row_sums, x)
    assert {v.layout for v in report.passed} == set(DEFAULT_LAYOUTS) - {"size_one_strides"} | {"expanded"}


def test_without_a_contract_expanded_does_not_run():
    report = assert_layout_invariant(lambda x: x.sum(-1), torch.randn(4, 6))
    assert "expanded" not in {v.layout for v in report.variants}


# --- an index read from a gap ----------------------------------------------------------------


def _store_rows_by_slot(values, slots, cache):
    """cache[slots[i]] = values[i], reading slots as dense (its stride ignored) and addressing
    cache's rows by raw offsets, as a kernel does: no bounds check."""
    dense_slots = torch.as_strided(slots, (slots.shape[0],), (1,), slots.storage_offset())
    for i, slot in enumerate(dense_slots.tolist()):
        row = torch.as_strided(cache, (cache.shape[1],), (cache.stride(1),), cache.storage_offset() + slot * cache.stride(0))
        row.copy_(values[i])


def test_an_index_read_from_a_gap_is_reported_as_a_stray_write_not_a_crash():
    # The signed integers' poison is -1: the row before the cache, inside its buffer's guard
    # zone, where the write is seen (an extreme value would address wild memory).
    values, cache = torch.randn(2, 5), torch.zeros(3, 5)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_store_rows_by_slot, values, torch.tensor([2, 0]), cache)
    strided = next(v for v in info.value.report.failures if (v.argument, v.layout) == ("slots", "strided"))
    assert "slots as strided wrote into the gap of cache's buffer: element 5 element(s) before the view's first element" in strided.detail
