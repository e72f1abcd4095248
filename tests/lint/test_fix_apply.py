"""Applying fixes: splices in order, safety levels, overlaps, parse check; --diff; --add-noqa;
and the round trip on the shared cases (fix, re-lint: fixed findings gone, nothing new; a second
--fix changes nothing)."""

from __future__ import annotations

import json
import shutil

import pytest

from stridecheck.lint.fix_apply import FixError, add_noqa, apply_fixes
from stridecheck.lint.model import Edit, Finding, Fix, Span


from tests.annotations import REPRODUCTIONS
from tests.conftest import CASES, shared_files


def _f(line, col, end_col, replacement, safety="safe", code="SC004", end_line=None):
    edit = Edit(Span(line, col, end_line or line, end_col), replacement)
    return Finding("k.py", Span(line, col, line, end_col), code, "m", "error", fix=Fix((edit,), safety))


SRC = "k[grid](\n    x,\n    heads * dim,  # keep this comment\n    a.stride(1), a.stride(0),\n)\n"


def test_splices_keep_everything_else():
    out = apply_fixes(SRC, [_f(3, 5, 16, "pool.stride(0)")])
    assert out.text == SRC.replace("heads * dim", "pool.stride(0)") and len(out.applied) == 1


def test_unsafe_only_when_allowed():
    swap = [_f(4, 5, 16, "a.stride(0)", "unsafe"), _f(4, 18, 29, "a.stride(1)", "unsafe")]
    assert apply_fixes(SRC, swap).text == SRC
    out = apply_fixes(SRC, swap, unsafe=True)
    assert "a.stride(0), a.stride(1)," in out.text and len(out.applied) == 2


def test_overlapping_fixes_wait_for_next_round():
    out = apply_fixes(SRC, [_f(3, 5, 16, "A"), _f(3, 5, 10, "B")])
    assert out.text == SRC.replace("heads * dim", "A") and len(out.applied) == 1


def test_result_must_parse():
    with pytest.raises(FixError, match="does not parse"):
        apply_fixes(SRC, [_f(3, 5, 16, "heads * (")])


def test_crlf_and_non_ascii_columns():
    src = "s = 'é'\r\nk[g](x, n * d)\r\n"
    out = apply_fixes(src, [_f(2, 9, 14, "t.stride(0)")])
    assert out.text == "s = 'é'\r\nk[g](x, t.stride(0))\r\n"
    src2 = "é = 1; k[g](x, n * d)\n"  # columns count code points, not bytes
    assert apply_fixes(src2, [_f(1, 16, 21, "s")]).text == "é = 1; k[g](x, s)\n"


def test_add_noqa_appends_merges_and_skips_unsafe_lines():
    src = (
        "a = x * n\n"
        "b = y * n  # a note\n"
        "c = z * n  # stridecheck: ignore[SC006]\n"
        "d = '''\n"
        "text'''\n"
        "e = 1 + \\\n"
        "    2\n"
    )
    findings = [
        _f(1, 5, 10, "", code="SC001"),
        _f(1, 5, 10, "", code="SC006"),
        _f(2, 5, 10, "", code="SC001"),
        _f(3, 5, 10, "", code="SC001"),
        _f(4, 1, 2, "", code="SC001"),
        _f(6, 1, 2, "", code="SC001"),
    ]
    out, changed = add_noqa(src, findings)
    assert out.splitlines() == [
        "a = x * n  # stridecheck: ignore[SC001, SC006]",
        "b = y * n  # a note  # stridecheck: ignore[SC001]",
        "c = z * n  # stridecheck: ignore[SC006, SC001]",
        "d = '''",
        "text'''",
        "e = 1 + \\",
        "    2",
    ]
    assert changed == 3
    assert add_noqa(out, findings[:4]) == (out, 0)  # idempotent


# --------------------------------------------------------------------------- round trip (real rules)


def _json(cli, tmp_path, *args):
    run = cli(["lint", "--no-cache", "--format", "json", *args, "."], cwd=tmp_path)
    return run, json.loads(run.out)


def test_sc004_fix_is_offered_and_round_trips(tmp_path, cli):
    shutil.copy(REPRODUCTIONS / "kv_block_stride_from_shape.py", tmp_path / "case.py")
    run, before = _json(cli, tmp_path)
    fixable = [f for f in before if f["code"] == "SC004" and f["fix"] is not None]
    assert fixable, f"SC004 offers no fix on the reproduction: {before}"
    original = (tmp_path / "case.py").read_text()
    diff = cli(["lint", "--no-cache", "--diff", "--unsafe-fixes", "."], cwd=tmp_path)
    assert diff.code == 1 and diff.out.startswith("--- a/case.py") and "+" in diff.out
    assert (tmp_path / "case.py").read_text() == original  # --diff writes nothing
    cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "."], cwd=tmp_path)
    fixed = (tmp_path / "case.py").read_text()
    assert fixed != original
    _, after = _json(cli, tmp_path)
    keys = lambda fs: {(f["code"], f["line"]) for f in fs}  # noqa: E731
    assert not keys(after) - keys(before), "a fix made a new finding"
    assert not [f for f in after if f["fix"] is not None and f["code"] == "SC004"]
    cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "."], cwd=tmp_path)
    assert (tmp_path / "case.py").read_text() == fixed  # idempotent


def _round_trips(tmp_path, cli, source):
    case = source.name
    shutil.copy(source, tmp_path / case)
    _, before = _json(cli, tmp_path)
    first = cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "."], cwd=tmp_path)
    assert first.code in (0, 1), first.err
    once = (tmp_path / case).read_text()
    _, after = _json(cli, tmp_path)
    assert {(f["code"], f["message"]) for f in after} <= {(f["code"], f["message"]) for f in before}
    cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "."], cwd=tmp_path)
    assert (tmp_path / case).read_text() == once


@pytest.mark.parametrize("source", sorted(REPRODUCTIONS.glob("*.py")), ids=lambda p: p.name)
def test_every_reproduction_round_trips(tmp_path, cli, source):
    _round_trips(tmp_path, cli, source)


@pytest.mark.parametrize("source", shared_files(CASES), ids=lambda p: p.name)
def test_every_shared_case_round_trips(tmp_path, cli, source):
    _round_trips(tmp_path, cli, source)


def test_add_noqa_silences_every_finding(tmp_path, cli):
    for case in REPRODUCTIONS.glob("*.py"):
        shutil.copy(case, tmp_path / case.name)
    _, before = _json(cli, tmp_path)
    assert len({f["code"] for f in before}) >= 5, before
    run = cli(["lint", "--no-cache", "--add-noqa", "."], cwd=tmp_path)
    assert run.code == 0 and "Added" in run.err
    run, after = _json(cli, tmp_path)
    assert after == [] and run.code == 0
    run, stale = _json(cli, tmp_path, "--select", "SC100")
    assert stale == []  # every comment written is in use
