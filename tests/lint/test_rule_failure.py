"""A rule that raises is an internal error of that rule alone: the other rules still report,
and the run ends with exit code 2 after everything else was reported."""

from __future__ import annotations

from stridecheck.lint.checks import sc005_stride_mismatch

from tests.annotations import REPRODUCTIONS

# SC005 is made to fail below; these report SC001, SC002 and SC006 besides (and SC005).
OTHERS = ("hidden_state_cache_layer.py", "int32_token_gather.py", "mask_stepped_by_ids_stride.py")


def _boom(tree, options):
    raise RuntimeError("planted failure")
    yield  # pragma: no cover - makes this a generator like the real checks


def test_one_failing_rule_keeps_the_other_rules_findings(cli, monkeypatch):
    monkeypatch.setattr(sc005_stride_mismatch, "check", _boom)
    run = cli(["lint", "--no-cache", "--format", "json", "--extend-select", "SC006",
               *(str(REPRODUCTIONS / name) for name in OTHERS)])
    assert run.code == 2
    assert '"SC001"' in run.out and '"SC002"' in run.out and '"SC006"' in run.out
    assert '"SC005"' not in run.out
    assert "sc005_stride_mismatch" in run.err and "planted failure" in run.err


def test_without_an_errors_list_the_failure_propagates(monkeypatch):
    import pytest

    from stridecheck.lint import analysis

    monkeypatch.setattr(sc005_stride_mismatch, "check", _boom)
    models = [
        analysis.build_module_model(
            (REPRODUCTIONS / name).read_text(), path=name, module=name[:-3], options=analysis.AnalysisOptions()
        )
        for name in OTHERS
    ]
    with pytest.raises(RuntimeError, match="planted failure"):
        analysis.check_tree(models, analysis.AnalysisOptions())
    errors: list[str] = []
    found = analysis.check_tree(models, analysis.AnalysisOptions(), errors)
    assert {f.code for f in found} == {"SC001", "SC002", "SC006"}
    assert len(errors) == 1 and errors[0].startswith("sc005_stride_mismatch: RuntimeError: planted failure")


def test_a_rule_nothing_selects_does_not_run(cli, monkeypatch):
    # A deselected rule's findings would be dropped unreported, so it is not run at all: a
    # planted failure in it goes unnoticed. With SC100 selected every rule runs (a suppression of
    # a deselected code is used only if that rule ran), and the failure shows.
    from stridecheck.lint.checks import sc006_int32_offset

    monkeypatch.setattr(sc006_int32_offset, "check", _boom)
    files = [str(REPRODUCTIONS / name) for name in OTHERS]
    quiet = cli(["lint", "--no-cache", "--format", "json", *files])
    assert quiet.code == 1 and "planted failure" not in quiet.err and '"SC001"' in quiet.out
    loud = cli(["lint", "--no-cache", "--format", "json", "--extend-select", "SC100", *files])
    assert loud.code == 2 and "sc006_int32_offset" in loud.err and "planted failure" in loud.err
