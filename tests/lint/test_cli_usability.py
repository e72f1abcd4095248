"""What a new user of `stridecheck lint` meets: no silent emptiness, case-insensitive codes,
ruff's precedence of the command line over the configuration, `--extend-select`, the same count
from `--fix` as from `--diff`, help in full sentences, a "did you mean" for a mistyped key, and
newer syntax reported as such."""

from __future__ import annotations

import json
import re
import shutil
import sys

import pytest

from tests.annotations import REPRODUCTIONS

from .lint_support import KERNEL_OK, write

NO_FILES = "No Python files found under the given path(s)"


def _codes(run) -> list[str]:
    return sorted(f["code"] for f in json.loads(run.out))


def _copy(tmp_path, *names):
    for name in names:
        shutil.copy(REPRODUCTIONS / name, tmp_path / name)


# ----------------------------------------------------------------------------- silent emptiness


def test_an_empty_directory_warns_and_exits_0(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    run = cli(["lint", "--no-cache", "empty"], cwd=tmp_path)
    assert run.code == 0 and NO_FILES in run.err


def test_a_directory_without_python_files_warns(cli, tmp_path):
    write(tmp_path / "docs" / "notes.md", "# no code here\n")
    run = cli(["lint", "--no-cache", "--format", "json", "docs"], cwd=tmp_path)
    assert run.code == 0 and NO_FILES in run.err and json.loads(run.out) == []


def test_a_mistyped_path_is_an_error_naming_it(cli, tmp_path):
    run = cli(["lint", "--no-cache", "srcc/"], cwd=tmp_path)
    assert run.code == 2 and "srcc/" in run.err and "no such file or directory" in run.err


def test_the_summary_says_what_the_configuration_excluded(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nexclude = ["examples/buggy_*.py", "vendored/"]\n')
    write(tmp_path / "examples" / "buggy_a.py", KERNEL_OK)
    write(tmp_path / "examples" / "fixed_a.py", KERNEL_OK)
    write(tmp_path / "vendored" / "k.py", KERNEL_OK)
    run = cli(["lint", "--no-cache", "examples"], cwd=tmp_path)
    assert run.code == 0
    assert re.match(r"Checked 1 file \(1 file excluded by configuration\) in [\d.]+s: no findings\.", run.out)
    run = cli(["lint", "--no-cache", "."], cwd=tmp_path)
    assert "(1 file and 1 directory excluded by configuration)" in run.out
    # Naming an excluded directory walks it, and the exclusion still applies inside: the warning
    # and the summary say why nothing was checked.
    everything_excluded = cli(["lint", "--no-cache", "vendored"], cwd=tmp_path)
    assert everything_excluded.code == 0 and NO_FILES in everything_excluded.err
    assert "Checked 0 files (1 file excluded by configuration)" in everything_excluded.out
    assert cli(["lint", "--no-cache", "vendored/k.py"], cwd=tmp_path).out.startswith("Checked 1 file in")  # named
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nexclude = ["examples/"]\n')
    inside = cli(["lint", "--no-cache", "."], cwd=tmp_path)
    assert "(1 directory excluded by configuration)" in inside.out


# ----------------------------------------------------------------------------- rule selection


def test_codes_are_case_insensitive_everywhere(cli, tmp_path):
    case = "hidden_state_cache_layer.py"  # SC001 on line 29
    _copy(tmp_path, case)
    assert _codes(cli(["lint", "--no-cache", "--format", "json", "--select", "sc001", case], cwd=tmp_path)) == ["SC001"]
    assert _codes(cli(["lint", "--no-cache", "--format", "json", "--ignore", "sc001", case], cwd=tmp_path)) == []
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nignore = ["sc001"]\n')
    assert _codes(cli(["lint", "--no-cache", "--format", "json", case], cwd=tmp_path)) == []
    (tmp_path / "pyproject.toml").unlink()
    lines = (tmp_path / case).read_text().splitlines()
    assert "layer * hidden_size" in lines[28]
    lines[28] = lines[28].replace("# expect: SC001", "# stridecheck: ignore[sc001]")
    (tmp_path / case).write_text("\n".join(lines) + "\n")
    assert _codes(cli(["lint", "--no-cache", "--format", "json", case], cwd=tmp_path)) == []
    # ... and the comment is in use, not reported as an unused suppression.
    assert _codes(cli(["lint", "--no-cache", "--format", "json", "--select", "SC100", case], cwd=tmp_path)) == []


def test_an_explicit_select_beats_the_configurations_ignore(cli, tmp_path):
    case = "int32_token_gather.py"  # SC006
    _copy(tmp_path, case)
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nignore = ["SC006"]\n')
    json_lint = ["lint", "--no-cache", "--format", "json"]
    assert _codes(cli([*json_lint, case], cwd=tmp_path)) == []
    assert _codes(cli([*json_lint, "--select", "SC006", case], cwd=tmp_path)) == ["SC006"]
    assert _codes(cli([*json_lint, "--extend-select", "SC006", case], cwd=tmp_path)) == ["SC006"]
    # Within one source the more specific selector wins, and ignore wins a tie.
    assert _codes(cli([*json_lint, "--select", "SC", "--ignore", "SC006", case], cwd=tmp_path)) == []
    assert _codes(cli([*json_lint, "--ignore", "SC0", "--extend-select", "SC006", case], cwd=tmp_path)) == ["SC006"]
    assert _codes(cli([*json_lint, "--select", "SC006", "--ignore", "SC006", case], cwd=tmp_path)) == []


def test_extend_select_adds_to_the_selection(cli, tmp_path):
    _copy(tmp_path, "int32_token_gather.py", "hidden_state_cache_layer.py")
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nselect = ["SC001"]\n')
    json_lint = ["lint", "--no-cache", "--format", "json", "."]
    assert _codes(cli(json_lint, cwd=tmp_path)) == ["SC001"]
    assert _codes(cli([*json_lint, "--extend-select", "SC006"], cwd=tmp_path)) == ["SC001", "SC006"]
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nselect = ["SC001"]\nextend-select = ["SC006"]\n')
    assert _codes(cli(json_lint, cwd=tmp_path)) == ["SC001", "SC006"]
    # An opt-in rule is selected by its full code only: --extend-select SC1 does not add SC100.
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\n")
    text = (tmp_path / "int32_token_gather.py").read_text().replace("# expect: SC006", "# stridecheck: ignore[SC001]")
    (tmp_path / "int32_token_gather.py").write_text(text)
    assert "SC100" not in _codes(cli([*json_lint, "--extend-select", "SC1"], cwd=tmp_path))
    assert "SC100" in _codes(cli([*json_lint, "--extend-select", "SC100"], cwd=tmp_path))


def test_an_unknown_config_key_gets_a_suggestion(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nextend_select = ["SC006"]\n')
    run = cli(["lint", "--no-cache", "."], cwd=tmp_path)
    assert run.code == 2 and "unknown key tool.stridecheck.extend_select; did you mean `extend-select`?" in run.err
    write(tmp_path / "pyproject.toml", '[tool.stridecheck]\nzzz = 1\n')
    run = cli(["lint", "--no-cache", "."], cwd=tmp_path)
    assert run.code == 2 and "unknown key tool.stridecheck.zzz (known keys: select," in run.err


# ----------------------------------------------------------------------------- fixes


def test_fix_reports_the_count_diff_announced_and_that_many_findings_go(cli, tmp_path):
    # The stride swap is one fix carried by both swapped arguments' findings: both are fixed.
    _copy(tmp_path, "swapped_weight_strides.py", "kv_block_stride_from_shape.py")
    before = json.loads(cli(["lint", "--no-cache", "--format", "json", "."], cwd=tmp_path).out)
    diff = cli(["lint", "--no-cache", "--diff", "--unsafe-fixes", "."], cwd=tmp_path)
    announced = int(re.fullmatch(r"Would fix (\d+) findings?\.", diff.err.strip()).group(1))
    fix = cli(["lint", "--no-cache", "--fix", "--unsafe-fixes", "."], cwd=tmp_path)
    fixed = int(re.search(r", (\d+) fixed\.", fix.out).group(1))
    after = json.loads(cli(["lint", "--no-cache", "--format", "json", "."], cwd=tmp_path).out)
    assert announced == fixed == len(before) - len(after) == 3


# ----------------------------------------------------------------------------- help


def test_help_is_in_full_sentences(cli):
    top = cli(["--help"])
    assert top.code == 0 and "..." not in top.out.split("\n", 1)[1]  # past the usage line
    commands = top.out.split("Commands:")[1].strip().splitlines()
    assert len(commands) == 3 and all(line.rstrip().endswith(".") for line in commands), commands
    for command in ("lint", "rule", "rules"):
        run = cli([command, "--help"])
        assert run.code == 0 and "..." not in run.out.split("\n", 1)[1]
        description = run.out.split("Options:")[0].split("\n\n", 1)[1]
        assert description.strip().endswith("."), description
    lint_help = cli(["lint", "--help"]).out
    options = re.split(r"\n  (?=-)", lint_help.split("Options:")[1])
    for option in options[1:]:
        words = " ".join(option.split())
        assert words.endswith((".", "]")), f"option help cut short: {words!r}"
    assert "--extend-select" in lint_help


# ----------------------------------------------------------------------------- newer syntax

PEP695 = '''\
import triton
import triton.language as tl

type Grid = tuple[int, ...]


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


def test_newer_syntax_is_reported_as_needing_a_newer_python(cli, tmp_path):
    write(tmp_path / "k.py", PEP695)
    run = cli(["lint", "--no-cache", "--format", "json", "k.py"], cwd=tmp_path)
    findings = json.loads(run.out)
    if sys.version_info >= (3, 12):
        assert findings == [] and run.code == 0
    else:
        (f,) = findings
        assert f["code"] == "SC000" and f["line"] == 4
        assert f["message"].startswith("needs Python 3.12+ to analyse: it uses a `type` statement (PEP 695)")
    # A file that is not valid in any Python stays a syntax error.
    write(tmp_path / "bad.py", PEP695.replace("type Grid = tuple[int, ...]", "def f(:"))
    (bad,) = json.loads(cli(["lint", "--no-cache", "--format", "json", "bad.py"], cwd=tmp_path).out)
    assert bad["message"].startswith("syntax error")


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="only before Python 3.11, where except* is a syntax error")
def test_except_star_needs_311(cli, tmp_path):
    write(tmp_path / "k.py", "import triton\ntry:\n    pass\nexcept* ValueError:\n    pass\n")
    (f,) = json.loads(cli(["lint", "--no-cache", "--format", "json", "k.py"], cwd=tmp_path).out)
    assert f["message"].startswith("needs Python 3.11+ to analyse: it uses `except*`")
