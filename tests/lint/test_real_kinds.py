"""Reproductions, in our own code, of the kinds of stride and overflow bugs found in public Triton
code beyond the ten of ``../shared/real-bugs`` (``tests/lint/real_kinds/``; the public bugs each
file models are named in its docstring and tabled in the recall note of issue 16).

Each file is held to the annotation grammar of ``../shared/cases``: a line ending in
``# expect: SC00N`` must be reported with that code on that line at the default tier, every other
line stays silent, and ``*_fixed.py`` twins are clean. Each file's ``run()`` executes its kernel
on small CPU tensors and says whether the result is right for the layout it builds: the buggy
files return False, the fixed twins True; a 32-bit overflow kind whose fault needs more than
2**31 elements returns True and says so in its docstring.

Where the current linter misses an expectation (or reports a line nobody annotated), the single
expectation is marked ``xfail(strict=True)`` with the reason, so the day the linter learns it the
mark must go.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

import pytest
import torch

from stridecheck.lint.engine import FileInput, RunOptions, lint

REAL_KINDS = Path(__file__).resolve().parent / "real_kinds"
FILES = sorted(REAL_KINDS.glob("*.py"))
CODES = ("SC001", "SC002", "SC003", "SC004", "SC005", "SC006", "SC007")

_EXPECT = re.compile(r"#\s*expect:\s*((?:SC\d{3}\s*)+)$")

# Buggy files whose fault needs more than 2**31 elements: run() cannot show it on a CPU.
NEEDS_2_31_ELEMENTS = {
    "int64_strides_behind_switch.py",
    "paged_slots_int32_table.py",
    "varlen_start_narrowed_int32.py",
}

# Expectations the default tier misses today: (file, code, text on the annotated line) -> why.
MISSED: dict[tuple[str, str, str], str] = {}

# Files the default tier reports on lines nobody annotated: file -> why the report is wrong.
EXTRA: dict[str, str] = {}


def expected(path: Path) -> set[tuple[int, str]]:
    """(line, code) pairs annotated in ``path``."""
    out = set()
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _EXPECT.search(line.rstrip())
        if m:
            out |= {(line_no, code) for code in m.group(1).split()}
    return out


@functools.lru_cache(maxsize=None)
def reported(path: Path) -> frozenset[tuple[int, str]]:
    """(line, code) pairs the default tier reports for ``path`` linted alone."""
    result = lint([FileInput(str(path), explicit=True)], RunOptions(select=CODES, jobs=1, root=path.parent))
    assert result.internal_errors == []
    return frozenset((f.span.line, f.code) for f in result.findings)


def _line(path: Path, line_no: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[line_no - 1]


def _missed_reason(path: Path, line_no: int, code: str) -> str | None:
    text = _line(path, line_no)
    reasons = [why for (name, c, snippet), why in MISSED.items() if name == path.name and c == code and snippet in text]
    assert len(reasons) <= 1, f"{path.name}:{line_no} matches several MISSED entries"
    return reasons[0] if reasons else None


def _expectation_params():
    params = []
    for path in FILES:
        for line_no, code in sorted(expected(path)):
            reason = _missed_reason(path, line_no, code)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(path, line_no, code, marks=marks, id=f"{path.name}:{line_no}:{code}"))
    return params


def _file_params(table):
    return [
        pytest.param(p, marks=[pytest.mark.xfail(strict=True, reason=table[p.name])] if p.name in table else [], id=p.name)
        for p in FILES
    ]


def test_files_are_present_and_paired():
    assert FILES, f"no reproductions under {REAL_KINDS}"
    names = {p.name for p in FILES}
    for path in FILES:
        if path.name.endswith("_fixed.py"):
            assert expected(path) == set(), f"{path.name}: a fixed twin carries no expectation"
            assert path.name.replace("_fixed.py", ".py") in names, f"{path.name} has no buggy twin"
        else:
            assert expected(path), f"{path.name}: a buggy reproduction annotates its faulty lines"


def test_known_misses_name_real_expectations():
    """Every MISSED entry matches exactly one annotated line, so a stale entry cannot hide."""
    for name, code, snippet in MISSED:
        path = REAL_KINDS / name
        hits = [ln for ln, c in expected(path) if c == code and snippet in _line(path, ln)]
        assert len(hits) == 1, f"MISSED entry {(name, code, snippet)} matches {hits}"
    for name in EXTRA:
        assert (REAL_KINDS / name).exists(), name


@pytest.mark.parametrize(("path", "line_no", "code"), _expectation_params())
def test_expectation_is_reported(path, line_no, code):
    assert (line_no, code) in reported(path)


@pytest.mark.parametrize("path", _file_params(EXTRA))
def test_nothing_else_is_reported(path):
    assert set(reported(path)) - expected(path) == set()


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"stridecheck_real_kind_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_run_shows_the_fault_or_its_absence(path):
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("run() launches on CPU tensors: it needs the Triton interpreter (TRITON_INTERPRET=1)")
    module = _load(path)
    torch.manual_seed(0)
    ok = module.run()
    if path.name.endswith("_fixed.py"):
        assert ok is True
    elif path.name in NEEDS_2_31_ELEMENTS:
        assert "2**31" in module.__doc__, "a fault beyond reach of run() is said so in the docstring"
        assert ok is True
    else:
        assert ok is False
