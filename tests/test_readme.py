"""The README's snippets run as printed.

Every fenced ``python``, ``bash`` and ``console`` block of README.md carries a marker on the line
before it, an HTML comment that GitHub does not show:

* ``<!-- test: run [VAR=value ...] [cwd=DIR] [exit=N] [expect=TEXT] -->``: the block is run as a
  script (``python`` with this Python, ``bash`` with bash) from the repository root (or ``DIR``),
  with those environment variables, must exit ``N`` (default 0) and print ``TEXT`` if given. A
  variable the snippet needs, such as ``TRITON_INTERPRET=1``, must also be said in the README
  next to the block.
* ``<!-- test: pytest [same options] -->``: the block is a test file, run by pytest in one
  process.
* ``<!-- test: console -->``: each ``$ command`` line is run from the repository root; the
  ``path:line:column: CODE`` lines and the ``Checked N files`` summary it prints must match the
  block's (timings aside; source excerpts and hints are not compared).
* ``<!-- test: skip (reason) -->``: not run, for a reason given (a fragment, an install step).

A ``toml`` block under ``[tool.stridecheck]`` must load as a configuration. Nothing but the
markers is special: add a snippet, choose its marker, and this test covers it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"

_MARKER = re.compile(r"<!--\s*test:\s*(?P<kind>run|pytest|console|skip)\b(?P<args>.*?)-->")
_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
_CHECKED = ("python", "bash", "console")


@dataclass
class Snippet:
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    kind: str | None  # None: no marker
    args: str
    context: str  # the README text from the previous block to this one

    @property
    def id(self) -> str:
        return f"README.md:{self.line}:{self.lang}:{self.kind}"


def snippets(text: str) -> list[Snippet]:
    lines = text.splitlines()
    out: list[Snippet] = []
    i, last_end = 0, 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group("lang"):
            if m:  # an untyped block: skip to its end
                i += 1
                while i < len(lines) and not _FENCE.match(lines[i]):
                    i += 1
            i += 1
            continue
        indent, start = len(m.group("indent")), i
        body = []
        i += 1
        while i < len(lines) and not _FENCE.match(lines[i]):
            body.append(lines[i][indent:])
            i += 1
        previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.search(previous)
        out.append(
            Snippet(
                start + 1, m.group("lang"), "\n".join(body) + "\n",
                marker.group("kind") if marker else None, marker.group("args").strip() if marker else "",
                "\n".join(lines[last_end:start]),
            )
        )  # fmt: skip
        last_end = i + 1
        i += 1
    return out


SNIPPETS = snippets(README.read_text(encoding="utf-8"))


def _options(args: str) -> tuple[dict[str, str], Path, int, str]:
    env, cwd, code, expect = {}, REPO, 0, ""
    for word in shlex.split(args):
        key, _, value = word.partition("=")
        if key == "cwd":
            cwd = REPO / value
        elif key == "exit":
            code = int(value)
        elif key == "expect":
            expect = value
        elif key.isupper():
            env[key] = value
        else:
            raise ValueError(f"unknown marker option {word!r}")
    return env, cwd, code, expect


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTEST_ADDOPTS")}
    full_env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full_env.get('PATH', '')}"  # this venv's tools
    full_env["NO_COLOR"] = "1"
    full_env.update(env)
    return subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def test_the_readme_has_runnable_snippets():
    kinds = [s.kind for s in SNIPPETS]
    assert kinds.count("run") >= 2 and kinds.count("console") >= 1


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.lang in _CHECKED], ids=lambda s: s.id)
def test_every_snippet_is_marked(snippet):
    assert snippet.kind is not None, (
        f"README.md:{snippet.line}: a ```{snippet.lang} block without a marker: put "
        "`<!-- test: run -->` (or pytest / console / skip (reason)) on the line before it (tests/test_readme.py)"
    )
    if snippet.kind == "skip":
        assert re.fullmatch(r"\(.+\)", snippet.args), f"README.md:{snippet.line}: say why it is skipped: skip (reason)"


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind in ("run", "pytest")], ids=lambda s: s.id)
def test_snippet_runs_as_printed(snippet, tmp_path):
    env, cwd, code, expect = _options(snippet.args)
    for key, value in env.items():
        assert f"{key}={value}" in snippet.context + snippet.text, (
            f"README.md:{snippet.line}: the snippet needs {key}={value}; say so in the README beside it"
        )
    if snippet.kind == "pytest":
        path = tmp_path / "test_readme_snippet.py"
        path.write_text(snippet.text, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--rootdir", str(tmp_path), str(path)]
    elif snippet.lang == "python":
        argv = [sys.executable, "-c", snippet.text]
    elif snippet.lang == "bash":
        argv = ["bash", "-euo", "pipefail", "-c", snippet.text]
    else:
        pytest.fail(f"README.md:{snippet.line}: `test: {snippet.kind}` is for python and bash blocks")
    run = _run(argv, env, cwd)
    assert run.returncode == code, f"README.md:{snippet.line}: exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert expect in run.stdout + run.stderr, f"README.md:{snippet.line}: `{expect}` not printed\n{run.stdout[-3000:]}"


_FINDING = re.compile(r"^(\S+:\d+:\d+: SC\d{3}) ")
_SUMMARY = re.compile(r"^(Checked \d+ files?(?: \([^)]*\))?) in [\d.]+s(: .*)$")


def _essentials(output: str) -> list[str]:
    """The finding lines' `path:line:col: CODE` and the summary without its timing."""
    out = []
    for line in output.splitlines():
        if m := _FINDING.match(line):
            out.append(m.group(1))
        elif m := _SUMMARY.match(line):
            out.append(m.group(1) + m.group(2))
    return out


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "console"], ids=lambda s: s.id)
def test_console_output_matches_the_tool(snippet):
    commands = re.split(r"^\$ ", snippet.text, flags=re.MULTILINE)[1:]
    assert commands, f"README.md:{snippet.line}: no `$ command` line"
    env, cwd, _, _ = _options(snippet.args)
    for block in commands:
        command, _, printed = block.partition("\n")
        run = _run(["bash", "-c", command], env, cwd)
        expected = _essentials(printed)
        assert expected, f"README.md:{snippet.line}: `{command}` shows no finding line or summary"
        assert _essentials(run.stdout) == expected, run.stdout


@pytest.mark.parametrize(
    "snippet", [s for s in SNIPPETS if s.lang == "toml" and "[tool.stridecheck]" in s.text], ids=lambda s: s.id
)
def test_configuration_snippet_loads(snippet, tmp_path):
    from stridecheck.lint.config import load_config

    (tmp_path / "pyproject.toml").write_text(snippet.text, encoding="utf-8")
    cfg = load_config(tmp_path / "pyproject.toml", default_root=tmp_path)
    assert cfg.source is not None


def test_the_parser_reads_markers_and_indented_blocks():
    text = "x\n<!-- test: run TRITON_INTERPRET=1 -->\n```python\nprint(1)\n```\n\n  ```bash\n  echo hi\n  ```\n"
    first, second = snippets(text)
    assert (first.kind, first.args, first.text, first.line) == ("run", "TRITON_INTERPRET=1", "print(1)\n", 3)
    assert (second.kind, second.lang, second.text) == (None, "bash", "echo hi\n")
    assert _options("TRITON_INTERPRET=1 cwd=examples exit=1 expect=LayoutError") == (
        {"TRITON_INTERPRET": "1"}, REPO / "examples", 1, "LayoutError"
    )
