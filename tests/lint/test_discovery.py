"""Which files a run sees: .gitignore (nested), skipped directories, symlink loops, exclusions."""

from __future__ import annotations

import os

import pytest

from stridecheck.lint.discovery import Discovery

from tests.lint.lint_support import KERNEL_OK, write


def _paths(tmp_path, paths=(".",), exclude=(), force=False):
    os.chdir(tmp_path)
    return [(s.path, s.explicit) for s in Discovery(tmp_path, exclude, force).files(list(paths))]


@pytest.fixture(autouse=True)
def _keep_cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)


def test_only_py_files_sorted_and_relative(tmp_path):
    for name in ["b.py", "a.py", "sub/c.py", "notes.txt", "sub/d.pyi", "sub/e.py.bak"]:
        write(tmp_path / name, KERNEL_OK)
    assert _paths(tmp_path) == [("a.py", False), ("b.py", False), ("sub/c.py", False)]
    # relative input -> relative output, joined to what was given
    assert [p for p, _ in _paths(tmp_path, ["sub"])] == ["sub/c.py"]
    # absolute input -> absolute output
    assert [p for p, _ in _paths(tmp_path, [str(tmp_path / "sub")])] == [str(tmp_path / "sub" / "c.py")]


def test_gitignore_nested_and_negated(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "generated/\n*_pb2.py\n")
    write(tmp_path / "pkg" / ".gitignore", "local_*.py\n!local_keep.py\n")
    for name in [
        "main.py",
        "x_pb2.py",
        "generated/k.py",
        "pkg/local_tmp.py",
        "pkg/local_keep.py",
        "pkg/mod.py",
        "pkg/deep/y_pb2.py",
    ]:
        write(tmp_path / name, KERNEL_OK)
    assert [p for p, _ in _paths(tmp_path)] == ["main.py", "pkg/local_keep.py", "pkg/mod.py"]
    # linting a subdirectory still honours the repository root's .gitignore above it
    assert [p for p, _ in _paths(tmp_path, ["pkg"])] == ["pkg/local_keep.py", "pkg/mod.py"]


def test_skipped_directories(tmp_path):
    for name in [
        ".git/hooks/h.py",
        ".venv/lib/v.py",
        "venv/lib/v.py",
        "env2/lib/v.py",
        "node_modules/n.py",
        "__pycache__/c.py",
        "build/lib/b.py",
        ".stridecheck_cache/x.py",
        "src/ok.py",
    ]:
        write(tmp_path / name, KERNEL_OK)
    write(tmp_path / "env2" / "pyvenv.cfg", "home = /usr\n")  # a venv under any name
    assert [p for p, _ in _paths(tmp_path)] == ["src/ok.py"]


def test_symlink_loop_is_not_followed_twice(tmp_path):
    write(tmp_path / "a" / "k.py", KERNEL_OK)
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    os.symlink(tmp_path / "missing", tmp_path / "dangling.py")  # dangling: not a file, skipped
    assert [p for p, _ in _paths(tmp_path)] == ["a/k.py"]


def test_exclude_applies_to_discovered_not_named_files(tmp_path):
    write(tmp_path / "examples" / "buggy_one.py", KERNEL_OK)
    write(tmp_path / "examples" / "fixed_one.py", KERNEL_OK)
    write(tmp_path / "third_party" / "t.py", KERNEL_OK)
    exclude = ["examples/buggy_*.py", "third_party/"]
    assert _paths(tmp_path, exclude=exclude) == [("examples/fixed_one.py", False)]
    # named on the command line: linted even though excluded...
    assert _paths(tmp_path, ["examples/buggy_one.py"], exclude=exclude) == [("examples/buggy_one.py", True)]
    # ...unless --force-exclude (what the pre-commit hook passes)
    assert _paths(tmp_path, ["examples/buggy_one.py"], exclude=exclude, force=True) == []
    assert _paths(tmp_path, ["third_party"], exclude=exclude, force=True) == []


def test_missing_path_is_an_error(tmp_path, cli):
    with pytest.raises(FileNotFoundError):
        _paths(tmp_path, ["nope.py"])
    run = cli(["lint", "nope.py"], cwd=tmp_path)
    assert run.code == 2 and "nope.py" in run.err


def test_duplicate_inputs_are_linted_once(tmp_path):
    write(tmp_path / "k.py", KERNEL_OK)
    assert _paths(tmp_path, [".", "k.py", "./k.py"]) == [("k.py", True)]
