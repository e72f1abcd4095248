"""Helpers for the linter's tests: run the real CLI in-process (click's runner) in a directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from stridecheck.cli import main


class Run:
    def __init__(self, result):
        self.code = result.exit_code
        self.out = result.stdout
        self.err = result.stderr
        self.exception = result.exception


@pytest.fixture
def cli(monkeypatch):
    """``cli(args, cwd=..., input=...)`` -> Run with exit code, stdout and stderr (kept apart)."""

    def run(args, cwd: Path | None = None, input: bytes | str | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        monkeypatch.delenv("NO_COLOR", raising=False)
        runner = CliRunner()
        result = runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return Run(result)

    return run
