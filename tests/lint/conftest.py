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


@pytest.fixture
def lint_files(tmp_path):
    """``lint_files({"pkg/m.py": source, ...}, preview=False, select=None)`` -> findings of the
    whole tree, through the real engine (discovery of the written files, every rule, selection,
    suppression), sorted; paths are relative to the tree. Sources are dedented."""
    import textwrap

    from stridecheck.lint.engine import FileInput, RunOptions, lint

    def run(files: dict[str, str], preview: bool = False, select=None):
        for rel, src in files.items():
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(src), encoding="utf-8")
        inputs = [FileInput(str(tmp_path / rel)) for rel in files]
        options = RunOptions(select=tuple(select) if select else None, preview=preview, jobs=1, root=tmp_path)
        result = lint(inputs, options)
        assert result.internal_errors == []
        for f in result.findings:
            object.__setattr__(f, "path", str(Path(f.path).relative_to(tmp_path)))
        return result.findings

    return run
