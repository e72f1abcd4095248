"""A rule that raises is an internal error of that rule alone: the other rules still report,
and the run ends with exit code 2 after everything else was reported."""

from __future__ import annotations

from stridecheck.lint.checks import sc005_stride_mismatch

from tests.conftest import CASES


def _boom(tree, options):
    raise RuntimeError("planted failure")
    yield  # pragma: no cover - makes this a generator like the real checks


def test_one_failing_rule_keeps_the_other_rules_findings(cli, monkeypatch):
    monkeypatch.setattr(sc005_stride_mismatch, "check", _boom)
    case = CASES / "draft_cache_column.py"
    run = cli(["lint", "--no-cache", "--format", "json", "--select", "SC001,SC006,SC007", str(case)])
    assert run.code == 2
    assert '"SC001"' in run.out and '"SC006"' in run.out and '"SC007"' in run.out
    assert "sc005_stride_mismatch" in run.err and "planted failure" in run.err


def test_without_an_errors_list_the_failure_propagates(monkeypatch):
    import pytest

    from stridecheck.lint import analysis

    monkeypatch.setattr(sc005_stride_mismatch, "check", _boom)
    model = analysis.build_module_model(
        (CASES / "draft_cache_column.py").read_text(), path="d.py", module="d", options=analysis.AnalysisOptions()
    )
    with pytest.raises(RuntimeError, match="planted failure"):
        analysis.check_tree([model], analysis.AnalysisOptions())
    errors: list[str] = []
    found = analysis.check_tree([model], analysis.AnalysisOptions(), errors)
    assert {f.code for f in found} >= {"SC001", "SC006", "SC007"}
    assert len(errors) == 1 and errors[0].startswith("sc005_stride_mismatch: RuntimeError: planted failure")
