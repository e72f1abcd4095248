"""The text, JSON and GitHub reports: format, order, stable keys, escaping, exit codes."""

from __future__ import annotations

import io
import json

from stridecheck.lint import report_github, report_json, report_text
from stridecheck.lint.model import Edit, Finding, Fix, Span

from tests.lint.lint_support import write

SOURCE = ["import triton\n", "def f(cache_ptr, col, vocab_size):\n", "    p = cache_ptr + col * vocab_size\n"]


def _finding(**kw) -> Finding:
    base = dict(
        path="src/k.py",
        span=Span(3, 21, 3, 37),
        code="SC000",
        message="`col * vocab_size` steps `cache_ptr` by a size",
        severity="error",
        hint="pass cache.stride(1)",
    )
    base.update(kw)
    return Finding(**base)


def _text(findings, **kw) -> str:
    out = io.StringIO()
    report_text.write(out, findings, lambda path: SOURCE, files_checked=3, elapsed=0.5, **kw)
    return out.getvalue()


def test_text_line_excerpt_hint_summary():
    text = _text([_finding()])
    lines = text.splitlines()
    assert lines[0] == "src/k.py:3:21: SC000 [parse-error] `col * vocab_size` steps `cache_ptr` by a size"
    assert lines[2] == "3 |     p = cache_ptr + col * vocab_size"
    # the caret line underlines exactly `col * vocab_size`
    caret = lines[3]
    assert caret.index("^") == lines[2].index("col * vocab_size") and caret.count("^") == len("col * vocab_size")
    assert "= hint: pass cache.stride(1)" in text
    assert lines[-1] == "Checked 3 files in 0.50s: 1 finding (SC000: 1)."
    assert "\x1b[" not in text


def test_text_quiet_colour_and_no_source():
    quiet = _text([_finding(), _finding(span=Span(2, 1, 2, 4))], quiet=True)
    assert quiet.splitlines() == [
        "src/k.py:3:21: SC000 [parse-error] `col * vocab_size` steps `cache_ptr` by a size",
        "src/k.py:2:1: SC000 [parse-error] `col * vocab_size` steps `cache_ptr` by a size",
    ]
    assert "\x1b[" in _text([_finding()], colour=True)
    assert "|" not in _text([_finding()], show_source=False)
    assert _text([]).strip() == "Checked 3 files in 0.50s: no findings."


def test_json_keys_stable():
    fix = Fix((Edit(Span(3, 21, 3, 37), "col * stride"),), "unsafe", "use the stride")
    out = io.StringIO()
    report_json.write(out, [_finding(fix=fix), _finding(hint=None)])
    items = json.loads(out.getvalue())
    keys = ["path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message", "hint", "fix",
            "related"]
    assert [list(i) for i in items] == [keys, keys]
    assert items[0]["fix"] == {
        "safety": "unsafe",
        "description": "use the stride",
        "edits": [{"line": 3, "column": 21, "end_line": 3, "end_column": 37, "replacement": "col * stride"}],
    }
    assert items[1]["fix"] is None and items[1]["hint"] is None
    assert (items[0]["line"], items[0]["column"], items[0]["end_column"]) == (3, 21, 37)


def test_github_commands_and_escaping():
    f = _finding(path="a,b:c.py", message="50% of rows\nshift: yes", hint=None, severity="warning")
    cmd = report_github.command(f)
    assert cmd == (
        "::warning file=a%2Cb%3Ac.py,line=3,col=21,endLine=3,endColumn=37,"
        "title=SC000 [parse-error]::50%25 of rows%0Ashift: yes"
    )
    assert report_github.command(_finding(severity="error")).startswith("::error ")
    assert report_github.command(_finding(severity="info")).startswith("::notice ")
    assert "\r" not in report_github.escape_data("a\r\nb") and report_github.escape_data("a\r\nb") == "a%0D%0Ab"


def test_cli_formats_order_and_exit_codes(tmp_path, cli):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 20\n")
    write(tmp_path / "b.py", "import triton\n" + "x = 1\n" * 5)
    write(tmp_path / "a" / "z.py", "import triton\n" + "x = 1\n" * 5)
    run = cli(["lint", "--no-cache", "--format", "json", "."], cwd=tmp_path)
    assert [f["path"] for f in json.loads(run.out)] == ["a/z.py", "b.py"] and run.code == 1
    run = cli(["lint", "--no-cache", "--format", "github", "."], cwd=tmp_path)
    assert run.out.splitlines()[0].startswith("::error file=a/z.py,line=1,col=1,")
    run = cli(["lint", "--no-cache", "--quiet", "."], cwd=tmp_path)
    assert len(run.out.splitlines()) == 2 and run.out.startswith("a/z.py:1:1: SC000 [parse-error] ")
    run = cli(["lint", "--no-cache", "."], cwd=tmp_path)
    assert run.out.splitlines()[-1].startswith("Checked 2 files in ") and "(SC000: 2)" in run.out
    assert "\x1b[" not in run.out  # not a terminal: no colour
    run = cli(["lint", "--no-cache", "--statistics", "."], cwd=tmp_path)
    assert run.out.split() == ["2", "SC000", "parse-error"]
    assert cli(["lint", "--no-cache", "--exit-zero", "."], cwd=tmp_path).code == 0
    out = tmp_path / "report.json"
    run = cli(["lint", "--no-cache", "--format", "json", "-o", out, "."], cwd=tmp_path)
    assert run.out == "" and len(json.loads(out.read_text())) == 2 and run.code == 1


def test_cli_stdin(tmp_path, cli):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 20\nexclude = ['gen/']\n")
    data = "import triton\n" + "x = 1\n" * 5
    run = cli(["lint", "--no-cache", "--format", "json", "--stdin-filename", "src/k.py", "-"], cwd=tmp_path, input=data)
    (f,) = json.loads(run.out)
    assert f["path"] == "src/k.py" and run.code == 1
    run = cli(["lint", "--format", "json", "--stdin-filename", "gen/k.py", "--force-exclude"], cwd=tmp_path, input=data)
    assert json.loads(run.out) == [] and run.code == 0


def test_usage_errors_exit_2(tmp_path, cli):
    assert cli(["lint", "--format", "xml"], cwd=tmp_path).code == 2
    assert cli(["lint", "--fix", "--diff"], cwd=tmp_path).code == 2
    assert cli(["rule", "SC999"], cwd=tmp_path).code == 2
