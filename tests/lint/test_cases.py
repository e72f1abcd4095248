"""The shared bug reproductions (``../shared/cases``, read in place, never copied): every
``# expect: SC00N`` annotation of an implemented code is reported on its line with that code,
nothing else of those codes is reported, and the fixed twins are clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stridecheck.lint.engine import FileInput, RunOptions, lint
from tests.conftest import CASES

# The rule codes whose annotations this test enforces. The launch-side rules join the set as
# they land (SC003, SC004, SC005, SC007).
IMPLEMENTED_CODES = ("SC001", "SC002", "SC003", "SC004", "SC005", "SC006", "SC007")

_EXPECT = re.compile(r"#\s*expect:\s*((?:SC\d{3}\s*)+)$")
CASE_FILES = sorted(CASES.glob("*.py"))


def expected(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs annotated in ``path``, for the implemented codes."""
    out = set()
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _EXPECT.search(line.rstrip())
        if m:
            out |= {(line_no, c) for c in m.group(1).split() if c in IMPLEMENTED_CODES}
    return out


def reported(path: Path) -> set[tuple[int, str]]:
    options = RunOptions(select=IMPLEMENTED_CODES, jobs=1, root=path.parent)
    result = lint([FileInput(str(path), explicit=True)], options)
    assert result.internal_errors == []
    return {(f.span.line, f.code) for f in result.findings}


def test_cases_are_present():
    assert CASE_FILES, f"no case files under {CASES}"
    assert any(expected(p) for p in CASE_FILES)


@pytest.mark.parametrize("path", CASE_FILES, ids=[p.name for p in CASE_FILES])
def test_case_reports_exactly_its_annotations(path):
    assert reported(path) == expected(path)


@pytest.mark.parametrize(
    "path",
    [p for p in CASE_FILES if p.name.endswith("_fixed.py") or p.name == "contiguous_by_construction.py"],
    ids=lambda p: p.name,
)
def test_fixed_and_contiguous_cases_are_clean(path):
    assert expected(path) == set()
    assert reported(path) == set()


def test_expect_parser_reads_two_codes(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("a = 1  # expect: SC001 SC006\nb = 2\n", encoding="utf-8")
    assert expected(f) == {(1, "SC001"), (1, "SC006")}
