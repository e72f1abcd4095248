"""The per-file model cache, ``.stridecheck_cache/`` at the project root (as ruff's ``.ruff_cache``).

The cache key of the whole file is the linter's version, the analysis options and a hash of
the model-building code (:func:`builder_fingerprint`). What is cached is the outcome of building
one file's model (the ``ModuleModel``, or the parse
failure), never findings: the rules always run over every model of the tree, so cross-file rules
stay right when only some files changed. One pickle per (linter version, analysis options)
holds ``{(path, module): (content digest, outcome)}``; an entry is used only when the file's
bytes hash to the same digest. The file is replaced atomically, so concurrent runs can lose each
other's additions but never read a torn file. A cache that cannot be read is ignored; one that
cannot be written is skipped silently (linting never fails because of the cache).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import io
import os
import pickle
import tempfile
from pathlib import Path

from stridecheck import __version__
from stridecheck.lint.analysis import AnalysisOptions

CACHE_DIR_NAME = ".stridecheck_cache"
_FORMAT = 2  # bump when the layout of the cache file changes (2: model objects as calls of their class)


def builder_fingerprint() -> str:
    """A hash of the code that builds models (the modules of ``stridecheck.lint``, rules aside).

    The linter's version alone is not enough in a checkout or an editable install, where the
    model builders change without a release: a model pickled by older code would come back with
    missing fields (the dataclasses use slots) or stale contents.
    """
    h = hashlib.blake2b(digest_size=8)
    package = Path(__file__).resolve().parent
    for source in sorted(package.glob("*.py")):
        try:
            h.update(source.name.encode() + b"\0" + source.read_bytes())
        except OSError:
            h.update(source.name.encode() + b"\0?")
    return h.hexdigest()


def _init_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of a model data class in the order its ``__init__`` takes them, or None when
    ``cls`` is not one (or takes a field by keyword only, or not at all)."""
    from stridecheck.lint import model

    if getattr(model, cls.__name__, None) is not cls or not dataclasses.is_dataclass(cls):
        return None
    fields = dataclasses.fields(cls)
    if not all(f.init and not getattr(f, "kw_only", False) for f in fields):
        return None
    return tuple(f.name for f in fields)


_NOT_MODEL = ()
_FIELDS: dict[type, tuple[str, ...] | None] = {}


class _ModelPickler(pickle.Pickler):
    """Writes each model object as a call of its class on its field values. Reading that back is
    a call of the data class's ``__init__`` per object, several times faster than the data classes'
    own pickling (``__setstate__`` looks up ``dataclasses.fields`` per object; that took two
    thirds of a warm run over the corpus)."""

    def reducer_override(self, obj):
        cls = type(obj)
        names = _FIELDS.get(cls, _NOT_MODEL)
        if names is _NOT_MODEL:
            names = _FIELDS[cls] = _init_fields(cls) if cls.__module__ == "stridecheck.lint.model" else None
        if names is None:
            return NotImplemented
        return cls, tuple([getattr(obj, n) for n in names])


def dumps(obj) -> bytes:
    """``pickle.dumps`` with model objects written as :class:`_ModelPickler` writes them (the
    engine's workers send their models this way: the parent reads them back several times faster)."""
    buf = io.BytesIO()
    _ModelPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


class _ModelUnpickler(pickle.Unpickler):
    """Reads back only what the cache writes: dicts, tuples, strings, numbers, and the plain data
    classes of :mod:`stridecheck.lint.model`. A cache file is in the working tree, where a pull
    request can plant one, and a plain ``pickle.load`` of a planted file runs arbitrary code (its
    name is predictable from the released version); here any other global is refused, and the
    file is treated as a cold start."""

    _BUILTINS = frozenset({"frozenset", "set"})

    def find_class(self, module: str, name: str):
        if module == "stridecheck.lint.model" and not name.startswith("_"):
            from stridecheck.lint import model

            value = getattr(model, name, None)
            if isinstance(value, type):
                return value
        elif module == "builtins" and name in self._BUILTINS:
            return super().find_class(module, name)

        raise pickle.UnpicklingError(f"the cache may not load {module}.{name}")


class Cache:
    def __init__(self, file: Path, entries: dict):
        self.file = file
        self.entries = entries
        self.dirty = False

    @classmethod
    def open(cls, directory: Path, options: AnalysisOptions) -> Cache:
        key = hashlib.blake2b(
            repr((_FORMAT, __version__, builder_fingerprint(), options.cache_key())).encode(),
            digest_size=8,
        ).hexdigest()
        file = Path(directory) / f"models-{__version__}-{key}.pickle"
        entries: dict = {}
        try:
            with open(file, "rb") as fh:
                data = fh.read()
            # Hundreds of thousands of small objects, none of them garbage: the cyclic collector
            # would walk them again and again while they are created (a third of the load).
            gc_was_on = gc.isenabled()
            gc.disable()
            try:
                loaded = _ModelUnpickler(io.BytesIO(data)).load()
            finally:
                if gc_was_on:
                    gc.enable()
            if isinstance(loaded, dict):
                entries = loaded
        except FileNotFoundError:
            pass
        except Exception:  # noqa: BLE001 - a corrupt or foreign cache is only a cold start
            entries = {}
        return cls(file, entries)

    def get(self, key: tuple[str, str | None], digest: bytes):
        entry = self.entries.get(key)
        if entry is not None and entry[0] == digest:
            return entry[1]
        return None

    def put(self, key: tuple[str, str | None], digest: bytes, outcome: tuple) -> None:
        self.entries[key] = (digest, outcome)
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        directory = self.file.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            gitignore = directory / ".gitignore"
            if not gitignore.exists():
                # Keep the cache out of version control without touching the user's .gitignore.
                gitignore.write_text("# Automatically created by stridecheck.\n*\n", encoding="utf-8")
            tag = directory / "CACHEDIR.TAG"
            if not tag.exists():  # https://bford.info/cachedir/ : backup tools skip this directory
                tag.write_text(
                    "Signature: 8a477f597d28d172789f06886806bc55\n"
                    "# This file is a cache directory tag created by stridecheck.\n",
                    encoding="utf-8",
                )
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".models-", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    _ModelPickler(fh, protocol=pickle.HIGHEST_PROTOCOL).dump(self.entries)
                os.replace(tmp, self.file)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return
        self.dirty = False
