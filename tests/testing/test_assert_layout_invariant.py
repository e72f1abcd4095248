"""assert_layout_invariant on real Triton kernels (CPU interpreter) and on plain torch functions."""

import ctypes
import os

import pytest
import torch
import triton
import triton.language as tl

from stridecheck.testing.layouts import constant_dims, materialise
from stridecheck.guard import Tensor, stride_guard
from stridecheck.testing import DEFAULT_LAYOUTS, LayoutError, assert_layout_invariant

# Kernels run compiled on a GPU where there is one, else on the CPU through the interpreter
# (tests/conftest.py sets TRITON_INTERPRET=1 when there is no CUDA driver).
DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"

# --- kernels -------------------------------------------------------------------------------


@triton.jit
def _scale_rows_kernel(out_ptr, out_stride_0, x_ptr, x_stride_0, n_cols, BLOCK: tl.constexpr):
    # out, x: [n_rows, n_cols], unit inner stride
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride_0 + cols, mask=mask)
    tl.store(out_ptr + row * out_stride_0 + cols, x * 2, mask=mask)


def scale_rows(x):
    """Correct for every layout with unit inner stride: rows stepped by x.stride(0)."""
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    _scale_rows_kernel[(n_rows,)](out, out.stride(0), x, x.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out


def scale_rows_by_width(x):
    """Rows stepped by the width: right only for contiguous x (the founding bug's shape)."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = x.shape
    _scale_rows_kernel[(n_rows,)](out, out.stride(0), x, n_cols, n_cols, BLOCK=triton.next_power_of_2(n_cols))  # stridecheck: ignore[SC004] (buggy on purpose)
    return out


@triton.jit
def _add_into_kernel(y_ptr, y_stride_0, x_ptr, x_stride_0, n_cols, BLOCK: tl.constexpr):
    # y += x, y and x: [n_rows, n_cols]
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride_0 + cols, mask=mask)
    y = tl.load(y_ptr + row * y_stride_0 + cols, mask=mask)
    tl.store(y_ptr + row * y_stride_0 + cols, y + x, mask=mask)


def add_into(y, x):
    """In place: y += x; returns nothing."""
    _add_into_kernel[(y.shape[0],)](y, y.stride(0), x, x.stride(0), y.shape[1], BLOCK=triton.next_power_of_2(y.shape[1]))


def add_into_with_x_stride(y, x):
    """In place, but y is addressed with x's row stride (SC005's shape)."""
    _add_into_kernel[(y.shape[0],)](y, x.stride(0), x, x.stride(0), y.shape[1], BLOCK=triton.next_power_of_2(y.shape[1]))  # stridecheck: ignore[SC005] (buggy on purpose)


@triton.jit
def _fill_rows_kernel(out_ptr, out_stride_0, value, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + row * out_stride_0 + cols, value, mask=cols <= n_cols)  # one column too many


def fill_rows_off_by_one(out, value):
    _fill_rows_kernel[(out.shape[0],)](out, out.stride(0), value, out.shape[1], BLOCK=triton.next_power_of_2(out.shape[1] + 1))


# --- the assertions on kernels --------------------------------------------------------------


def test_a_correct_kernel_passes_every_default_layout_of_every_argument():
    x = torch.randn(5, 7, device=DEVICE)
    report = assert_layout_invariant(scale_rows, x)
    assert [(v.argument, v.layout) for v in report.passed] == [("x", name) for name in DEFAULT_LAYOUTS]
    assert report.failures == []


def test_a_kernel_stepping_rows_by_the_width_fails_on_padded_rows_with_the_first_differing_index():
    x = torch.randn(5, 7, device=DEVICE)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(scale_rows_by_width, x)
    report = info.value.report
    assert ("x", "padded_last") in report.failing_pairs and ("x", "padded_outer") in report.failing_pairs
    assert ("x", "storage_offset") not in report.failing_pairs  # dense: width == stride there
    padded = next(v for v in report.failures if v.layout == "padded_last")
    # Row 0 is right; row 1 starts ROW_PAD elements early, so [1, 0] is the first wrong element.
    assert "return value differs at [1, 0]" in padded.detail
    assert f"expected {2 * x[1, 0].item()!r}" in padded.detail
    message = str(info.value)
    assert "x as padded_last" in message and "x as padded_outer" in message


def test_the_callers_tensors_are_never_modified():
    y, x = torch.randn(4, 6, device=DEVICE), torch.randn(4, 6, device=DEVICE)
    y0, x0 = y.clone(), x.clone()
    assert_layout_invariant(add_into, y, x)
    assert torch.equal(y, y0) and torch.equal(x, x0)


def test_a_mutated_argument_is_compared_with_the_baselines_after_state():
    y, x = torch.randn(4, 6, device=DEVICE), torch.randn(4, 6, device=DEVICE)
    assert_layout_invariant(add_into, y, x)  # correct in-place kernel: y compared, equal
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(add_into_with_x_stride, y, x)
    pairs = info.value.report.failing_pairs
    # y padded, x dense: y's rows are written at x's stride; x padded: y written at the wrong stride.
    assert ("y", "padded_last") in pairs and ("x", "padded_last") in pairs
    detail = next(v for v in info.value.report.failures if v.argument == "y" and v.layout == "padded_last").detail
    assert "argument y after the call differs at [1, " in detail


def test_a_write_past_the_row_is_a_gap_write_even_in_the_contiguous_baseline():
    out = torch.zeros(3, 8, device=DEVICE)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(fill_rows_off_by_one, out, 1.0)
    report = info.value.report
    # The last row's extra element lands in the guard zone after the baseline's buffer.
    baseline = next(v for v in report.failures if v.layout == "contiguous")
    assert "gap of out (contiguous baseline) written" in baseline.detail
    assert "1 element(s) after the view's last element" in baseline.detail
    padded = next(v for v in report.failures if v.layout == "padded_last")
    assert "gap of out (padded_last) written" in padded.detail and "from poison nan to 1.0" in padded.detail


def test_transposed_on_request_fails_a_kernel_that_assumes_unit_inner_stride():
    x = torch.randn(4, 6, device=DEVICE)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(scale_rows, x, layouts="transposed")
    assert info.value.report.failing_pairs == [("x", "transposed")]


# --- @stride_guard: refused layouts are declared, contracts add layouts ----------------------


@stride_guard(x="M N")
def guarded_scale_rows(x):
    return scale_rows(x)


def test_a_layout_the_guard_refuses_is_listed_as_unsupported_not_failed():
    x = torch.randn(4, 6, device=DEVICE)
    report = assert_layout_invariant(guarded_scale_rows, x, layouts=("padded_last", "transposed"))
    assert [(v.argument, v.layout) for v in report.unsupported] == [("x", "transposed")]
    assert "guarded_scale_rows" in report.unsupported[0].detail
    assert [(v.argument, v.layout) for v in report.passed] == [("x", "padded_last")]


@stride_guard(x="M N", writes=())
def guarded_width_bug(x):
    return scale_rows_by_width(x)


def test_the_error_lists_failures_and_the_declared_unsupported_layouts():
    x = torch.randn(4, 6, device=DEVICE)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(guarded_width_bug, x, layouts=("padded_last", "transposed"))
    message = str(info.value)
    assert "x as padded_last" in message
    assert "declared unsupported" in message and "x as transposed" in message


def _row_sums(x):
    # Any layout: reads through torch, which honours strides.
    return x.sum(dim=-1)


@stride_guard(x=Tensor("M N", inner_stride=None))
def guarded_row_sums(x):
    return _row_sums(x)


def test_a_contract_that_opts_out_of_unit_inner_stride_adds_the_extra_layouts():
    x = torch.randn(1, 6).expand(4, 6).clone()
    report = assert_layout_invariant(guarded_row_sums, x, atol=1e-6, rtol=1e-6)
    assert {v.layout for v in report.passed} == set(DEFAULT_LAYOUTS) | {"transposed", "strided", "expanded"}
    expanded = materialise(x, "expanded", constant_dims(x)).view
    assert expanded.stride() == (0, 1)  # what the expanded run handed the guard, which accepted it


@stride_guard(x="M N")
def guarded_read_only(x):
    return x.sum(dim=-1)


def test_a_read_only_argument_of_a_contract_gets_the_expanded_layout():
    x = torch.randn(1, 6).expand(4, 6).clone()
    report = assert_layout_invariant(guarded_read_only, x, atol=1e-6, rtol=1e-6)
    assert {v.layout for v in report.variants} == set(DEFAULT_LAYOUTS) | {"expanded"}
    assert "expanded" in {v.layout for v in report.passed}


def test_a_strided_argument_fails_a_kernel_that_assumes_unit_inner_stride():
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(scale_rows, torch.randn(4, 6, device=DEVICE), layouts="strided")
    assert info.value.report.failing_pairs == [("x", "strided")]


def test_without_a_contract_only_the_default_layouts_run():
    report = assert_layout_invariant(_row_sums, torch.randn(4, 6), atol=1e-6, rtol=1e-6)
    assert {v.layout for v in report.variants} == set(DEFAULT_LAYOUTS)


# --- plain torch functions: the mechanics ----------------------------------------------------


def _write_past_the_end(x):
    # A stray write one element past the view's last element, through a raw strided view.
    last = x.storage_offset() + sum((s - 1) * st for s, st in zip(x.shape, x.stride()))
    torch.as_strided(x, (1,), (1,), last + 1).fill_(0.0)
    return x.sum()


def test_a_stray_write_outside_the_view_is_reported_for_every_layout():
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_write_past_the_end, torch.randn(3, 4, device=DEVICE))
    report = info.value.report
    assert {layout for _, layout in report.failing_pairs} == {"contiguous"} | set(DEFAULT_LAYOUTS)
    for v in report.failures:
        assert "gap of x" in v.detail and "changed from poison nan to 0.0" in v.detail


def _read_rows_by_width(x):
    n, m = x.shape
    return torch.as_strided(x, (n, m), (m, 1), x.storage_offset()).clone()


@pytest.mark.parametrize("dtype,poison", [(torch.int32, -(2**31)), (torch.uint8, 255), (torch.bool, True)])
def test_stray_reads_of_integer_and_bool_gaps_show_the_sentinel(dtype, poison):
    x = torch.zeros(3, 4, dtype=dtype, device=DEVICE)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_read_rows_by_width, x, layouts="padded_last")
    assert f"got {poison!r}" in info.value.report.failures[0].detail


def test_nested_and_keyword_tensor_arguments_are_named_and_re_laid_out():
    def f(pair, *, scale):
        a, b = pair
        return _read_rows_by_width(a) + b * scale

    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(f, (torch.randn(3, 4), torch.randn(3, 4)), scale=torch.randn(3, 4))
    assert {arg for arg, _ in info.value.report.failing_pairs} == {"pair[0]"}
    report = assert_layout_invariant(lambda pair, *, scale: pair[1] * scale, (torch.randn(3, 4), torch.randn(3, 4)), scale=torch.randn(3, 4))
    assert {v.argument for v in report.variants} == {"pair[0]", "pair[1]", "scale"}


def test_non_tensor_return_values_are_compared_too():
    def shape_dependent(x):
        return x.is_contiguous()

    with pytest.raises(LayoutError, match="return value: expected True, got False"):
        assert_layout_invariant(shape_dependent, torch.randn(3, 4), layouts="padded_last")


def test_an_exception_on_a_layout_is_a_failure_and_on_the_baseline_is_raised():
    def picky(x):
        if not x.is_contiguous():
            raise RuntimeError("needs contiguous")
        return x

    with pytest.raises(LayoutError, match="raised RuntimeError: needs contiguous"):
        assert_layout_invariant(picky, torch.randn(3, 4))

    def broken(x):
        raise KeyError("always")

    with pytest.raises(KeyError):
        assert_layout_invariant(broken, torch.randn(3, 4))


def test_the_random_number_generator_is_restored_before_every_run():
    def noisy(x):
        return x + torch.randn(x.shape, device=x.device)

    report = assert_layout_invariant(noisy, torch.zeros(3, 4, device=DEVICE))
    assert len(report.passed) == 3


def test_tolerances_apply_to_outputs():
    def wobble(x):
        return x + (1e-7 if x.is_contiguous() else 0.0)

    with pytest.raises(LayoutError):
        assert_layout_invariant(wobble, torch.ones(3, 4), layouts="padded_last")
    assert_layout_invariant(wobble, torch.ones(3, 4), layouts="padded_last", atol=1e-6)


def test_expanded_is_skipped_for_an_argument_the_function_writes():
    def zero_(x):
        x.zero_()

    x = torch.ones(1, 5)
    report = assert_layout_invariant(zero_, x, layouts=("expanded", "storage_offset"))
    skipped = {v.layout: v.detail for v in report.not_applicable}
    assert "writes this argument" in skipped["expanded"]
    assert [v.layout for v in report.passed] == ["storage_offset"]


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="no tensor argument"):
        assert_layout_invariant(lambda n: n, 3)
    with pytest.raises(ValueError, match="unknown layout.*'diagonal'"):
        assert_layout_invariant(_row_sums, torch.zeros(2, 2), layouts=("diagonal",))
    with pytest.raises(TypeError, match="do not fit"):
        assert_layout_invariant(_row_sums, torch.zeros(2, 2), torch.zeros(2))
    with pytest.raises(ValueError, match="isolate"):
        assert_layout_invariant(_row_sums, torch.zeros(2, 2), isolate="thread")


# --- isolate=True ----------------------------------------------------------------------------


def _crash_unless_contiguous(x):
    if not x.is_contiguous():
        ctypes.string_at(0)  # a read of address 0: the process dies with SIGSEGV
    return x * 2


@pytest.mark.skipif(os.name != "posix", reason="fork and signals are POSIX")
def test_isolate_reports_a_variant_that_kills_its_process():
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_crash_unless_contiguous, torch.randn(3, 4), isolate=True)
    report = info.value.report
    assert set(report.failing_pairs) == {("x", "padded_last"), ("x", "padded_outer")}
    assert all("died: signal 11 (SIGSEGV)" in v.detail for v in report.failures)
    assert [v.layout for v in report.passed] == ["storage_offset"]


def test_isolated_runs_report_the_same_findings_as_in_process_runs():
    # On CUDA tensors isolate=True spawns (a forked child cannot use CUDA): the function is
    # pickled by reference and its kernel compiled afresh in the child.
    x = torch.randn(5, 7, device=DEVICE)
    with pytest.raises(LayoutError) as here:
        assert_layout_invariant(scale_rows_by_width, x)
    with pytest.raises(LayoutError) as there:
        assert_layout_invariant(scale_rows_by_width, x, isolate=True)
    assert here.value.report.variants == there.value.report.variants


def test_isolate_spawn_runs_an_importable_function_in_a_fresh_interpreter():
    report = assert_layout_invariant(torch.neg, torch.randn(3, 4), isolate="spawn")
    assert len(report.passed) == 3


def test_outputs_inside_dataclasses_and_numpy_arrays_are_compared_element_by_element():
    import dataclasses

    @dataclasses.dataclass
    class Stats:
        rows: torch.Tensor
        first: object

    def stats(x):
        return Stats(rows=_read_rows_by_width(x), first=x[:, 0].numpy().copy())

    report = assert_layout_invariant(
        lambda x: Stats(rows=x.sum(-1), first=x[:, 0].numpy().copy()), torch.randn(3, 4), atol=1e-6, rtol=1e-6
    )
    assert len(report.passed) == 3
    with pytest.raises(LayoutError, match=r"return value\.rows differs at \[1, 0\]"):
        assert_layout_invariant(stats, torch.randn(3, 4), layouts="padded_last")


ISOLATE_AFTER_OPENMP = """
import torch
from stridecheck.testing import assert_layout_invariant
torch.randn(1 << 20).mul(2).sum()  # the parent's OpenMP worker threads are up
report = assert_layout_invariant(lambda x: x * 2, torch.randn(512, 257), isolate=True)
print(len(report.passed))
"""


@pytest.mark.skipif(os.name != "posix", reason="fork and process groups are POSIX")
def test_isolate_does_not_hang_when_the_parent_used_openmp():
    # Regression: a forked child's first parallel torch op waited forever for OpenMP workers
    # that only exist in the parent. Run apart, in its own process group, to kill it on a hang.
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c", ISOLATE_AFTER_OPENMP],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("isolate=True hung after the parent had used OpenMP")
    assert proc.returncode == 0, err
    assert out.split() == ["3"]
