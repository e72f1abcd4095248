"""The draw behind docs/precision.md: a fixed seed gives the same sample whatever order the lint
run listed its findings in, per rule, and --per-rule 0 keeps every finding."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "precision_sample.py"
spec = importlib.util.spec_from_file_location("precision_sample", SCRIPT)
precision_sample = importlib.util.module_from_spec(spec)
spec.loader.exec_module(precision_sample)


def _findings():
    return [{"code": f"SC00{1 + i % 3}", "path": f"pkg{i % 2}/m{i}.py", "line": i, "column": 1, "message": f"m{i}",
             "severity": "warning"} for i in range(60)]


def test_the_sample_does_not_depend_on_the_listing_order():
    a = _findings()
    b = list(a)
    random.Random(7).shuffle(b)
    da = precision_sample.draw(a, ("SC001", "SC002"), 5, seed=2026)
    db = precision_sample.draw(b, ("SC001", "SC002"), 5, seed=2026)
    assert da == db and all(len(v) == 5 for v in da.values())
    assert all(f["code"] == code for code, v in da.items() for f in v)
    other = precision_sample.draw(a, ("SC001",), 5, seed=1)
    assert other["SC001"] != da["SC001"]  # another seed, another sample


def test_a_finding_that_goes_away_leaves_the_rest_of_the_sample_in_place():
    a = _findings()
    before = precision_sample.draw(a, ("SC001",), 5, seed=2026)["SC001"]
    gone = before[2]
    after = precision_sample.draw([f for f in a if f is not gone], ("SC001",), 5, seed=2026)["SC001"]
    assert [f for f in before if f is not gone] == after[:4] and after[4] not in before


def test_every_finding_and_a_release_folder(tmp_path, capsys):
    saved = tmp_path / "run.json"
    rows = _findings() + [{**_findings()[0], "severity": "info", "line": 999}]  # a preview finding
    saved.write_text(json.dumps(rows))
    assert precision_sample.main([str(tmp_path), "--findings", str(saved), "--per-rule", "0", "--under", "pkg1/",
                                  "--rules", "SC001"]) == 0
    out = capsys.readouterr().out
    expected = [f for f in _findings() if f["code"] == "SC001" and f["path"].startswith("pkg1/")]
    assert f"## SC001: {len(expected)} of {len(expected)}" in out
    assert ":999`" not in out  # preview findings are not in the default sample
