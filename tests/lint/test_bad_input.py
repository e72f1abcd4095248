"""Bad input yields one SC000 with the reason, and the run goes on; nothing crashes the linter."""

from __future__ import annotations

import json
import os

import pytest

from tests.lint.lint_support import KERNEL_OK, write


def _lint_json(cli, tmp_path, *args):
    run = cli(["lint", "--no-cache", "--format", "json", *args], cwd=tmp_path)
    return run, json.loads(run.out)


def _only(findings, path):
    return [f for f in findings if f["path"] == path]


def test_syntax_error_reported_at_its_line_and_run_goes_on(tmp_path, cli):
    write(tmp_path / "bad.py", "import triton\n\n\n@triton.jit\ndef kernel(x_ptr\n")
    write(tmp_path / "good.py", KERNEL_OK)
    run, findings = _lint_json(cli, tmp_path, ".")
    assert run.code == 1, run.err
    (f,) = _only(findings, "bad.py")
    assert f["code"] == "SC000" and f["name"] == "parse-error" and f["line"] >= 5
    assert _only(findings, "good.py") == []
    assert "internal error" not in run.err


@pytest.mark.parametrize(
    "data, reason, line",
    [
        (b"import triton\nx = '\xff\xfe'\n", "not valid utf-8", 2),
        (b"# -*- coding: latin-1 -*-\nimport triton\nx = '\xe9'\n", None, None),  # valid latin-1
        (b"# -*- coding: no-such-codec -*-\nimport triton\n", "encoding", 1),
        (b"import triton\nx = 1\0\n", "NUL byte", 2),
    ],
)
def test_encoding_and_nul(tmp_path, cli, data, reason, line):
    write(tmp_path / "k.py", data)
    run, findings = _lint_json(cli, tmp_path, "k.py")
    if reason is None:
        assert findings == [] and run.code == 0, run.err
        return
    (f,) = findings
    assert f["code"] == "SC000" and reason in f["message"] and f["line"] == line
    assert run.code == 1


def test_too_large_uses_configured_limit(tmp_path, cli):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 100\n")
    write(tmp_path / "big.py", "import triton\n" + "x = 1\n" * 50)
    write(tmp_path / "small.py", "import triton\n")
    run, findings = _lint_json(cli, tmp_path, ".")
    (f,) = findings
    assert f["path"] == "big.py" and f["code"] == "SC000" and "max-file-size" in f["message"]


def test_prefilter_skips_bad_files_that_never_mention_triton(tmp_path, cli):
    write(tmp_path / "data.py", b"\0\0binary")  # discovered, no 'triton': not our business
    write(tmp_path / "k.py", KERNEL_OK)
    run, findings = _lint_json(cli, tmp_path, ".")
    assert findings == [] and run.code == 0
    run, findings = _lint_json(cli, tmp_path, "data.py")  # named explicitly: reported
    assert [f["code"] for f in findings] == ["SC000"]


def test_unreadable_file(tmp_path, cli):
    os.symlink(tmp_path / "gone.py", tmp_path / "link.py")  # named, but reading it fails
    run, findings = _lint_json(cli, tmp_path, "link.py")
    (f,) = findings
    assert f["code"] == "SC000" and "cannot read" in f["message"] and run.code == 1


def test_empty_file_is_valid(tmp_path, cli):
    write(tmp_path / "empty.py", "")
    run, findings = _lint_json(cli, tmp_path, "empty.py")
    assert findings == [] and run.code == 0, run.err


def test_many_bad_inputs_in_one_run_each_reported(tmp_path, cli):
    write(tmp_path / "a.py", b"import triton\n\0")
    write(tmp_path / "b.py", b"import triton\n\xff\n")
    write(tmp_path / "c.py", "import triton\ndef f(:\n")
    write(tmp_path / "d.py", KERNEL_OK)
    run, findings = _lint_json(cli, tmp_path, ".")
    assert sorted((f["path"], f["code"]) for f in findings) == [("a.py", "SC000"), ("b.py", "SC000"), ("c.py", "SC000")]
    assert run.code == 1


@pytest.mark.parametrize("body", ["x = " + "(" * 3000 + "1" + ")" * 3000, "x = " + "-" * 20000 + "1"])
def test_nesting_that_crashes_the_native_parser_is_sc000(tmp_path, cli, body):
    # libcst's parser dies with a segfault on these (measured); the linter must report, not die.
    write(tmp_path / "deep.py", "import triton\n" + body + "\n")
    write(tmp_path / "ok.py", KERNEL_OK)
    run, findings = _lint_json(cli, tmp_path, ".")
    assert [(f["path"], f["code"], f["line"]) for f in findings] == [("deep.py", "SC000", 2)]
    assert "nested" in findings[0]["message"] and run.code == 1


def test_named_file_without_triton_gets_a_syntax_check_only(tmp_path, cli):
    write(tmp_path / "plain.py", "def f(:\n    pass\n")
    write(tmp_path / "new_syntax.py", "type Vector = list[float]\n")  # 3.12 syntax: libcst reads it
    run, findings = _lint_json(cli, tmp_path, "plain.py", "new_syntax.py")
    assert [(f["path"], f["code"]) for f in findings] == [("plain.py", "SC000")]
    assert "syntax error" in findings[0]["message"] and findings[0]["line"] in (1, 2)  # libcst's position


def test_long_expression_chains_are_analysed_not_failed(tmp_path, cli):
    # A generated kernel summing 1,500 terms: valid Python whose tree is deeper than CPython's
    # default recursion limit; the engine analyses it on a large stack instead of failing.
    chain = " + ".join(["v"] * 1500)
    write(tmp_path / "chain.py", KERNEL_OK.replace(
        "    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)\n",
        f"    v = tl.load(x_ptr + offs, mask=mask)\n    acc = {chain}\n    tl.store(y_ptr + offs, acc, mask=mask)\n",
    ))  # fmt: skip
    run, findings = _lint_json(cli, tmp_path, "chain.py")
    assert "internal error" not in run.err and findings == [] and run.code == 0


@pytest.mark.parametrize(
    "source, line, column",
    [
        ("import triton\ndef f(:\n    pass\n", 2, 7),  # libcst blames the next line
        ("import triton\nx = (1,\ny = 2\n", 2, 5),  # an unclosed bracket: where it opens
    ],
)
def test_syntax_errors_point_where_python_points(tmp_path, cli, source, line, column):
    write(tmp_path / "broken.py", source)
    run = cli(["lint", "--no-cache", "--format", "json", "broken.py"], cwd=tmp_path)
    (f,) = json.loads(run.out)
    expected = None
    try:
        compile(source, "broken.py", "exec")
    except SyntaxError as exc:
        expected = (exc.lineno, exc.offset)
    assert (f["code"], f["line"], f["column"]) == ("SC000", line, column) and expected == (line, column)
    assert f["message"].startswith("syntax error")
