"""Our own reproduction of each bug kind the layout tests exist to find (issue 22's five, found
in real libraries), found with the default layouts, confirmed by a reference; and each bug's
fixed twin passing the same defaults (no failure on correct code).

The kernels are in tests/testing/kernels.py.
"""

from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from stridecheck.testing import LayoutError, assert_layout_invariant
from tests.testing import kernels


@dataclass(frozen=True)
class BugKind:
    buggy: Callable
    fixed: Callable
    reference: Callable
    inputs: Callable  # randn -> args
    # (argument, layout) pairs that must fail, and what the reference says of each.
    expected: dict


def _rows_and_targets(randn):
    logits = randn(4, 10)
    target = torch.tensor([3, -100, 0, 9], device=logits.device)  # row 1 is ignored
    return logits, target


BUG_KINDS = {
    # Rows stepped by a size-1 dimension's stride: the contiguous baseline itself is wrong, a
    # padded q (copied by the launcher) is right, a size-1 stride of 0 is wrong another way.
    "row-stride-from-size-1-dim": BugKind(
        kernels.scale_heads,
        kernels.scale_heads_fixed,
        kernels.scale_heads_reference,
        lambda randn: (randn(2, 3, 1, 4), randn(1, 4)),
        {("q", "padded_last"): "layout", ("q", "size_one_strides"): "neither"},
    ),
    # Ignored rows of the caller's logits zeroed only where their inner stride is 1; the
    # reference writes nothing, so the run that left the logits alone is the right one.
    "layout-dependent-in-place-write": BugKind(
        kernels.row_loss,
        kernels.row_loss_fixed,
        kernels.row_loss_reference,
        _rows_and_targets,
        {("logits", "transposed"): "layout", ("logits", "strided"): "layout"},
    ),
    # One flat index for every tensor: padded rows read the poison (NaN).
    "strides-ignored-entirely": BugKind(
        kernels.mul_flat,
        kernels.mul_flat_fixed,
        torch.mul,
        lambda randn: (randn(4, 6), randn(4, 6)),
        {("a", "padded_last"): "baseline", ("b", "padded_last"): "baseline", ("a", "transposed"): "baseline"},
    ),
    # A top-1 reduction reading its input as dense rows.
    "reduction-ignores-input-strides": BugKind(
        kernels.row_top1,
        kernels.row_top1_fixed,
        kernels.row_top1_reference,
        lambda randn: (randn(5, 9),),
        {("x", "padded_last"): "baseline", ("x", "padded_outer"): "baseline", ("x", "transposed"): "baseline"},
    ),
    # A 1-D index read as dense: only a non-unit inner stride (strided) shows it.
    "index-stride-ignored": BugKind(
        kernels.gather_rows,
        kernels.gather_rows_fixed,
        kernels.gather_rows_reference,
        lambda randn: (randn(6, 5), torch.tensor([4, 0, 5, 2], device=kernels.DEVICE)),
        {("index", "strided"): "baseline"},
    ),
}


@pytest.fixture(params=list(BUG_KINDS), ids=list(BUG_KINDS))
def bug(request):
    return BUG_KINDS[request.param]


def test_the_default_layouts_find_the_bug_and_the_reference_confirms_it(bug, randn):
    args = bug.inputs(randn)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(bug.buggy, *args, reference=bug.reference)
    failures = {(v.argument, v.layout): v for v in info.value.report.failures}
    for pair, agrees_with in bug.expected.items():
        assert pair in failures, f"{pair} not among the failures:\n{info.value}"
        assert failures[pair].reference_agrees_with == agrees_with, failures[pair].detail
        assert failures[pair].confirmed


def test_the_fixed_twin_passes_the_same_defaults(bug, randn):
    report = assert_layout_invariant(bug.fixed, *bug.inputs(randn))
    assert report.passed and not report.failures


def test_the_fixed_twin_agrees_with_the_reference(bug, randn):
    args = bug.inputs(randn)
    got, want = bug.fixed(*[a.clone() for a in args]), bug.reference(*[a.clone() for a in args])
    torch.testing.assert_close(got, want)


def test_the_size_1_bug_makes_the_contiguous_baseline_the_wrong_side(randn):
    # What "expected X, got Y" used to hide: the baseline is the run that disagrees with torch.
    q, cos = randn(2, 3, 1, 4), randn(1, 4)
    assert not torch.allclose(kernels.scale_heads(q, cos), kernels.scale_heads_reference(q, cos))
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(kernels.scale_heads, q, cos, reference=kernels.scale_heads_reference)
    padded = next(v for v in info.value.report.failures if v.layout == "padded_last")
    assert "agrees with q as padded_last: the contiguous baseline is wrong" in padded.reference_detail


def test_the_in_place_bug_is_reported_as_a_write_not_a_value(randn):
    logits, target = _rows_and_targets(randn)
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(kernels.row_loss, logits, target)
    transposed = next(v for v in info.value.report.failures if v.layout == "transposed")
    assert transposed.problems == (
        "the contiguous baseline modified argument logits (first change at [1, 0]: "
        f"{logits[1, 0].item():.9g} -> 0; 10 of 40 element(s)), logits as transposed left it unchanged",
    )


def test_the_index_bug_needs_the_non_unit_layouts_that_run_by_default(randn):
    args = BUG_KINDS["index-stride-ignored"].inputs(randn)
    unit_only = ("padded_last", "padded_outer", "storage_offset", "size_one_strides")
    assert not assert_layout_invariant(kernels.gather_rows, *args, layouts=unit_only).failures
    with pytest.raises(LayoutError):
        assert_layout_invariant(kernels.gather_rows, *args)
