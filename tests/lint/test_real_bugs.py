"""Recall on real bugs (the shared layer): ``../shared/tools/check-real-bugs`` run as a subprocess
with the installed ``stridecheck`` executable, reading ``../shared/real-bugs`` in place. It lints
each pre-fix and post-fix folder of ten public bugs and ends with
``public bugs: X/Y pre-fix lines found at default tier, Z more with --preview, W post-fix lines
wrongly flagged``; it exits 0 only when X == Y and W == 0.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REAL_BUGS, SHARED

FINAL = re.compile(
    r"public bugs: (?P<found>\d+)/(?P<total>\d+) pre-fix lines found at default tier, "
    r"(?P<preview>\d+) more with --preview, (?P<flagged>\d+) post-fix lines wrongly flagged"
)


ROW = re.compile(r"^(?P<bug>B\d+)\s+(?P<side>pre|post)\s+(?P<expected>\S+)\s+(?P<result>\S+)\s+(?P<where>\S+)$")


def _stridecheck() -> str:
    beside = Path(sys.executable).with_name("stridecheck")  # the one installed with this Python
    found = str(beside) if beside.exists() else shutil.which("stridecheck")
    assert found, "the stridecheck executable is not installed (pip install -e .)"
    return found


def _check_real_bugs(exe: str) -> tuple[list[dict], re.Match]:
    tool = SHARED / "tools" / "check-real-bugs"
    run = subprocess.run(
        [sys.executable, str(tool), exe, str(REAL_BUGS)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = run.stdout.strip().splitlines()
    assert lines, f"check-real-bugs printed nothing (exit {run.returncode}): {run.stderr[-2000:]}"
    assert "NOT JSON" not in run.stderr, run.stderr[-2000:]  # the linter itself failed on a folder
    m = FINAL.fullmatch(lines[-1].strip())
    assert m, f"unexpected last line from check-real-bugs: {lines[-1]!r}"
    rows = [r.groupdict() for line in lines if (r := ROW.match(line.strip()))]
    assert rows and int(m["total"]) > 0
    return rows, m


def test_every_real_bug_of_a_default_rule_found_and_no_fix_flagged():
    """At the default selection: every pre-fix line of a default-tier rule found, no post-fix
    line flagged. SC006 is opt-in (its rule text says why); its rows are the next test's."""
    rows, m = _check_real_bugs(_stridecheck())
    missed = [r for r in rows if r["side"] == "pre" and r["expected"] != "SC006" and r["result"] != "default"]
    flagged = [r for r in rows if r["side"] == "post" and r["result"] == "FLAGGED"]
    assert not missed and not flagged, (missed, flagged, m.group(0))


def test_every_real_bug_found_with_sc006_selected(tmp_path):
    """With SC006 selected, as a project that wants it selects it (`extend-select`): all of them."""
    shim = tmp_path / "stridecheck-with-sc006"
    shim.write_text(
        f"#!{sys.executable}\nimport subprocess, sys\n"
        f"args = sys.argv[1:]\n"
        f"args[1:1] = ['--extend-select', 'SC006']\n"
        f"sys.exit(subprocess.run([{_stridecheck()!r}, *args]).returncode)\n"
    )
    shim.chmod(0o755)
    rows, m = _check_real_bugs(str(shim))
    assert (int(m["found"]), int(m["flagged"])) == (int(m["total"]), 0), m.group(0)
    assert all(r["result"] == "default" for r in rows if r["side"] == "pre")
