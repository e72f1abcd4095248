"""`# stridecheck: ignore[...]` on the reported line; SC100 for comments that suppress nothing.

SC000 for a file over a tiny `max-file-size` is used as a finding at line 1 that needs no rule
of the analysis, so these tests judge the engine alone.
"""

from __future__ import annotations

import json

from stridecheck.lint.engine import FileInput, RunOptions, lint
from stridecheck.lint.suppression import parse_suppressions

from tests.lint.lint_support import KERNEL_OK, write

BIG = "x = 1\n" * 20


def _codes(tmp_path, cli, first_line: str, *args):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 50\n")
    write(tmp_path / "k.py", first_line + "\n" + BIG)
    run = cli(["lint", "--no-cache", "--format", "json", *args, "k.py"], cwd=tmp_path)
    return run, [(f["code"], f["line"]) for f in json.loads(run.out)]


def test_parse_forms():
    text = (
        "import triton  # stridecheck: ignore[SC001, SC006]\n"
        "x = 1  # noqa: E501  # stridecheck: ignore\n"
        "s = '# stridecheck: ignore[SC001]'\n"  # inside a string: not a comment
        "y = 2  #stridecheck:ignore[SC002]\n"
    )
    sups = parse_suppressions(text)
    assert [(s.line, s.codes) for s in sups] == [(1, ("SC001", "SC006")), (2, None), (4, ("SC002",))]
    assert sups[0].span.line == 1 and sups[0].span.column == 16


def test_unterminated_source_keeps_comments_read_so_far():
    sups = parse_suppressions("a = 1  # stridecheck: ignore\nb = (\n")
    assert [(s.line, s.codes) for s in sups] == [(1, None)]


def test_code_suppression(tmp_path, cli):
    run, codes = _codes(tmp_path, cli, "import triton")
    assert codes == [("SC000", 1)] and run.code == 1
    run, codes = _codes(tmp_path, cli, "import triton  # stridecheck: ignore[SC000]")
    assert codes == [] and run.code == 0
    run, codes = _codes(tmp_path, cli, "import triton  # stridecheck: ignore")
    assert codes == [] and run.code == 0
    # another code on the line does not suppress it
    run, codes = _codes(tmp_path, cli, "import triton  # stridecheck: ignore[SC001]")
    assert codes == [("SC000", 1)]


def test_suppression_only_on_its_line(tmp_path, cli):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 50\n")
    write(tmp_path / "k.py", "import triton\n# stridecheck: ignore[SC000]\n" + BIG)
    run = cli(["lint", "--no-cache", "--format", "json", "k.py"], cwd=tmp_path)
    assert [f["code"] for f in json.loads(run.out)] == ["SC000"]


def test_sc100_is_opt_in(tmp_path, cli):
    write(tmp_path / "k.py", KERNEL_OK.replace("mask=mask)\n", "mask=mask)  # stridecheck: ignore[SC001]\n"))
    stale_line = next(i for i, l in enumerate((tmp_path / "k.py").read_text().splitlines(), 1) if "ignore" in l)
    run = cli(["lint", "--no-cache", "--format", "json", "k.py"], cwd=tmp_path)
    assert json.loads(run.out) == [] and run.code == 0, run.err
    run = cli(["lint", "--no-cache", "--format", "json", "--select", "SC1", "k.py"], cwd=tmp_path)
    assert json.loads(run.out) == []  # a prefix does not turn on an opt-in rule
    run = cli(["lint", "--no-cache", "--format", "json", "--select", "SC100", "k.py"], cwd=tmp_path)
    (f,) = json.loads(run.out)
    assert f["code"] == "SC100" and f["line"] == stale_line and "SC001" in f["message"]
    assert f["fix"]["safety"] == "safe"
    assert run.code == 1


def test_sc100_partial_and_fix(tmp_path, cli):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 60\n")
    write(tmp_path / "k.py", "import triton  # keep me  # stridecheck: ignore[SC000, SC001]\n" + BIG)
    run = cli(["lint", "--no-cache", "--format", "json", "--select", "SC000,SC100", "k.py"], cwd=tmp_path)
    (f,) = json.loads(run.out)
    assert f["code"] == "SC100" and "SC001" in f["message"] and "SC000" not in f["message"]
    run = cli(["lint", "--no-cache", "--select", "SC000,SC100", "--fix", "k.py"], cwd=tmp_path)
    first = (tmp_path / "k.py").read_text().splitlines()[0]
    assert first == "import triton  # keep me  # stridecheck: ignore[SC000]"
    assert run.code == 0, run.out + run.err


def test_sc100_fix_removes_whole_comment(tmp_path, cli):
    src = KERNEL_OK.replace("mask = offs < n\n", "mask = offs < n  # stridecheck: ignore\n")
    write(tmp_path / "k.py", src)
    run = cli(["lint", "--no-cache", "--select", "SC100", "--fix", "k.py"], cwd=tmp_path)
    assert (tmp_path / "k.py").read_text() == KERNEL_OK and run.code == 0, run.out + run.err


def test_engine_api_counts_suppressed_away(tmp_path):
    p = write(tmp_path / "k.py", "import triton  # stridecheck: ignore[SC000]\n" + BIG)
    result = lint([FileInput(str(p), explicit=True)], RunOptions(max_file_size=10, jobs=1, root=tmp_path))
    assert result.findings == [] and result.files_checked == 1


def test_fix_on_stdin_prints_the_fixed_source(tmp_path, cli):
    src = KERNEL_OK.replace("mask = offs < n\n", "mask = offs < n  # stridecheck: ignore[SC001]\n")
    run = cli(["lint", "--no-cache", "--select", "SC100", "--fix", "--stdin-filename", "k.py", "-"], cwd=tmp_path, input=src)
    assert run.out == KERNEL_OK and run.code == 0
    assert not (tmp_path / "k.py").exists()  # nothing written
