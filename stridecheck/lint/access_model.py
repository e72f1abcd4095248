"""Builds one module's :class:`~stridecheck.lint.model.ModuleModel`: kernels and launches.

``build_module_model`` parses the source with libcst once (the launch side reads that tree, and
``--fix`` rewrites it), and with Python's ``ast`` for the kernel side (see
:mod:`stridecheck.lint.kernels` for why: source ranges for free, a tenth of the cost).

libcst computes positions by re-generating the code of the whole module, which costs about twice
its parse. The launch side needs the positions of a few nodes only, so it gets a lazy mapping
(:class:`StatementPositions`) that computes positions one top-level statement at a time, for the
statements that hold a launch, and shifts them by the statement's line, known from ``ast``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from stridecheck.lint.kernels import build_kernels
from stridecheck.lint.model import ModuleModel

try:  # the launch side (another module of this package); absent in early checkouts
    from stridecheck.lint import launches as _launches
except ImportError:  # pragma: no cover
    _launches = None

__all__ = ["build_module_model", "StatementPositions"]


class StatementPositions(Mapping):
    """libcst node -> ``CodeRange`` for one module, computed per top-level statement on demand.

    A lookup first computes the positions of the top-level statements whose lines hold a launch
    hint (``](`` / ``.run(``, where the launch side looks), then, if the node is still unknown,
    of all remaining statements. Each statement is re-generated alone (as a one-statement module)
    and its ranges are shifted by the statement's first line, which ``ast`` gives for free.
    Falls back to the whole module's ``PositionProvider`` when the two parses disagree on the
    statement count.
    """

    def __init__(self, module: cst.Module, tree: ast.Module, source: str):
        self._module = module
        self._source = source
        self._done: list[tuple[Mapping, int]] = []  # (positions of one statement, line shift)
        self._pending: list[tuple[cst.BaseStatement, int, int]] | None = None  # (stmt, first, last line)
        self._tree = tree
        self._hinted_done = False

    def _statements(self) -> list[tuple[cst.BaseStatement, int, int]]:
        if self._pending is None:
            out = []
            body = self._tree.body
            i = 0
            ok = True
            for stmt in self._module.body:
                n = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
                if i + n > len(body):
                    ok = False
                    break
                first, last = body[i], body[i + n - 1]
                out.append((stmt, first.lineno, last.end_lineno or last.lineno))
                i += n
            if not ok or i != len(body):
                out = [(None, 0, 0)]  # sentinel: use the whole module
            self._pending = out
        return self._pending

    def _compute(self, stmt, line: int) -> None:
        if stmt is None:
            pos = MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
            self._done.append((pos, 0))
            return
        sub = self._module.with_changes(header=(), body=(stmt,), footer=())
        pos = MetadataWrapper(sub, unsafe_skip_copy=True).resolve(PositionProvider)
        rel = pos[stmt].start.line
        self._done.append((pos, line - rel))

    def _lookup(self, node) -> CodeRange | None:
        for pos, shift in self._done:
            r = pos.get(node)
            if r is not None:
                if shift:
                    r = CodeRange(CodePosition(r.start.line + shift, r.start.column),
                                  CodePosition(r.end.line + shift, r.end.column))
                return r
        return None

    def __getitem__(self, node) -> CodeRange:
        r = self._lookup(node)
        if r is not None:
            return r
        stmts = self._statements()
        if not self._hinted_done:
            self._hinted_done = True
            hint_lines = {self._source.count("\n", 0, i) + 1 for i in _hint_offsets(self._source)}
            rest = []
            for stmt, first, last in stmts:
                if stmt is not None and any(first <= h <= last for h in hint_lines):
                    self._compute(stmt, first)
                else:
                    rest.append((stmt, first, last))
            self._pending = rest
            r = self._lookup(node)
            if r is not None:
                return r
        while self._pending:
            stmt, first, _ = self._pending.pop(0)
            self._compute(stmt, first)
            r = self._lookup(node)
            if r is not None:
                return r
        raise KeyError(node)

    def __iter__(self) -> Iterator:
        return iter(())

    def __len__(self) -> int:
        return 0


def _hint_offsets(source: str) -> list[int]:
    import re

    return [m.start() for m in re.finditer(r"\]\s*\(|\.run\s*\(", source)]


def build_module_model(source: str, *, path: str, module: str | None, options) -> ModuleModel:
    """The model of one module: every ``@triton.jit`` function and every launch.

    ``source`` is the file's text, ``path`` where it was found (kept as given), ``module`` its
    dotted name within the linted tree (for relative imports), ``options`` an
    :class:`~stridecheck.lint.analysis.AnalysisOptions`.

    Raises :class:`~stridecheck.lint.analysis.ParseFailure` (reason, 1-based line and column)
    when the source is not valid Python.
    """
    from stridecheck.lint.analysis import ParseFailure

    try:
        cst_module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        reason = f"syntax error: {exc.message}"
        raise ParseFailure(reason, exc.raw_line, exc.raw_column + 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseFailure(f"cannot parse: {exc}") from None
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ParseFailure(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseFailure(f"cannot parse: {exc}") from None

    model = ModuleModel(path=path, module=module)
    model.kernels = build_kernels(tree, source, options)
    if _launches is not None:
        positions = StatementPositions(cst_module, tree, source)
        info = _launches.collect(cst_module, positions, source, module_name=module, path=path)
        model.launches = list(info.launches)
        model.imports = dict(info.imports)
        model.kernel_aliases = dict(info.kernel_aliases)
    return model
