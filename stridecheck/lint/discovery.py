"""Which files a run lints: ``.py`` files under the given paths, in a deterministic order.

Rules (as ruff's): ``.gitignore`` files are respected (nested ones too, and those of the
enclosing directories up to the repository root); version-control directories, virtual
environments (``.venv``, ``venv``, or any directory holding ``pyvenv.cfg``), ``node_modules``,
caches and build directories are skipped; symbolic links to directories are followed once (a
link loop is not followed twice). ``exclude`` patterns (gitignore syntax, relative to the project
root) apply to discovered files; a file named on the command line is linted even when excluded,
unless ``force_exclude``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

# Directories never searched (ruff's default exclusions, plus our cache and bytecode caches).
SKIPPED_DIRS = frozenset(
    {
        ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
        ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
        ".stridecheck_cache", ".svn", ".tox", ".venv", ".vscode", "__pycache__", "__pypackages__",
        "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SourcePath:
    path: str  # as reported: relative when the input was relative
    explicit: bool  # named on the command line (bad-input diagnostics apply even without `triton`)


def _abs(path: Path | str) -> Path:
    # Absolute and normalised, but symlinks kept: reported paths and patterns follow the links.
    return Path(os.path.abspath(path))


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(list(lines))


class _Ignores:
    """The ``.gitignore`` files that apply to a directory, deepest last."""

    def __init__(self, layers: tuple[tuple[Path, pathspec.GitIgnoreSpec], ...] = ()):
        self.layers = layers

    def with_dir(self, directory: Path) -> _Ignores:
        gitignore = directory / ".gitignore"
        try:
            lines = gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return self
        return _Ignores(self.layers + ((directory, _spec(lines)),))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        # The deepest .gitignore with a decisive match wins (a nested `!pattern` re-includes).
        for base, spec in reversed(self.layers):
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                return bool(result.include)
        return False


def _ancestor_ignores(directory: Path) -> _Ignores:
    """The ``.gitignore`` files of the directories above ``directory``, up to its repository's
    root (none when it is not inside a repository)."""
    chain = []
    if not (directory / ".git").exists():
        for d in directory.parents:
            chain.append(d)
            if (d / ".git").exists():
                break
        else:
            chain = []  # not in a repository: only .gitignore files at or below `directory`
    ignores = _Ignores()
    for d in reversed(chain):
        ignores = ignores.with_dir(d)
    return ignores


class Discovery:
    """Finds source files for one run.

    ``exclude`` holds gitignore-style patterns relative to ``root`` (the project root).
    """

    def __init__(self, root: Path, exclude: Sequence[str] = (), force_exclude: bool = False):
        self.root = _abs(root)
        self.exclude = _spec(exclude) if exclude else None
        self.force_exclude = force_exclude
        # What the exclude patterns left out of the last files() call (not .gitignore, nor the
        # directories always skipped), so the report can say so instead of going quiet.
        self.excluded_files = 0
        self.excluded_dirs = 0

    def excluded(self, path: Path, is_dir: bool = False) -> bool:
        if self.exclude is None:
            return False
        try:
            rel = _abs(path).relative_to(self.root).as_posix()
        except ValueError:
            # Outside the project root: match patterns against the path as written.
            rel = path.as_posix().lstrip("/")
        return self.exclude.match_file(rel + "/" if is_dir else rel)

    def files(self, paths: Sequence[str]) -> list[SourcePath]:
        """Files to lint under ``paths`` (files or directories), sorted by reported path.

        Raises ``FileNotFoundError`` naming a path that does not exist.
        """
        found: dict[str, SourcePath] = {}
        self.excluded_files = self.excluded_dirs = 0
        for given in paths:
            p = Path(given)
            if not p.exists() and not p.is_symlink():
                raise FileNotFoundError(given)
            if p.is_dir():
                if self.force_exclude and self.excluded(p, is_dir=True):
                    self.excluded_dirs += 1
                    continue
                visited: set[tuple[int, int]] = set()
                ignores = _ancestor_ignores(_abs(p))
                for f in self._walk(p, ignores, visited):
                    key = os.path.normpath(f)
                    found.setdefault(key, SourcePath(key, explicit=False))
            else:
                if self.force_exclude and self.excluded(p):
                    self.excluded_files += 1
                    continue
                key = os.path.normpath(given)
                found[key] = SourcePath(key, explicit=True)
        return [found[k] for k in sorted(found)]

    def _walk(self, directory: Path, ignores: _Ignores, visited: set[tuple[int, int]]):
        try:
            st = directory.stat()
        except OSError:
            return
        if (st.st_dev, st.st_ino) in visited:  # a symlink loop or a second link to the same tree
            return
        visited.add((st.st_dev, st.st_ino))
        ignores = ignores.with_dir(_abs(directory))
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()  # follows links; a dangling link is neither
                is_file = entry.is_file()
            except OSError:
                continue
            if is_dir:
                if entry.name in SKIPPED_DIRS or (path / "pyvenv.cfg").exists():
                    continue
                if ignores.ignored(_abs(path), True):
                    continue
                if self.excluded(path, True):
                    self.excluded_dirs += 1
                    continue
                yield from self._walk(path, ignores, visited)
            elif is_file and entry.name.endswith(".py"):
                if ignores.ignored(_abs(path), False):
                    continue
                if self.excluded(path):
                    self.excluded_files += 1
                    continue
                yield entry.path
