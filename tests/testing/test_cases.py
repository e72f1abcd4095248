"""The bug reproductions of ../shared/cases under assert_layout_invariant (unit-inner-stride layouts).

Approach: each case file is imported by path (never copied). What to call, and with which
arguments, is derived from the file itself: while its ``run()`` executes, every plain function
the file defines (its launchers: everything but ``run`` and the ``@triton.jit`` kernels) is
replaced by a wrapper that records a copy of the call's arguments, then calls through. Each
recorded call is then replayed through :func:`assert_layout_invariant` on the original function.
``run()`` itself says which verdict to expect: a file whose ``run()`` returns False is buggy and
must fail with a :class:`LayoutError`; one whose ``run()`` returns True must pass (this covers
the fixed twins, contiguous_by_construction.py and int32_row_offset.py, whose fault needs more
than 2**31 elements and is invisible at this size).

One derived replay more: swapped strides of a *square* matrix read its transpose in every layout
(a logical bug, not a layout one), so when every replay of a buggy file passes, its square 2-D
tensor arguments are narrowed to non-square ones (two columns fewer) and the calls replayed
again; then the swapped strides reach the padding. test_square_matrix_hides_swapped_strides
pins that blind spot.

``torch.manual_seed(0)`` before ``run()`` makes the recorded values, and so the verdicts,
reproducible.

The replays use the layouts whose last dimension keeps stride 1 (UNIT_INNER_LAYOUTS): what each
case's run() verdict is about. The cases' launchers read every input as if its inner stride were
1, with neither a guard nor a copy, so the default layouts' transposed and strided inputs fail
the fixed twins too; that limitation is not what the cases reproduce.
"""

import importlib.util
import inspect

import pytest
import torch

from tests.conftest import CASES
from stridecheck.testing import LayoutError, assert_layout_invariant
from stridecheck.testing.layouts import UNIT_INNER_LAYOUTS

CASE_FILES = sorted(p for p in CASES.glob("*.py"))

# An extra layer: the cases are read in place from the shared folder beside the checkout.
pytestmark = pytest.mark.skipif(
    not CASES.is_dir(), reason=f"the shared cases are not there ({CASES}); set STRIDECHECK_SHARED=/path/to/shared to run them"
)

# The argument of the launcher each buggy case's fault is about: the test's oracle. A case file
# added later and missing here is still held to the verdict its run() gives.
BUG_ARGUMENT = {
    "draft_cache_column.py": "cache",
    "helper_function_offset.py": "cache",
    "mask_wrong_tensor_stride.py": "keep",
    "padded_vocab_rows.py": "padded_logits",
    "positional_stride_swap.py": "a",
    "shape_products_as_strides.py": "pool",
}


def _load(path):
    spec = importlib.util.spec_from_file_location(f"stridecheck_case_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def recorded_calls(module):
    """Run ``module.run()`` with its launchers recorded: ``(run() result, [(fn, args, kwargs)])``."""
    launchers = {
        name: obj
        for name, obj in vars(module).items()
        if inspect.isfunction(obj) and obj.__module__ == module.__name__ and name != "run"
    }
    calls = []

    def recording(fn):
        def wrapper(*args, **kwargs):
            calls.append((fn, _copy(args), _copy(kwargs)))  # before the call: it may mutate them
            return fn(*args, **kwargs)

        return wrapper

    for name, fn in launchers.items():
        setattr(module, name, recording(fn))
    try:
        torch.manual_seed(0)
        ok = module.run()
    finally:
        for name, fn in launchers.items():
            setattr(module, name, fn)
    return ok, calls


def replay(calls):
    """Every recorded call through assert_layout_invariant: ``(failing arguments, reports)``."""
    failing, reports = set(), []
    for fn, args, kwargs in calls:
        try:
            # isolate: a buggy launcher may write past a tensor it allocated itself (not in a
            # guarded buffer), which can abort the process; in a child that is one failed variant.
            reports.append(assert_layout_invariant(fn, *args, layouts=UNIT_INNER_LAYOUTS, isolate=True, **kwargs))
        except LayoutError as err:
            reports.append(err.report)
            failing |= {arg for arg, _ in err.report.failing_pairs}
    return failing, reports


def _narrow_square(value):
    if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[0] == value.shape[1] > 2:
        return value[:, : value.shape[1] - 2].clone()
    return value


def test_the_cases_are_there():
    names = {p.name for p in CASE_FILES}
    assert set(BUG_ARGUMENT) <= names
    assert {"draft_cache_column_fixed.py", "contiguous_by_construction.py"} <= names


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_case_verdict_matches_run(path):
    module = _load(path)
    ok, calls = recorded_calls(module)
    assert calls, f"{path.name}: run() called none of the file's launch functions"
    failing, reports = replay(calls)
    if ok:
        assert not failing, "\n".join(r.format() for r in reports if r.failures)
        assert all(r.passed for r in reports)
        return
    if not failing and any(_narrow_square(a) is not a for _, args, _ in calls for a in args):
        failing, reports = replay(
            [(fn, tuple(_narrow_square(a) for a in args), kwargs) for fn, args, kwargs in calls]
        )
    assert failing, f"{path.name}: run() says buggy, yet every layout gave the baseline's answers"
    expected = BUG_ARGUMENT.get(path.name)
    if expected is not None:
        assert expected in failing, f"{path.name}: failing arguments {sorted(failing)}, expected {expected}"


def test_square_matrix_hides_swapped_strides():
    """The blind spot the narrowing replay works around: with swapped strides a square matrix is
    read transposed in every layout, so the layouts agree with one another (not with the truth)."""
    module = _load(CASES / "positional_stride_swap.py")
    ok, calls = recorded_calls(module)
    assert not ok and calls[0][1][0].shape == (7, 7)
    fn, args, kwargs = calls[0]
    report = assert_layout_invariant(fn, *args, layouts=UNIT_INNER_LAYOUTS, **kwargs)
    assert report.failures == [] and report.passed


def test_founding_bug_fails_on_its_first_padded_run_with_the_gap_write():
    module = _load(CASES / "draft_cache_column.py")
    _, calls = recorded_calls(module)
    fn, args, kwargs = calls[1]  # step 1: the first step the shifted column reaches
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(fn, *args, **kwargs)
    padded = next(v for v in info.value.report.failures if (v.argument, v.layout) == ("cache", "padded_last"))
    assert "argument cache after the call differs at [0, 1, 0]" in padded.detail
    assert "cache as padded_last wrote into the gap of cache's buffer" in padded.detail
