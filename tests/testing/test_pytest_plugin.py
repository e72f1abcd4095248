"""The pytest plugin (entry point pytest11): the layouts marker and the layout_check fixture."""

import subprocess
import sys

pytest_plugins = ["pytester"]

# Subprocess runs: an in-process pytester run restores sys.modules afterwards, and torch's
# extension modules do not survive being imported twice in one process.

TEST_FILE = '''
import pytest
import torch


def by_width(x):
    n, m = x.shape
    return torch.as_strided(x, (n, m), (m, 1), x.storage_offset()).clone()


def rowwise(x):
    return x * 2


def test_correct(layout_check):
    report = layout_check(rowwise, torch.randn(3, 4))
    assert len(report.passed) == 3
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
'''


def test_marker_is_registered_under_strict_markers(pytester):
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.layouts(*names, atol=0, rtol=0, isolate=False)*"])


def test_fixture_and_marker(pytester):
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*LayoutError*", "*x as padded_last:*", "*FAILED*test_buggy*"])


def test_unsupported_layouts_are_summarised(pytester):
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
    result = pytester.runpytest_subprocess("--strict-markers")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*layouts declared unsupported by @stride_guard*", "*x as transposed*"])


def test_unknown_marker_keyword_is_a_usage_error(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.layouts("padded_last", tolerance=1)
        def test_it(layout_check):
            pass
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown keyword(s)*tolerance*"])


def test_loading_the_plugin_imports_neither_torch_nor_triton():
    code = (
        "import sys, stridecheck.pytest_plugin, stridecheck.testing, stridecheck.strategies\n"
        "heavy = [m for m in ('torch', 'triton', 'hypothesis') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
