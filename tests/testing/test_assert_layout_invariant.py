"""assert_layout_invariant's mechanics: the baseline, the caller's tensors, arguments and
return values of every shape, exceptions, the random number generator, bad input, isolate=True."""

import ctypes
import os

import pytest
import torch

from stridecheck.testing import LayoutError, assert_layout_invariant
from tests.testing.kernels import add_into, fill_rows_off_by_one, scale_rows, scale_rows_by_width


def test_a_correct_kernel_passes_every_applicable_default_layout(randn):
    report = assert_layout_invariant(scale_rows, randn(5, 7))
    assert [v.layout for v in report.passed] == ["padded_last", "padded_outer", "storage_offset", "transposed", "strided"]
    assert [v.layout for v in report.not_applicable] == ["size_one_strides"]  # no dimension of size 1


def test_a_kernel_stepping_rows_by_the_width_fails_on_padded_rows(randn):
    x = randn(5, 7)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(scale_rows_by_width, x)
    pairs = info.value.report.failing_pairs
    assert ("x", "padded_last") in pairs and ("x", "padded_outer") in pairs
    assert ("x", "storage_offset") not in pairs  # dense: width == stride there
    padded = next(v for v in info.value.report.failures if v.layout == "padded_last")
    # Row 0 is right; row 1 starts ROW_PAD elements early, so [1, 0] is the first wrong element.
    assert padded.problems[0].startswith("return value differs at [1, 0]")
    assert padded.strides == (10, 1)


def test_the_callers_tensors_are_never_modified(randn):
    y, x = randn(4, 6), randn(4, 6)
    y0, x0 = y.clone(), x.clone()
    assert_layout_invariant(add_into, y, x)
    assert torch.equal(y, y0) and torch.equal(x, x0)


def test_a_write_past_the_row_is_a_gap_write_even_in_the_contiguous_baseline(device):
    out = torch.zeros(3, 8, device=device)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(fill_rows_off_by_one, out, 1.0)
    report = info.value.report
    # The last row's extra element lands in the guard zone after the baseline's buffer.
    baseline = next(v for v in report.failures if v.layout == "contiguous")
    assert "the contiguous baseline wrote into the gap of out's buffer" in baseline.detail
    assert "1 element(s) after the view's last element" in baseline.detail
    padded = next(v for v in report.failures if v.layout == "padded_last")
    assert "out as padded_last wrote into the gap of out's buffer" in padded.detail
    assert "from poison nan to 1.0" in padded.detail


# --- plain torch functions: the mechanics ----------------------------------------------------


def _write_past_the_end(x):
    # A stray write one element past the view's last element, through a raw strided view.
    last = x.storage_offset() + sum((s - 1) * st for s, st in zip(x.shape, x.stride()))
    torch.as_strided(x, (1,), (1,), last + 1).fill_(0.0)
    return x.sum()


def test_a_stray_write_outside_the_view_is_reported_for_every_layout(randn):
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_write_past_the_end, randn(3, 4))
    report = info.value.report
    assert {layout for _, layout in report.failing_pairs} == {"contiguous"} | {v.layout for v in report.variants if v.status != "not_applicable"}
    for v in report.failures:
        assert "gap of x's buffer" in v.detail and "changed from poison nan to 0.0" in v.detail


def _read_rows_by_width(x):
    n, m = x.shape
    return torch.as_strided(x, (n, m), (m, 1), x.storage_offset()).clone()


@pytest.mark.parametrize("dtype,poison", [(torch.int32, -1), (torch.uint8, 255), (torch.bool, True)])
def test_stray_reads_of_integer_and_bool_gaps_show_the_sentinel(dtype, poison, device):
    x = torch.zeros(3, 4, dtype=dtype, device=device)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(_read_rows_by_width, x, layouts="padded_last")
    assert f"x as padded_last gave {poison!r}" in info.value.report.failures[0].detail


def test_nested_and_keyword_tensor_arguments_are_named_and_re_laid_out():
    def f(pair, *, scale):
        a, b = pair
        return _read_rows_by_width(a) + b * scale

    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(f, (torch.randn(3, 4), torch.randn(3, 4)), scale=torch.randn(3, 4))
    assert {arg for arg, _ in info.value.report.failing_pairs} == {"pair[0]"}
    report = assert_layout_invariant(
        lambda pair, *, scale: pair[1] * scale, (torch.randn(3, 4), torch.randn(3, 4)), scale=torch.randn(3, 4)
    )
    assert {v.argument for v in report.variants} == {"pair[0]", "pair[1]", "scale"}


def test_non_tensor_return_values_are_compared_too():
    def shape_dependent(x):
        return x.is_contiguous()

    with pytest.raises(LayoutError, match="return value: the contiguous baseline gave True, x as padded_last gave False"):
        assert_layout_invariant(shape_dependent, torch.randn(3, 4), layouts="padded_last")


def test_an_exception_on_a_layout_is_a_failure_and_on_the_baseline_is_raised():
    def picky(x):
        if not x.is_contiguous():
            raise RuntimeError("cannot cope")
        return x

    with pytest.raises(LayoutError, match="x as padded_last raised RuntimeError: cannot cope"):
        assert_layout_invariant(picky, torch.randn(3, 4))

    def broken(x):
        raise KeyError("always")

    with pytest.raises(KeyError):
        assert_layout_invariant(broken, torch.randn(3, 4))


def test_the_random_number_generator_is_restored_before_every_run(device):
    def noisy(x):
        return x + torch.randn(x.shape, device=x.device)

    report = assert_layout_invariant(noisy, torch.zeros(3, 4, device=device), exact=True)
    assert len(report.passed) == 5 and not report.failures


def test_expanded_is_skipped_for_an_argument_the_function_writes():
    def zero_(x):
        x.zero_()

    x = torch.ones(1, 5)
    report = assert_layout_invariant(zero_, x, layouts=("expanded", "storage_offset"))
    skipped = {v.layout: v.detail for v in report.not_applicable}
    assert "writes this argument" in skipped["expanded"]
    assert [v.layout for v in report.passed] == ["storage_offset"]


def _row_sums(x):
    return x.sum(dim=-1)


@pytest.mark.parametrize(
    "fn,args,keywords,error,message",
    [
        (lambda n: n, (3,), {}, ValueError, "no tensor argument"),
        (_row_sums, (torch.zeros(2, 2),), {"layouts": ("diagonal",)}, ValueError, "unknown layout.*'diagonal'"),
        (_row_sums, (torch.zeros(2, 2), torch.zeros(2)), {}, TypeError, "do not fit _row_sums"),
        (_row_sums, (torch.zeros(2, 2),), {"isolate": "thread"}, ValueError, "isolate"),
        (_row_sums, (torch.zeros(2, 2),), {"reference": "torch.sum"}, TypeError, "reference must be a callable"),
        (_row_sums, (torch.zeros(2, 2),), {"atol": -1.0}, ValueError, "atol must be"),
        (_row_sums, (torch.zeros(2, 2),), {"exact": True, "atol": 1e-6}, ValueError, "exact=True"),
    ],
    ids=["no-tensor", "unknown-layout", "signature", "isolate", "reference", "negative-atol", "exact-with-atol"],
)
def test_bad_input_is_a_clear_error(fn, args, keywords, error, message):
    with pytest.raises(error, match=message):
        assert_layout_invariant(fn, *args, **keywords)


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
    assert set(report.failing_pairs) == {("x", "padded_last"), ("x", "padded_outer"), ("x", "transposed"), ("x", "strided")}
    assert all("died: signal 11 (SIGSEGV)" in v.detail for v in report.failures)
    assert [v.layout for v in report.passed] == ["storage_offset"]


def test_isolated_runs_report_the_same_findings_as_in_process_runs(randn):
    # On CUDA tensors isolate=True spawns (a forked child cannot use CUDA): the function is
    # pickled by reference and its kernel compiled afresh in the child.
    x = randn(5, 7)
    with pytest.raises(LayoutError) as here:
        assert_layout_invariant(scale_rows_by_width, x)
    with pytest.raises(LayoutError) as there:
        assert_layout_invariant(scale_rows_by_width, x, isolate=True)
    assert here.value.report.variants == there.value.report.variants


def test_isolate_spawn_runs_an_importable_function_in_a_fresh_interpreter():
    # One layout: each spawned variant starts an interpreter and imports torch.
    report = assert_layout_invariant(torch.neg, torch.randn(3, 4), layouts="padded_last", isolate="spawn")
    assert [v.layout for v in report.passed] == ["padded_last"]


def test_outputs_inside_dataclasses_and_numpy_arrays_are_compared_element_by_element():
    import dataclasses

    @dataclasses.dataclass
    class Stats:
        rows: torch.Tensor
        first: object

    def stats(x):
        return Stats(rows=_read_rows_by_width(x), first=x[:, 0].numpy().copy())

    report = assert_layout_invariant(lambda x: Stats(rows=x.sum(-1), first=x[:, 0].numpy().copy()), torch.randn(3, 4))
    assert len(report.passed) == 5
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
    assert out.split() == ["5"]
