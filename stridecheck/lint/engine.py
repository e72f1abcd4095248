"""One lint run: files -> bytes -> (cache | parse in workers) -> models -> rules -> selected findings.

The steps, in order:

1. Read each file's bytes. A discovered file whose bytes never mention ``triton`` is skipped
   before anything else (most files of a real repository). Files too large, holding a NUL byte,
   undecodable in their declared encoding (PEP 263 cookie, UTF-8 by default) or unreadable get
   one ``SC000 parse-error`` finding with the reason (for files that pass the prefilter or were
   named explicitly).
2. Models come from the cache (keyed by content hash, linter version and analysis options) or
   from :func:`stridecheck.lint.analysis.build_module_model`, run in worker processes
   (``ProcessPoolExecutor``, chunked) for large runs and serially for small ones.
   ``ParseFailure`` becomes SC000 at its line; any other exception becomes an internal error
   naming the file, and the run goes on.
3. :func:`stridecheck.lint.analysis.check_tree` judges all models together, so cross-file rules
   see the whole tree even when most models came from the cache.
4. Suppression comments, then selection (select / ignore / per-file-ignores / tiers), then a
   deterministic order (path, line, column, code).
"""

from __future__ import annotations

import ast
import gc
import hashlib
import io
import multiprocessing
import os
import pickle
import sys
import threading
import time
import tokenize
import traceback
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from stridecheck import __version__
from stridecheck.lint import analysis, catalogue
from stridecheck.lint.analysis import AnalysisOptions
from stridecheck.lint.config import DEFAULT_MAX_FILE_SIZE
from stridecheck.lint.model import Finding, ModuleModel, Span
from stridecheck.lint.suppression import apply_suppressions, parse_suppressions, unused_suppressions

PREFILTER = b"triton"
SERIAL_BELOW = 16  # fewer files to parse than this: starting workers costs more than it saves


@dataclass(frozen=True, slots=True)
class FileInput:
    path: str  # as reported
    explicit: bool = False  # named on the command line (or standard input)
    data: bytes | None = None  # the content, when not read from `path` (stdin, --diff rounds)
    cacheable: bool = True


@dataclass(frozen=True)
class RuleSelection:
    """One source of rule selectors (the configuration, or the command line).

    ``select`` None leaves the rules selected before this source in place (ruff's semantics);
    a tuple replaces them. ``extend_select`` and ``ignore`` adjust.
    """

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass
class RunOptions:
    select: tuple[str, ...] | None = None  # None: every default-tier rule
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    # Sources of selectors applied in order, lowest priority first (configuration, then command
    # line); when given, they replace select / extend_select / ignore above.
    selections: tuple[RuleSelection, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    preview: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    analysis: AnalysisOptions = field(default_factory=AnalysisOptions)
    jobs: int | None = None  # None: the CPU count
    cache_dir: Path | None = None  # None: no cache
    root: Path = field(default_factory=Path.cwd)  # project root (per-file-ignores are relative to it)


@dataclass
class RunResult:
    findings: list[Finding]  # reported: selected, not suppressed, sorted
    files_checked: int
    files_parsed: int  # build_module_model calls made (0 on a warm run over an unchanged tree)
    internal_errors: list[tuple[str, str]]  # (path, message)
    elapsed: float  # seconds
    raw: dict[str, bytes] = field(default_factory=dict)  # bytes of every file that passed the prefilter
    encodings: dict[str, str] = field(default_factory=dict)

    def text(self, path: str) -> str | None:
        """The decoded source of ``path`` (None when it was not read or is not decodable)."""
        data = self.raw.get(path)
        if data is None:
            return None
        try:
            return data.decode(self.encodings.get(path, "utf-8"))
        except (UnicodeDecodeError, LookupError):
            return None


# --------------------------------------------------------------------------- selection


class Selection:
    """Which codes are reported for which path.

    As ruff resolves its rules: the rules on by default are the default-tier ones; each source
    of selectors (configuration, then command line) is applied in turn. A source with ``select``
    replaces the rules before it, one without adjusts them (``extend-select`` adds, ``ignore``
    removes). Within a source the most specific selector wins (``ALL`` < a prefix < a longer
    prefix < a code), and at equal specificity ``ignore`` wins. So ``--select SC006`` reports
    SC006 even where the configuration ignores it, and ``--extend-select SC100`` adds to the
    configuration's selection. ``per-file-ignores`` always win. ``opt-in`` rules (SC100) are
    selected only by their full code; ``preview`` rules and preview-tier findings are reported
    only with ``preview``.
    """

    def __init__(self, options: RunOptions):
        self.preview = options.preview
        self.root = Path(os.path.abspath(options.root))
        self.per_file = [
            (pathspec.GitIgnoreSpec.from_lines([pattern]), codes)
            for pattern, codes in options.per_file_ignores.items()
        ]
        self._rules = catalogue.load()
        self._per_path: dict[str, tuple[str, ...]] = {}
        sources = options.selections or (RuleSelection(options.select, options.extend_select, options.ignore),)
        self.enabled_codes = self._resolve(sources)

    @staticmethod
    def _specificity(selector: str) -> int:
        return 0 if selector == "ALL" else len(selector)

    def _matches(self, selector: str, code: str, selecting: bool) -> bool:
        if selecting and self._rules[code].tier == "opt-in":
            return selector == code
        return selector == "ALL" or code.startswith(selector)

    def _resolve(self, sources: Sequence[RuleSelection]) -> frozenset[str]:
        enabled = {code for code, rule in self._rules.items() if rule.tier in ("default", "preview")}
        for source in sources:
            updates: dict[str, bool] = {}
            selectors = [(sel, True) for sel in (source.select or ()) + source.extend_select]
            selectors += [(sel, False) for sel in source.ignore]
            # Least specific first, so a more specific selector overrides; ignore after select.
            for sel, on in sorted(selectors, key=lambda s: (self._specificity(s[0]), not s[1])):
                for code in self._rules:
                    if self._matches(sel, code, on):
                        updates[code] = on
            if source.select is not None:
                enabled = {code for code, on in updates.items() if on}
            else:
                enabled |= {code for code, on in updates.items() if on}
                enabled -= {code for code, on in updates.items() if not on}
        return frozenset(enabled)

    def code_enabled(self, code: str) -> bool:
        rule = self._rules.get(code)
        if rule is None:
            return True  # a code the catalogue does not know cannot be deselected
        if rule.tier == "preview" and not self.preview:
            return False
        return code in self.enabled_codes

    def _file_ignores(self, path: str) -> tuple[str, ...]:
        if path not in self._per_path:
            codes: list[str] = []
            if self.per_file:
                try:
                    rel = Path(os.path.abspath(path)).relative_to(self.root).as_posix()
                except ValueError:
                    rel = Path(path).as_posix()
                for spec, ignored in self.per_file:
                    if spec.match_file(rel):
                        codes.extend(ignored)
            self._per_path[path] = tuple(codes)
        return self._per_path[path]

    def enabled(self, finding_or_code: Finding | str, path: str) -> bool:
        if isinstance(finding_or_code, Finding):
            code = finding_or_code.code
            if finding_or_code.preview and not self.preview:
                return False
        else:
            code = finding_or_code
        if not self.code_enabled(code):
            return False
        return not any(code == c or code.startswith(c) or c == "ALL" for c in self._file_ignores(path))


# --------------------------------------------------------------------------- reading


class BadInput(Exception):
    """A file that cannot be checked: the reason, and where in the file when known."""

    def __init__(self, reason: str, line: int = 1, column: int = 1):
        super().__init__(reason)
        self.reason, self.line, self.column = reason, line, column


def detect_encoding(data: bytes) -> str:
    """The file's declared encoding (PEP 263 cookie or BOM; UTF-8 by default).

    Raises :class:`BadInput` for an unknown or contradictory declaration.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise BadInput(f"invalid encoding declaration: {exc.msg if hasattr(exc, 'msg') else exc}", exc.lineno or 1)
    return encoding


def decode_source(data: bytes, max_size: int = DEFAULT_MAX_FILE_SIZE) -> tuple[str, str]:
    """``(text, encoding)`` of a source file's bytes; raises :class:`BadInput` with the reason."""
    if len(data) > max_size:
        raise BadInput(
            f"file is {len(data):,} bytes, larger than the limit of {max_size:,} bytes "
            "(max-file-size); not checked"
        )
    nul = data.find(b"\0")
    if nul >= 0:
        raise BadInput("file contains a NUL byte (binary data?); not checked", *_position(data, nul))
    deep = _too_deep(data)
    if deep is not None:
        what, at = deep
        raise BadInput(f"{what}: too deeply nested to parse safely; not checked", *_position(data, at))
    encoding = detect_encoding(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"not valid {encoding}: byte 0x{data[exc.start]:02x} cannot be decoded ({exc.reason}); not checked",
            *_position(data, exc.start),
        ) from None
    return text, encoding


# libcst's native parser (which checks named files without `triton` and the result of `--fix`;
# the analysis parses with `ast`) overflows its stack (a segfault, not an exception) on very deep
# nesting: measured crashing at 3,000 nested parentheses. CPython itself refuses more than 200 nested
# brackets, so a run of 200 openers is invalid Python anyway; long runs of unary operators parse
# in CPython up to its own limit, so those get a wider margin. Substring tests keep this check at
# memchr speed on every file.
_DEEP_RUNS = ((b"(", 200), (b"[", 200), (b"{", 200), (b"-", 1000), (b"+", 1000), (b"~", 1000))


def _too_deep(data: bytes) -> tuple[str, int] | None:
    """(what, byte offset) of the first run of openers or unary operators too long to parse."""
    for char, n in _DEEP_RUNS:
        at = data.find(char * n)
        if at >= 0:
            return f"{n} or more `{char.decode()}` in a row", at
    return None


def _position(data: bytes, at: int) -> tuple[int, int]:
    at = max(at, 0)
    return data.count(b"\n", 0, at) + 1, at - (data.rfind(b"\n", 0, at) + 1) + 1


def import_root(directory: str, _known: dict[str, bool] | None = None) -> str | None:
    """The directory a module in ``directory`` is imported from: above the topmost package
    (a directory holding ``__init__.py``) reached by climbing through directories whose names are
    identifiers. Directories without ``__init__.py`` on the way are namespace packages of it
    (``sglang/srt/layers/x.py`` under ``sglang/__init__.py`` is ``sglang.srt.layers.x``). None when
    no package is above: a script, or a tree of namespace packages only."""

    def is_pkg(d: str) -> bool:
        if _known is not None and d in _known:
            return _known[d]
        got = os.path.isfile(os.path.join(d, "__init__.py"))
        if _known is not None:
            _known[d] = got
        return got

    top = None
    d = os.path.abspath(directory)
    while True:
        if not os.path.basename(d).isidentifier():
            break
        if is_pkg(d):
            top = d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return os.path.dirname(top) if top is not None else None


def module_name(path: str, _known: dict[str, bool] | None = None) -> str | None:
    """The dotted module name of ``path``: its stem, prefixed by the directories from its import
    root down (:func:`import_root`); the bare stem for a file in no package. None for a name that is
    not an identifier."""
    p = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(p))[0]
    root = import_root(os.path.dirname(p), _known)
    rel = os.path.relpath(os.path.dirname(p), root).split(os.sep) if root is not None else []
    parts = [x for x in rel if x not in ("", ".")] + ([] if stem == "__init__" else [stem])
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


# --------------------------------------------------------------------------- parsing (workers)

# Outcomes of one file's analysis; plain tuples so they pickle cheaply between processes.
#   ("model", ModuleModel) | ("parse", reason, line, column) | ("internal", message)


# The model builders recurse over expression trees; real generated kernels nest deeper than
# CPython's default limit of 1,000 frames. Each file is analysed on a thread with a large stack
# (reserved, committed only as used) under a higher limit, so depth is not a crash or a failure.
DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 20_000


def build_one(task: tuple[str, str, str | None, AnalysisOptions, bool]) -> tuple:
    """Analyse one file: ``("model", ModuleModel)``, ``("parse", reason, line, column)`` or
    ``("internal", message)``; never raises."""
    outcome: list[tuple] = []
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
    try:
        old_size = threading.stack_size(DEEP_STACK_BYTES)
        try:
            worker = threading.Thread(target=lambda: outcome.append(_build_one(task)), name="stridecheck-build")
            worker.start()
        finally:
            threading.stack_size(old_size)
        worker.join()
    except (RuntimeError, ValueError):  # no threads or no large stacks here: analyse in place
        outcome.append(_build_one(task))
    finally:
        sys.setrecursionlimit(old_limit)
    return outcome[0] if outcome else ("internal", "the analysis thread ended without a result")


def _build_one(task: tuple[str, str, str | None, AnalysisOptions, bool]) -> tuple:
    path, text, module, options, syntax_only = task
    try:
        if syntax_only:
            return _syntax_check(text, path, module)
        return ("model", analysis.build_module_model(text, path=path, module=module, options=options))
    except analysis.ParseFailure as exc:
        located = _python_location(text) or ("parse", exc.reason, exc.line, exc.column)
        return _newer_syntax(text, located[2], located[3]) or located
    except RecursionError:
        return ("internal", "RecursionError: the file nests expressions too deeply to analyse")
    except Exception as exc:  # noqa: BLE001 - one file's failure must not stop the run
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
        return ("internal", f"{type(exc).__name__}: {exc}{where}")


def _python_location(text: str) -> tuple | None:
    """Python's own account of a syntax error (``("parse", reason, line, column)``), or None.

    libcst's parser (the syntax-only check of named files without ``triton``) reports where its
    grammar gave up, which can be a line or more after the mistake (``def f(:`` is blamed on the
    next line); CPython's points at the token users know from their editor. The analysis parses
    with ``ast`` and so already gives CPython's account. Called only for files that failed to
    parse, so it costs nothing on clean runs; when CPython accepts the file (syntax newer than
    the running Python's that libcst reads), libcst's account stands."""
    try:
        compile(text, "<stridecheck>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        if exc.lineno:
            return ("parse", f"syntax error: {exc.msg}", exc.lineno, max(exc.offset or 1, 1))
    except (ValueError, MemoryError, RecursionError):
        pass
    return None


# Syntax a newer Python reads and an older one refuses: libcst node kind -> (version, what).
_NEWER_SYNTAX = {
    "TryStar": ((3, 11), "`except*` (PEP 654)"),
    "TypeAlias": ((3, 12), "a `type` statement (PEP 695)"),
    "TypeParameters": ((3, 12), "type parameters (PEP 695)"),
}


def _newer_syntax(text: str, line: int, column: int) -> tuple | None:
    """For a file the running Python cannot parse: when libcst (whose grammar reads the newer
    Pythons') can, the file is valid newer Python, and the SC000 says which version the analysis
    needs instead of calling it a syntax error. None when the file is simply not valid Python.
    Runs only for files that failed to parse."""
    import libcst

    try:
        module = libcst.parse_module(text)
    except Exception:  # noqa: BLE001 - libcst's refusal means the syntax error stands
        return None
    running = sys.version_info[:2]
    needed: list[tuple[tuple[int, int], str]] = []

    class _Newer(libcst.CSTVisitor):
        def on_visit(self, node: libcst.CSTNode) -> bool:
            kind = _NEWER_SYNTAX.get(type(node).__name__)
            if kind is not None:
                needed.append(kind)
            if type(node).__name__ == "TypeParam" and getattr(node, "default", None) is not None:
                needed.append(((3, 13), "a type parameter default (PEP 696)"))
            return True

    module.visit(_Newer())
    needed = [n for n in needed if n[0] > running]
    this = f"this is Python {running[0]}.{running[1]}"
    if needed:
        version, what = max(needed)
        reason = f"needs Python {version[0]}.{version[1]}+ to analyse: it uses {what}; {this}"
    else:
        reason = f"needs a Python newer than {running[0]}.{running[1]} to analyse (valid newer syntax); {this}"
    return ("parse", reason, line, column)


def _syntax_check(text: str, path: str, module: str | None) -> tuple:
    """A file named explicitly that never mentions ``triton``: it holds no kernel and no launch
    of one that the prefilter would let through, so only its syntax is checked, with libcst: it
    reads syntax newer than the running Python, and a file no analysis reads is not failed for
    that (the analysis itself parses with the running Python's ``ast``)."""
    import libcst

    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError as exc:
        return _python_location(text) or ("parse", f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1)
    except (ValueError, RecursionError, MemoryError) as exc:
        return ("parse", f"cannot parse: {exc}", 1, 1)
    return ("model", ModuleModel(path, module))


def _build_chunk(tasks: list) -> bytes:
    """The outcomes of ``tasks``, pickled in the worker as the cache pickles models (the parent
    reads that back several times faster than the data classes' own pickling)."""
    from stridecheck.lint.cache import dumps

    return dumps([build_one(t) for t in tasks])


# A worker's trees and models are many small objects, nearly all alive until its file is done and
# next to none in garbage cycles: at the default threshold (700) the cyclic collector passed about
# 1,300 times over 80 files, freeing a few hundred objects in all, for a tenth of the workers' time.
# The workers collect young objects after 100,000 allocations instead.
WORKER_GC_THRESHOLD = (100_000, 10, 10)


def _worker_start() -> None:
    gc.set_threshold(*WORKER_GC_THRESHOLD)


def _build_all(tasks: list, jobs: int) -> list:
    if jobs <= 1 or len(tasks) < SERIAL_BELOW:
        return [build_one(t) for t in tasks]
    # Fork where it exists: workers inherit the imported modules instead of importing again.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods and sys.platform != "darwin" else None)
    # Big files first, so no worker is left with one huge file at the end.
    order = sorted(range(len(tasks)), key=lambda i: -len(tasks[i][1]))
    chunk = max(1, min(32, len(tasks) // (jobs * 8)))
    chunks = [[tasks[i] for i in order[k : k + chunk]] for k in range(0, len(order), chunk)]
    results: list = [None] * len(tasks)
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_start) as pool:
            futures = [(k, pool.submit(_build_chunk, c)) for k, c in zip(range(0, len(order), chunk), chunks)]
            for k, future in futures:
                for i, r in zip(order[k : k + chunk], pickle.loads(future.result())):
                    results[i] = r
    except BrokenProcessPool:
        # A worker died (out of memory, a native crash in the parser): redo each remaining file
        # in a process of its own, so the file at fault is named and the others still checked.
        for i, t in enumerate(tasks):
            if results[i] is None:
                results[i] = _isolated(t, context)
    return results


def _isolated(task: tuple, context) -> tuple:
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            return pool.submit(build_one, task).result()
    except BrokenProcessPool:
        return ("internal", "the parser process died on this file (a crash in native code, or out of memory)")


# --------------------------------------------------------------------------- the run


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def lint(inputs: Sequence[FileInput], options: RunOptions) -> RunResult:
    """Lint ``inputs`` as one tree. Never raises for a bad file; see the module docstring."""
    try:
        return _lint(inputs, options)
    finally:
        gc.unfreeze()


def _lint(inputs: Sequence[FileInput], options: RunOptions) -> RunResult:
    from stridecheck.lint.cache import Cache

    started = time.perf_counter()
    jobs = options.jobs or os.cpu_count() or 1
    cache = Cache.open(options.cache_dir, options.analysis) if options.cache_dir is not None else None
    # The models of a large tree are about a million small objects that live until the run ends:
    # the cyclic collector would walk them at every full collection while the rules run (a third
    # of a warm run over the corpus). Frozen here and below, unfrozen when the run ends.
    gc.freeze()
    raw: dict[str, bytes] = {}
    encodings: dict[str, str] = {}
    outcomes: dict[str, tuple] = {}
    tasks: list = []
    task_keys: list = []
    errors: list[tuple[str, str]] = []
    packages: dict[str, bool] = {}

    def bad(path: str, exc: BadInput) -> None:
        outcomes[path] = ("parse", exc.reason, exc.line, exc.column)

    for item in inputs:
        path = item.path
        data = item.data
        if data is None:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                outcomes[path] = ("parse", f"cannot read file: {exc.strerror or exc}; not checked", 1, 1)
                continue
        if not item.explicit and PREFILTER not in data:
            continue
        raw[path] = data
        try:
            text, encoding = decode_source(data, options.max_file_size)
        except BadInput as exc:
            bad(path, exc)
            continue
        except Exception as exc:  # noqa: BLE001 - one file's failure must not stop the run
            outcomes[path] = ("internal", f"reading the file failed: {type(exc).__name__}: {exc}")
            continue
        encodings[path] = encoding
        module = module_name(path, packages)
        key = (path, module)
        digest = _digest(data)
        if cache is not None and item.cacheable:
            hit = cache.get(key, digest)
            if hit is not None:
                outcomes[path] = hit
                continue
        tasks.append((path, text, module, options.analysis, PREFILTER not in data))
        task_keys.append((key, digest, item.cacheable))

    for (key, digest, cacheable), outcome in zip(task_keys, _build_all(tasks, jobs)):
        outcomes[key[0]] = outcome
        if cache is not None and cacheable and outcome[0] != "internal":
            cache.put(key, digest, outcome)

    models: list[ModuleModel] = []
    found: list[Finding] = []
    for path in sorted(outcomes):
        outcome = outcomes[path]
        if outcome[0] == "model":
            models.append(outcome[1])
        elif outcome[0] == "parse":
            _, reason, line, column = outcome
            span = Span(line, column, line, column + 1)
            found.append(catalogue.make_finding("SC000", path, span, reason=reason.removesuffix("; not checked")))
        else:
            errors.append((path, outcome[1]))

    gc.freeze()
    if models:
        try:
            rule_errors: list[str] = []
            # Only the rules that can report run; all of them where SC100 reports suppressions
            # that matched nothing (a `# noqa: SC006` is used only if SC006 ran).
            selection = Selection(options)
            wanted = None if selection.code_enabled("SC100") else frozenset(
                code for code in catalogue.load() if selection.code_enabled(code))
            found.extend(analysis.check_tree(models, options.analysis, rule_errors, wanted))
            errors.extend(("<tree>", f"a rule failed: {message}") for message in rule_errors)
        except Exception as exc:  # noqa: BLE001 - report what we have, then exit 2
            tb = traceback.extract_tb(exc.__traceback__)
            where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
            errors.append(("<tree>", f"the rules failed: {type(exc).__name__}: {exc}{where}"))

    if cache is not None:
        cache.save()

    result = RunResult([], len(inputs), len(tasks), errors, 0.0, raw, encodings)
    result.findings = _select_and_suppress(found, result, options)
    result.elapsed = time.perf_counter() - started
    return result


def _select_and_suppress(found: list[Finding], result: RunResult, options: RunOptions) -> list[Finding]:
    selection = Selection(options)
    by_path: dict[str, list[Finding]] = {}
    for f in found:
        by_path.setdefault(f.path, []).append(f)
    want_sc100 = selection.code_enabled("SC100")
    paths = set(by_path)
    if want_sc100:
        paths |= {p for p, data in result.raw.items() if b"stridecheck" in data}
    reported: list[Finding] = []
    for path in paths:
        findings = by_path.get(path, [])
        data = result.raw.get(path)
        if data is not None and b"stridecheck" in data:
            text = result.text(path)
            suppressions = parse_suppressions(text) if text is not None else []
            # Suppression is judged against every finding the analysis made, selected or not,
            # so `--select SC100` alone still knows which comments are doing their job.
            findings, used = apply_suppressions(findings, suppressions)
            if want_sc100:
                findings += unused_suppressions(path, suppressions, used)
        reported.extend(f for f in findings if selection.enabled(f, path))
    reported.sort(key=Finding.sort_key)
    return reported


def version_key() -> str:
    return __version__
