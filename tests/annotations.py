"""Bug reproductions held to their ``# expect:`` annotations.

The grammar (the same as ``../shared/cases/README.md``): a line that ends in ``# expect: SC00N``
must be reported with that rule code, on that line; ``# expect: SC00N SC00M`` for two. Every other
line must stay silent. Used by the project's own reproductions (tests/reproductions/) and by the
shared layer (tests/lint/test_cases.py); one parser and one lint call for both.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from stridecheck.lint.engine import FileInput, RunOptions, lint

# The project's own reproductions (see tests/reproductions/README.md).
REPRODUCTIONS = Path(__file__).resolve().parent / "reproductions" / "cases"

# Every rule code a reproduction may annotate.
RULE_CODES = ("SC001", "SC002", "SC003", "SC004", "SC005", "SC006", "SC007")

EXPECT = re.compile(r"#\s*expect:\s*((?:SC\d{3}\s*)+)$")
# Anything that looks like an annotation, so that a malformed one is an error, not silence.
_LOOKS_LIKE_EXPECT = re.compile(r"#\s*expect\b", re.IGNORECASE)


def expected(path: Path, codes: tuple[str, ...] = RULE_CODES) -> set[tuple[int, str]]:
    """The (line, code) pairs annotated in ``path``, for ``codes``.

    Raises ValueError naming the line for an annotation that does not follow the grammar.
    """
    out = set()
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = EXPECT.search(line.rstrip())
        if m:
            out |= {(line_no, c) for c in m.group(1).split() if c in codes}
        elif _LOOKS_LIKE_EXPECT.search(line):
            raise ValueError(f"{path.name}:{line_no}: malformed annotation (want `# expect: SC00N [SC00M ...]` at the end of the line)")
    return out


def reported(path: Path, codes: tuple[str, ...] = RULE_CODES) -> set[tuple[int, str]]:
    """The (line, code) pairs the linter reports for ``path`` linted alone, in-process, at the
    default tier, for ``codes``. An internal error of the linter fails the caller."""
    options = RunOptions(select=codes, jobs=1, root=path.parent)
    result = lint([FileInput(str(path), explicit=True)], options)
    assert result.internal_errors == [], result.internal_errors
    return {(f.span.line, f.code) for f in result.findings}


def expectation_params(files: list[Path], known_gaps: dict[tuple[str, str], str]) -> list:
    """One ``pytest.param(path, line, code)`` per annotation of ``files``, with a strict xfail
    for each (file name, code) in ``known_gaps`` (the value is the reason: name the issue)."""
    params = []
    for path in files:
        if not path.is_file():  # a placeholder for an absent folder: the test skips it
            params.append(pytest.param(path, 0, "", id=path.name))
            continue
        for line, code in sorted(expected(path)):
            gap = known_gaps.get((path.name, code))
            marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
            params.append(pytest.param(path, line, code, id=f"{path.stem}:{line}:{code}", marks=marks))
    return params


def load(path: Path, prefix: str = "reproduction"):
    """Import a reproduction file by path (it is not a package module) and return the module."""
    name = f"_{prefix}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton's JIT looks the kernel's module up while compiling
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
