"""The `stridecheck` command as a user runs it: the installed entry point, exit codes, the default
path, colour only on a terminal, and an import that stays light."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from stridecheck import __version__

from tests.annotations import REPRODUCTIONS

from .lint_support import KERNEL_OK, write

EXE = Path(sys.executable).with_name("stridecheck")


def _run(args, cwd, **kw):
    return subprocess.run([str(EXE), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300, **kw)


def test_version_and_help(tmp_path):
    run = _run(["--version"], tmp_path)
    assert run.returncode == 0 and __version__ in run.stdout
    run = _run(["lint", "--help"], tmp_path)
    for flag in ("--select", "--ignore", "--exclude", "--force-exclude", "--format", "--exit-zero", "--quiet",
                 "--no-color", "--stdin-filename", "--output-file", "--preview", "--statistics",
                 "--show-source", "--fix", "--unsafe-fixes", "--diff", "--add-noqa", "--no-cache",
                 "--cache-dir", "--jobs"):  # fmt: skip
        assert flag in run.stdout


def test_exit_codes_end_to_end(tmp_path):
    write(tmp_path / "clean.py", KERNEL_OK)
    assert _run(["lint", "clean.py"], tmp_path).returncode == 0
    buggy = (REPRODUCTIONS / "helper_candidate_slot.py").read_text()
    write(tmp_path / "sub" / "buggy.py", buggy)
    run = _run(["lint", "--format", "json"], tmp_path / "sub")  # no path: the current directory
    findings = json.loads(run.stdout)
    assert run.returncode == 1 and findings and {f["path"] for f in findings} == {"buggy.py"}
    assert _run(["lint", "--exit-zero", "sub"], tmp_path).returncode == 0
    assert _run(["lint", "--select", "NOPE"], tmp_path).returncode == 2


def test_the_same_findings_in_parallel_and_serially(tmp_path):
    for case in sorted(REPRODUCTIONS.glob("*.py")):
        for copy in range(3):  # enough files to start workers (the engine is serial below 16)
            write(tmp_path / f"c{copy}" / case.name, case.read_text())
    serial = _run(["lint", "--no-cache", "-j", "1", "--format", "json", "."], tmp_path)
    parallel = _run(["lint", "--no-cache", "-j", "2", "--format", "json", "."], tmp_path)
    assert serial.returncode == parallel.returncode == 1, serial.stderr + parallel.stderr
    assert json.loads(serial.stdout) == json.loads(parallel.stdout) != []


def test_colour_only_on_a_terminal(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 20\n")
    write(tmp_path / "k.py", "import triton\n" + "x = 1\n" * 5)
    piped = _run(["lint", "--no-cache", "k.py"], tmp_path)
    assert "SC000" in piped.stdout and "\x1b[" not in piped.stdout
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}

    def on_tty(*extra):
        leader, follower = pty.openpty()
        proc = subprocess.Popen([str(EXE), "lint", "--no-cache", *extra, "k.py"], cwd=tmp_path, stdout=follower,
                                stderr=subprocess.DEVNULL, env=env)  # fmt: skip
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=60)
        os.close(leader)
        return b"".join(chunks).decode()

    assert "\x1b[" in on_tty()
    assert "\x1b[" not in on_tty("--no-color")


def test_import_is_light():
    code = (
        "import sys, stridecheck, stridecheck.cli, stridecheck.lint.engine;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'libcst', 'numpy')];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_repository_lints_itself_clean():
    # CI ends with `stridecheck lint .`; a rule example or reproduction that the configuration
    # forgets to exclude fails it, so the same run belongs in the README's test command.
    repo = Path(__file__).resolve().parents[2]
    run = _run(["lint", "--no-cache", "."], cwd=repo)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "no findings" in run.stdout


def test_the_same_findings_whatever_the_hash_seed():
    # Sets of names order differently under another PYTHONHASHSEED; a finding's place, message
    # and related locations must not depend on it.
    repo = Path(__file__).resolve().parents[2]
    targets = ["tests/reproductions/cases", "tests/lint/real_kinds", "examples"]
    out = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = _run(["lint", "--no-cache", "--exclude", "__nothing__", "--preview", "--exit-zero", "--format", "json", *targets],
                   cwd=repo, env=env)
        assert run.returncode == 0, run.stderr[-2000:]
        out.append(json.loads(run.stdout))
    assert out[0] and out[0] == out[1]
