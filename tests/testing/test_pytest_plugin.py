"""The pytest plugin (entry point pytest11): the layouts marker and the layout_check fixture."""

import subprocess
import sys

pytest_plugins = ["pytester"]

# Subprocess runs: an in-process pytester run restores sys.modules afterwards, and torch's
# extension modules do not survive being imported twice in one process.

TEST_FILE = '''
import pytest
import torch
from stridecheck.testing import assert_layout_invariant


def by_width(x):
    n, m = x.shape
    return torch.as_strided(x, (n, m), (m, 1), x.storage_offset()).clone()


def rowwise(x):
    return x * 2


def test_correct(layout_check):
    report = layout_check(rowwise, torch.randn(3, 4))
    assert len(report.passed) == 5
    assert layout_check.reports == [report]


def test_buggy(layout_check):
    layout_check(by_width, torch.randn(3, 4))


@pytest.mark.layouts("storage_offset")
def test_marker_selects_layouts(layout_check):
    report = layout_check(by_width, torch.randn(3, 4))  # dense: width == stride, passes
    assert [v.layout for v in report.variants] == ["storage_offset"]


@pytest.mark.layouts("padded_last", atol=0.5)
def test_marker_tolerance(layout_check):
    layout_check(lambda x: x + (0.25 if x.is_contiguous() else 0.0), torch.randn(3, 4))


@pytest.mark.layouts("padded_last")
def test_call_keyword_wins(layout_check):
    report = layout_check(rowwise, torch.randn(3, 4), layouts=("storage_offset",))
    assert [v.layout for v in report.variants] == ["storage_offset"]


def one_ulp_off_when_padded(x):
    y = x * 2
    return y if x.is_contiguous() else torch.nextafter(y, torch.full_like(y, 1e9))


@pytest.mark.layouts("padded_last", exact=True)
def test_marker_exact(layout_check):
    with pytest.raises(AssertionError, match="ulp"):
        layout_check(one_ulp_off_when_padded, torch.randn(3, 4))
    layout_check(one_ulp_off_when_padded, torch.randn(3, 4), exact=False)


def test_direct():
    assert_layout_invariant(by_width, torch.randn(3, 4), layouts="padded_last")


@pytest.mark.layouts("padded_last", tolerance=1)
def test_unknown_marker_keyword(layout_check):
    pass
'''


def test_marker_is_registered_under_strict_markers(pytester):
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.layouts(*names, atol=None, rtol=None, exact=False, isolate=False)*"])


def test_fixture_and_marker(pytester):
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*LayoutError*", "*x as padded_last (strides (7, 1)):*", "*FAILED*test_buggy*"])
    result.stdout.fnmatch_lines(["*unknown keyword(s)*tolerance*"])
    # Issue 15: a LayoutError used to print 175 lines, 160 of them this package's source.
    out = result.stdout.str()
    failures = out.split("= FAILURES =")[1].split("short test summary")[0].strip().splitlines()
    # Per test: its header, its source to the failing line, the report, its location.
    assert len(failures) <= 40, "\n".join(failures)
    assert "def assert_layout_invariant" not in out and "__tracebackhide__" not in out
    assert "stridecheck/testing" not in out
    result.stdout.fnmatch_lines(
        [
            "E       stridecheck.testing.LayoutError: by_width: 1 layout variant(s) fail*",
            "E         x as padded_last (strides (7, 1)):",
            "E           - return value differs at [[]1, 0[]]: the contiguous baseline gave *, x as padded_last gave nan *",
        ]
    )


def test_unsupported_layouts_are_summarised_also_through_the_former_plugin_path(pytester):
    # An environment installed before the move names stridecheck.pytest_plugin in its entry
    # point: that path still loads the fixture and the summary hook.
    pytester.makepyfile(
        """
        import pytest
        import torch
        from stridecheck import stride_guard

        @stride_guard(x="M N")
        def f(x):
            return x + 1

        @pytest.mark.layouts("transposed", "padded_last")
        def test_it(layout_check):
            report = layout_check(f, torch.randn(3, 4))
            assert [v.layout for v in report.unsupported] == ["transposed"]
        """
    )
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:stridecheck", "-p", "stridecheck.pytest_plugin")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*layouts declared unsupported by @stride_guard*", "*x as transposed*"])


def test_loading_the_plugin_imports_neither_torch_nor_triton():
    code = (
        "import sys, stridecheck.pytest_plugin, stridecheck.testing, stridecheck.strategies\n"
        "heavy = [m for m in ('torch', 'triton', 'hypothesis') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
