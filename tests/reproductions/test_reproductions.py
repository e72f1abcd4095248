"""The project's own reproductions of every kind of stride bug (tests/reproductions/cases/).

Each file is linted alone and must report exactly its ``# expect:`` annotations (one test per
annotation, one per file for "nothing else"), and its ``run()`` must show the bug: False for a
buggy file, True for a fixed twin or a clean file. See README.md here for how to add one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.annotations import REPRODUCTIONS as CASES_DIR
from tests.annotations import expectation_params, expected, load, reported

CASE_FILES = sorted(CASES_DIR.glob("*.py"))

# Annotations the linter cannot meet yet, per (file, code): each names the issue that will make
# it pass. strict: the day it passes, the entry must go.
KNOWN_GAPS: dict = {}  # every annotation is met (issues 16 and 17)


def _clean_by_name(path: Path) -> bool:
    return path.stem.endswith(("_fixed", "_clean"))


def test_the_reproductions_are_there():
    assert len(CASE_FILES) >= 12
    assert any(expected(p) for p in CASE_FILES) and any(_clean_by_name(p) for p in CASE_FILES)


def test_known_gaps_name_real_annotations():
    annotated = {(p.name, code) for p in CASE_FILES for _, code in expected(p)}
    assert set(KNOWN_GAPS) <= annotated


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_buggy_files_are_annotated_and_twins_are_not(path):
    text = path.read_text(encoding="utf-8")
    assert text.startswith('"""'), f"{path.name}: say in a docstring what goes wrong, and for which layout"
    if _clean_by_name(path):
        assert expected(path) == set(), f"{path.name}: a fixed twin or clean file carries no annotation"
        if path.stem.endswith("_fixed"):
            assert (CASES_DIR / f"{path.stem.removesuffix('_fixed')}.py").exists(), f"{path.name}: no buggy twin"
    else:
        assert expected(path), f"{path.name}: a buggy file needs `# expect:` annotations (or a _fixed/_clean name)"


@pytest.mark.parametrize(("path", "line", "code"), expectation_params(CASE_FILES, KNOWN_GAPS))
def test_annotated_finding_is_reported(path, line, code):
    assert (line, code) in reported(path)


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_nothing_else_is_reported(path):
    assert reported(path) - expected(path) == set()


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.stem)
def test_run_shows_the_bug(path):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    module = load(path)
    buggy = bool(expected(path))
    visible = getattr(module, "VISIBLE_AT_SMALL_SIZE", True)
    result = module.run()
    assert isinstance(result, bool), f"{path.name}: run() must return a bool, got {result!r}"
    if buggy and visible:
        assert result is False, f"{path.name}: run() does not show the bug on the layout it builds"
    else:
        assert result is True, f"{path.name}: run() gives a wrong result for correct code"


def test_expect_parser_reads_two_codes_and_refuses_a_malformed_one(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("a = 1  # expect: SC001 SC006\nb = 2\n", encoding="utf-8")
    assert expected(f) == {(1, "SC001"), (1, "SC006")}
    f.write_text("a = 1  # expect SC001\n", encoding="utf-8")
    with pytest.raises(ValueError, match="x.py:1: malformed"):
        expected(f)
