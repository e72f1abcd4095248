"""`[tool.stridecheck]`: every key read, every mistake a one-line error naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from stridecheck.lint.config import ConfigError, find_pyproject, load_config

from tests.lint.lint_support import KERNEL_OK, write


def _cfg(tmp_path: Path, body: str):
    pyproject = write(tmp_path / "pyproject.toml", "[project]\nname='x'\n\n[tool.stridecheck]\n" + body)
    return load_config(pyproject, default_root=tmp_path)


def test_every_key_is_read(tmp_path):
    cfg = _cfg(
        tmp_path,
        """
select = ["SC000", "SC10"]
ignore = ["SC100"]
exclude = ["gen/*.py"]
extend-exclude = ["third_party/"]
per-file-ignores = { "tests/*" = ["SC0"] }
size-names = ["n_[a-z]+"]
stride-names = ["sx[0-9]"]
preview = true
max-file-size = 1000
""",
    )
    assert cfg.select == ("SC000", "SC10")
    assert cfg.ignore == ("SC100",)
    assert cfg.exclude == ("gen/*.py",)
    assert cfg.extend_exclude == ("third_party/",)
    assert cfg.per_file_ignores == {"tests/*": ("SC0",)}
    assert cfg.size_names == ("n_[a-z]+",) and cfg.stride_names == ("sx[0-9]",)
    assert cfg.preview is True and cfg.max_file_size == 1000
    assert cfg.root == tmp_path.absolute()


@pytest.mark.parametrize(
    "body, key",
    [
        ("selekt = ['SC001']", "tool.stridecheck.selekt"),
        ("select = 'SC001'", "tool.stridecheck.select"),
        ("select = ['SC999']", "tool.stridecheck.select"),
        ("ignore = [1]", "tool.stridecheck.ignore"),
        ("preview = 'yes'", "tool.stridecheck.preview"),
        ("max-file-size = -3", "tool.stridecheck.max-file-size"),
        ("max-file-size = true", "tool.stridecheck.max-file-size"),
        ("size-names = ['(']", "tool.stridecheck.size-names"),
        ("per-file-ignores = ['x']", "tool.stridecheck.per-file-ignores"),
        ("per-file-ignores = { 'a.py' = ['NOPE'] }", "tool.stridecheck.per-file-ignores"),
    ],
)
def test_mistakes_name_file_and_key(tmp_path, body, key):
    with pytest.raises(ConfigError) as info:
        _cfg(tmp_path, body)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "pyproject.toml") in message and key in message


def test_invalid_toml_is_one_line(tmp_path):
    pyproject = write(tmp_path / "pyproject.toml", "[tool.stridecheck\nselect = [")
    with pytest.raises(ConfigError, match="invalid TOML") as info:
        load_config(pyproject, default_root=tmp_path)
    assert "\n" not in str(info.value)


def test_nearest_pyproject_with_our_table_wins(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nignore = ['SC000']\n")
    write(tmp_path / "pkg" / "pyproject.toml", "[project]\nname = 'inner'\n")  # no table: skipped
    inner = tmp_path / "pkg" / "sub"
    inner.mkdir()
    assert find_pyproject(inner) == tmp_path / "pyproject.toml"
    write(tmp_path / "pkg" / "sub" / "pyproject.toml", "[tool.stridecheck]\n")
    assert find_pyproject(inner) == inner / "pyproject.toml"


def test_no_config_means_defaults(tmp_path):
    cfg = load_config(None, default_root=tmp_path)
    assert cfg.select is None and cfg.ignore == () and cfg.max_file_size == 5 * 1024 * 1024


def test_cli_config_error_exits_2_with_one_line(tmp_path, cli):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nunknown-key = 1\n")
    write(tmp_path / "k.py", KERNEL_OK)
    run = cli(["lint", "k.py"], cwd=tmp_path)
    assert run.code == 2
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and "unknown-key" in lines[0] and "pyproject.toml" in lines[0]
    assert run.out == ""


def test_cli_unknown_selector_exits_2(tmp_path, cli):
    write(tmp_path / "k.py", KERNEL_OK)
    run = cli(["lint", "--select", "SC000,XX9", "k.py"], cwd=tmp_path)
    assert run.code == 2 and "XX9" in run.err and "--select" in run.err


def test_cli_flags_override_config(tmp_path, cli):
    # The config limits file size so the file is SC000; --select on the CLI replaces the config's
    # select (which leaves SC000 out), so the finding comes back.
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nselect = ['SC100']\nmax-file-size = 10\n")
    write(tmp_path / "k.py", KERNEL_OK)
    assert cli(["lint", "k.py"], cwd=tmp_path).code == 0
    run = cli(["lint", "--select", "SC000", "k.py"], cwd=tmp_path)
    assert run.code == 1 and "SC000" in run.out
    # --ignore adds to the configuration's ignore list
    assert cli(["lint", "--select", "SC000", "--ignore", "SC000", "k.py"], cwd=tmp_path).code == 0


ROW_SUM = '''\
import triton
import triton.language as tl


@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols)
    tl.store(out_ptr + row, tl.sum(x))
'''


def test_preview_tier_from_flag_or_config(tmp_path, cli):
    # `row * n_cols` with no launch in the tree: SC003's lower tier, shown only with preview.
    write(tmp_path / "k.py", ROW_SUM)
    codes = lambda run: [line.split()[1] for line in run.out.splitlines()]  # noqa: E731
    assert codes(cli(["lint", "--no-cache", "-q", "k.py"], cwd=tmp_path)) == []
    run = cli(["lint", "--no-cache", "-q", "--preview", "k.py"], cwd=tmp_path)
    assert codes(run) == ["SC003"] and run.code == 1
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\npreview = true\n")
    assert codes(cli(["lint", "--no-cache", "-q", "k.py"], cwd=tmp_path)) == ["SC003"]
