"""The shared bug reproductions (``../shared/cases``, read in place, never copied): every
``# expect: SC00N`` annotation is reported on its line with that code, nothing else is reported,
and the fixed twins are clean. Part of the shared layer: skipped (with the reason) when
``../shared`` is absent, required in CI (tests/conftest.py). The project's own reproductions of
the same kinds run everywhere: tests/reproductions/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.annotations import expectation_params, expected, reported
from tests.conftest import CASES, shared_files

CASE_FILES = shared_files(CASES)

# Expectations the linter cannot meet before issue 16 lands, per (file, code); nothing else.
KNOWN_GAPS: dict = {}  # every shared expectation is met (issue 16)


def test_cases_are_present():
    assert CASES.is_dir() and any(expected(p) for p in CASE_FILES), f"no annotated case files under {CASES}"


@pytest.mark.parametrize(("path", "line", "code"), expectation_params(CASE_FILES, KNOWN_GAPS))
def test_annotated_finding_is_reported(path, line, code):
    assert (line, code) in reported(path)


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_nothing_else_is_reported(path: Path):
    assert reported(path) - expected(path) == set()


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: p.name)
def test_fixed_and_contiguous_cases_are_clean(path: Path):
    if not (path.name.endswith("_fixed.py") or path.name == "contiguous_by_construction.py"):
        assert expected(path), f"{path.name}: a buggy case without annotations"
        return
    assert expected(path) == set()
    assert reported(path) == set()
