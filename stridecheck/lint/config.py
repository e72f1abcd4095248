"""``[tool.stridecheck]`` from the nearest ``pyproject.toml`` that has one.

As in ruff, the nearest ``pyproject.toml`` holding a ``[tool.stridecheck]`` table (searched from
the current directory, or the first linted path, upward) configures the run; its directory is the
project root, against which ``exclude`` and ``per-file-ignores`` patterns (gitignore syntax) are
matched and where the cache lives. Without one, the current directory is the root and defaults
apply. Command-line flags take precedence over the file as in ruff: ``--select`` replaces the
file's selection (its ``select`` and ``ignore``), ``--extend-select`` and ``--ignore`` adjust it
(see :class:`stridecheck.lint.engine.Selection`); ``--exclude`` replaces ``exclude`` and
``--extend-exclude`` adds to it. Rule codes are case-insensitive (``sc003`` is ``SC003``).

Errors: :class:`ConfigError` with a one-line message naming the file and the key.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_MAX_FILE_SIZE = 5 * 1024 * 1024  # bytes; larger files are generated, not hand-written kernels


class ConfigError(Exception):
    """A malformed configuration; the message is one line naming the file and the key."""


@dataclass
class Config:
    root: Path  # directory of the pyproject.toml (or the current directory without one)
    source: Path | None = None  # the pyproject.toml read, if any
    select: tuple[str, ...] | None = None  # None: every default-tier rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    size_names: tuple[str, ...] = ()  # regexes (fullmatch) for extra size-like names
    stride_names: tuple[str, ...] = ()  # regexes (fullmatch) for extra stride-like names
    preview: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE


def _str_list(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {type(value).__name__} {value!r}")
    return tuple(value)


def _regex_list(value: object, where: str) -> tuple[str, ...]:
    patterns = _str_list(value, where)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{where}: invalid regular expression {pattern!r}: {exc}") from None
    return patterns


def _code_list(value: object, where: str) -> tuple[str, ...]:
    codes = tuple(c.strip().upper() for c in _str_list(value, where))
    check_selectors(codes, where)
    return codes


# The keys of [tool.stridecheck], for the "did you mean" of an unknown one.
KEYS = (
    "select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores",
    "size-names", "stride-names", "preview", "max-file-size",
)  # fmt: skip


def _unknown_key(name: str, key: str) -> ConfigError:
    close = difflib.get_close_matches(key.replace("_", "-").lower(), KEYS, n=1, cutoff=0.6)
    hint = f"; did you mean `{close[0]}`?" if close else f" (known keys: {', '.join(KEYS)})"
    return ConfigError(f"{name}: unknown key tool.stridecheck.{key}{hint}")


def check_selectors(selectors: tuple[str, ...] | list[str], where: str) -> None:
    """Raise :class:`ConfigError` for a selector that names no rule (``ALL``, a code or a prefix)."""
    from stridecheck.lint import catalogue

    codes = list(catalogue.load())
    for sel in selectors:
        if sel == "ALL":
            continue
        if not sel or not any(code.startswith(sel) for code in codes):
            raise ConfigError(f"{where}: unknown rule code or prefix {sel!r}")


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that holds ``[tool.stridecheck]``."""
    start = Path(os.path.abspath(start))
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            # Cheap textual test first; the real parse (with errors) happens in load_config.
            if "stridecheck" in text:
                try:
                    data = tomllib.loads(text)
                except tomllib.TOMLDecodeError:
                    return candidate  # let load_config report the syntax error
                if isinstance(data.get("tool"), dict) and "stridecheck" in data["tool"]:
                    return candidate
    return None


def load_config(pyproject: Path | None, *, default_root: Path) -> Config:
    """Read ``[tool.stridecheck]`` from ``pyproject`` (None: defaults rooted at ``default_root``).

    Raises :class:`ConfigError` on unreadable or invalid TOML, an unknown key or a wrong type.
    """
    if pyproject is None:
        return Config(root=Path(os.path.abspath(default_root)))
    name = str(pyproject)
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name}: not valid UTF-8: {exc.reason}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("stridecheck", {})
    cfg = Config(root=Path(os.path.abspath(pyproject.parent)), source=pyproject)
    if not isinstance(table, dict):
        raise ConfigError(f"{name}: tool.stridecheck: expected a table")
    for key, value in table.items():
        where = f"{name}: tool.stridecheck.{key}"
        if key == "select":
            cfg.select = _code_list(value, where)
        elif key == "extend-select":
            cfg.extend_select = _code_list(value, where)
        elif key == "ignore":
            cfg.ignore = _code_list(value, where)
        elif key == "exclude":
            cfg.exclude = _str_list(value, where)
        elif key == "extend-exclude":
            cfg.extend_exclude = _str_list(value, where)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table of pattern = [codes]")
            cfg.per_file_ignores = {
                pattern: _code_list(codes, f"{where}.{pattern!r}") for pattern, codes in value.items()
            }
        elif key == "size-names":
            cfg.size_names = _regex_list(value, where)
        elif key == "stride-names":
            cfg.stride_names = _regex_list(value, where)
        elif key == "preview":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
            cfg.preview = value
        elif key == "max-file-size":
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{where}: expected a positive number of bytes, got {value!r}")
            cfg.max_file_size = value
        else:
            raise _unknown_key(name, key)
    return cfg
