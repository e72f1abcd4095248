"""Builds one module's :class:`~stridecheck.lint.model.ModuleModel`: kernels and launches.

``build_module_model`` parses the source with libcst once (the launch side reads that tree, and
``--fix`` rewrites it), and with Python's ``ast`` for the kernel side (see
:mod:`stridecheck.lint.kernels` for why: source ranges for free, a tenth of the cost).

libcst computes positions by re-generating the code of the whole module, which costs about twice
its parse. The launch side needs the positions of a few nodes only, so it gets a lazy mapping
(:class:`StatementPositions`): the line range of any statement comes from the paired ``ast``
statement (no code generation), and the positions of a launch, an argument or a checked comparison
from re-generating the one statement (or ``if``/``for``/``while``/``with`` header) being walked,
shifted by that statement's line and column, known from ``ast``; larger units only as a fallback.

A module with no launch hint and no allocating function is not parsed with libcst at all: its
imports and kernel aliases are read from the ``ast`` tree (``launches.module_level_from_ast``).
libcst stays the parser of every module that holds a launch, and of ``--fix``, which rewrites
code keeping its formatting.
"""

from __future__ import annotations

import ast
import re
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

    The first lookup computes the positions of the innermost ``def`` around each launch hint
    (``](`` / ``.run(``, the only places where the launch side reads nodes), or of the top-level
    statement holding a hint outside any ``def``. A top-level statement (an import, an alias) is
    computed alone when one of its nodes is asked for, and any ``def`` gets its range from ``ast``
    without code generation. Each unit is re-generated alone (as a one-statement module) and its
    ranges are shifted by its first line and column, which ``ast`` gives for free. Any other node
    raises ``KeyError`` (the launch side then uses the span 1:1). Falls back to the whole module's
    ``PositionProvider`` when the two parses disagree on the statement structure.
    """

    def __init__(self, module: cst.Module, tree: ast.Module, source: str):
        self._module = module
        self._source = source
        self._done: list[tuple[Mapping, int, int]] = []  # (positions of one statement, line, column shift)
        self._def_pairs: list = []
        self._owners: dict[int, cst.BaseStatement] | None = None
        self._pending: list[tuple[cst.BaseStatement, int, int]] | None = None  # (stmt, first, last line)
        self._tree = tree
        self._hinted_done = False
        self._defs: dict[int, CodeRange] | None = None  # id(libcst FunctionDef) -> range, from ast
        # id(libcst statement) -> (first line, character column, last line), from the paired ast
        # statements; empty when the two trees do not pair up
        self._stmt_at: dict[int, tuple[int, int, int]] | None = None
        self._small: dict = {}  # node -> range, from statements re-generated alone
        self._small_done: set[int] = set()
        self._lines: list[str] | None = None
        self._whole_done = False

    def _def_ranges(self) -> dict[int, CodeRange]:
        """Ranges of every ``def``, matched in source order between the two trees (no codegen)."""
        if self._defs is None:
            ast_defs = [n for n in _ast_statements(self._tree.body)
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            cst_defs = [n for n in _cst_statements(self._module.body) if isinstance(n, cst.FunctionDef)]
            self._defs = {}
            self._def_pairs = []
            if len(ast_defs) == len(cst_defs) and all(
                a.name == c.name.value for a, c in zip(ast_defs, cst_defs)
            ):
                lines = self._source.splitlines()
                self._def_pairs = list(zip(ast_defs, cst_defs))
                for a, c in zip(ast_defs, cst_defs):
                    self._defs[id(c)] = CodeRange(
                        CodePosition(a.lineno, _chars(lines, a.lineno, a.col_offset)),
                        CodePosition(a.end_lineno, _chars(lines, a.end_lineno, a.end_col_offset)),
                    )
        return self._defs

    def _statement_places(self) -> dict[int, tuple[int, int, int]]:
        """Every libcst statement (nested ones too) paired in source order with its ``ast``
        statement(s): a ``SimpleStatementLine`` with the run of small statements it holds."""
        if self._stmt_at is None:
            places: dict[int, tuple[int, int, int]] = {}
            # `except` clauses are statements' parts in libcst, items of the walk in ast
            ast_stmts = [a for a in _ast_statements(self._tree.body) if not isinstance(a, ast.ExceptHandler)]
            lines = self._ast_lines()
            i = 0
            for c in _cst_statements(self._module.body):
                n = len(c.body) if isinstance(c, cst.SimpleStatementLine) else 1
                if i + n > len(ast_stmts):
                    places = {}
                    break
                first, last = ast_stmts[i], ast_stmts[i + n - 1]
                small = isinstance(c, (cst.SimpleStatementLine, cst.BaseSmallStatement))
                if small != all(isinstance(a, _AST_SMALL) for a in ast_stmts[i : i + n]):
                    places = {}
                    break
                places[id(c)] = (first.lineno, _chars(lines, first.lineno, first.col_offset),
                                 last.end_lineno or last.lineno)
                i += n
            if i != len(ast_stmts):
                places = {}
            self._stmt_at = places
        return self._stmt_at

    def _ast_lines(self) -> list[str]:
        if self._lines is None:
            # Split as ast numbers lines (str.splitlines also splits at form feeds and more).
            src = self._source
            self._lines = src.split("\n") if "\r" not in src else re.split(r"\r\n|\r|\n", src)
        return self._lines

    def lines(self, node) -> tuple[int, int] | None:
        """First and last line of a statement, from ``ast`` (no code generation); None when unknown.

        These cover every token of the statement, which is all that a test for launch hints on its
        lines needs."""
        at = self._statement_places().get(id(node))
        return None if at is None else (at[0], at[2])

    def range_in(self, node, stmt) -> CodeRange:
        """``self[node]``, where ``node`` is expected inside the statement ``stmt`` (a line of
        small statements, or the header of an ``if``/``for``/``while``/``with``): only that
        statement (or header) is re-generated, instead of the whole function around it."""
        r = self._small.get(node)
        if r is not None:
            return r
        if stmt is not None and id(stmt) not in self._small_done:
            self._small_done.add(id(stmt))
            self._compute_statement(stmt)
            r = self._small.get(node)
            if r is not None:
                return r
        return self[node]

    def _compute_statement(self, stmt) -> None:
        at = self._statement_places().get(id(stmt))
        if at is None:
            return
        line, column, last = at
        self._ast_lines()
        if column and not _indentation_relative(self._lines[line - 1 : last], column):
            return  # columns of some line would not shift by the indentation: use the whole def
        if isinstance(stmt, cst.SimpleStatementLine):
            unit = stmt
        elif isinstance(stmt, (cst.If, cst.For, cst.While, cst.With)):
            text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
            if isinstance(stmt, cst.If) and text[column:].startswith("elif"):
                return  # generated alone it would read `if`: its columns would be off
            # The header alone: the body's statements are not re-generated.
            changes = {"body": cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])}
            if not isinstance(stmt, cst.With):
                changes["orelse"] = None
            unit = stmt.with_changes(**changes)
        else:
            return
        sub = self._module.with_changes(header=(), body=(unit,), footer=())
        pos = MetadataWrapper(sub, unsafe_skip_copy=True).resolve(PositionProvider)
        shift = line - pos[unit].start.line
        for node, r in pos.items():
            if node is unit or node is sub:
                continue
            if shift or column:
                r = CodeRange(CodePosition(r.start.line + shift, r.start.column + column),
                              CodePosition(r.end.line + shift, r.end.column + column))
            self._small[node] = r

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

    def _top_level_owner(self, node):
        if self._owners is None:
            self._owners = {}
            for stmt in self._module.body:
                self._owners[id(stmt)] = stmt
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        self._owners[id(small)] = stmt
        return self._owners.get(id(node))

    def _compute(self, stmt, line: int, column: int = 0, last: int | None = None) -> None:
        """Positions of one statement re-generated alone, shifted to ``line`` (and ``column``:
        a nested ``def`` is generated at column 0; libcst keeps indentation relative)."""
        if stmt is not None and column and last is not None:
            if not _indentation_relative(self._ast_lines()[line - 1 : last], column):
                stmt = None  # a shift by the indentation would misplace some lines: the whole module
        if stmt is None:
            if not self._whole_done:
                self._whole_done = True
                pos = MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
                self._done.insert(0, (pos, 0, 0))
            return
        sub = self._module.with_changes(header=(), body=(stmt,), footer=())
        pos = MetadataWrapper(sub, unsafe_skip_copy=True).resolve(PositionProvider)
        rel = pos[stmt].start.line
        self._done.append((pos, line - rel, column))

    def _lookup(self, node) -> CodeRange | None:
        for pos, shift, cshift in self._done:
            r = pos.get(node)
            if r is not None:
                if shift or cshift:
                    r = CodeRange(CodePosition(r.start.line + shift, r.start.column + cshift),
                                  CodePosition(r.end.line + shift, r.end.column + cshift))
                return r
        return None

    def _compute_hinted(self, hint_lines: set[int]) -> None:
        """Positions of the innermost ``def`` around each hint line (else its top-level statement)."""
        self._def_ranges()
        lines = self._source.splitlines()
        chosen: dict[int, tuple] = {}
        uncovered: set[int] = set()
        for h in hint_lines:
            best = None
            for a, c in self._def_pairs:
                if a.lineno <= h <= (a.end_lineno or a.lineno) and (
                    best is None or a.lineno >= best[0].lineno
                ):
                    best = (a, c)
            if best is None:
                uncovered.add(h)
            else:
                chosen[id(best[1])] = best
        for a, c in chosen.values():
            self._compute(c, a.lineno, _chars(lines, a.lineno, a.col_offset), a.end_lineno)
        rest = []
        for stmt, first, last in self._statements():
            if stmt is not None and any(first <= h <= last for h in uncovered):
                self._compute(stmt, first)
            else:
                rest.append((stmt, first, last))
        self._pending = rest

    def __getitem__(self, node) -> CodeRange:
        r = self._lookup(node)
        if r is not None:
            return r
        if isinstance(node, cst.FunctionDef):
            r = self._def_ranges().get(id(node))
            if r is not None:
                return r
        stmts = self._statements()
        top = self._top_level_owner(node)
        if top is not None:
            # A top-level statement (an import, an alias) or one of its small statements: compute
            # that statement alone, not everything before it.
            for i, (stmt, first, _) in enumerate(self._pending or ()):
                if stmt is top:
                    self._pending.pop(i)
                    self._compute(stmt, first)
                    r = self._lookup(node)
                    if r is not None:
                        return r
                    break
        if not self._hinted_done:
            self._hinted_done = True
            hint_lines = {self._source.count("\n", 0, i) + 1 for i in _hint_offsets(self._source)}
            if stmts and stmts[0][0] is None:
                self._compute(None, 0)
                self._pending = []
            else:
                self._compute_hinted(hint_lines)
            r = self._lookup(node)
            if r is not None:
                return r
        # Anything else lies outside every launcher and every top-level statement the launch side
        # reads (or is not a node of this module at all): computing the rest of the module to
        # find out would cost more than the parse, so it has no position.
        raise KeyError(node)

    def __iter__(self) -> Iterator:
        return iter(())

    def __len__(self) -> int:
        return 0


# ast statements that libcst holds in a SimpleStatementLine (or a one-line suite)
_AST_SMALL = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Pass,
              ast.Break, ast.Continue, ast.Delete, ast.Import, ast.ImportFrom, ast.Global,
              ast.Nonlocal, ast.Assert) + ((ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ())


def _indentation_relative(lines: list[str], column: int) -> bool:
    """Whether a statement re-generated alone at column 0 has every position ``column`` to the left
    of the original: libcst re-generates indentation (and continuation lines that begin with it)
    relative to the block, but writes verbatim the text after a backslash continuation, inside a
    triple-quoted string, and a continuation line indented less than the block."""
    prefix = lines[0][:column] if lines else ""
    for i, text in enumerate(lines):
        if text.rstrip("\r").endswith("\\") or '"""' in text or "'''" in text:
            return False
        if i and text.strip() and not text.startswith(prefix):
            return False
    return True


def _chars(lines: list[str], line: int, byte_col: int) -> int:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if text.isascii():
        return byte_col
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def _ast_statements(body):
    """Statements in source order, nested ones included (ast)."""
    for s in body:
        yield s
        for attr in ("body", "handlers", "orelse", "finalbody"):
            sub = getattr(s, attr, None)
            if isinstance(sub, list):
                yield from _ast_statements(sub)
        for case in getattr(s, "cases", ()) or ():
            yield from _ast_statements(case.body)


def _cst_block(suite) -> list:
    if suite is None:
        return []
    body = getattr(suite, "body", ())
    return list(body) if isinstance(body, (list, tuple)) else []


def _cst_statements(body):
    """Statements in source order, nested ones included (libcst), as ``_ast_statements``."""
    for s in body:
        yield s
        if isinstance(s, cst.SimpleStatementLine):
            continue
        if isinstance(s, cst.Match):
            for case in s.cases:
                yield from _cst_statements(_cst_block(case.body))
            continue
        yield from _cst_statements(_cst_block(getattr(s, "body", None)))
        for h in getattr(s, "handlers", ()) or ():
            yield from _cst_statements(_cst_block(h.body))
        orelse = getattr(s, "orelse", None)
        while orelse is not None:
            if isinstance(orelse, cst.If):  # elif: ast nests it as an If in orelse
                yield orelse
                yield from _cst_statements(_cst_block(orelse.body))
                orelse = orelse.orelse
            else:
                yield from _cst_statements(_cst_block(orelse.body))
                orelse = None
        fin = getattr(s, "finalbody", None)
        if fin is not None:
            yield from _cst_statements(_cst_block(fin.body))


def _hint_offsets(source: str) -> list[int]:
    import re

    return [m.start() for m in re.finditer(r"\]\s*\(|\.run\s*\(", source)]


def _parse_ast(source: str) -> ast.Module:
    """``ast.parse(source)``; raises :class:`~stridecheck.lint.analysis.ParseFailure`."""
    from stridecheck.lint.analysis import ParseFailure

    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise ParseFailure(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseFailure(f"cannot parse: {exc}") from None


def build_module_model(source: str, *, path: str, module: str | None, options) -> ModuleModel:
    """The model of one module: every ``@triton.jit`` function and every launch.

    ``source`` is the file's text, ``path`` where it was found (kept as given), ``module`` its
    dotted name within the linted tree (for relative imports), ``options`` an
    :class:`~stridecheck.lint.analysis.AnalysisOptions`.

    Raises :class:`~stridecheck.lint.analysis.ParseFailure` (reason, 1-based line and column)
    when the source is not valid Python.
    """
    from stridecheck.lint.analysis import ParseFailure

    if _launches is not None and not _launches.may_hold_launch_or_allocator(source):
        # No launch and no allocating function to read: what the launch side would take from
        # this module (imports, kernel aliases) is read from the `ast` tree, without libcst.
        tree = _parse_ast(source)
        model = ModuleModel(path=path, module=module)
        model.kernels = build_kernels(tree, source, options)
        info = _launches.module_level_from_ast(tree, module_name=module, path=path)
        model.imports = dict(info.imports)
        model.kernel_aliases = dict(info.kernel_aliases)
        return model
    try:
        cst_module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        reason = f"syntax error: {exc.message}"
        raise ParseFailure(reason, exc.raw_line, exc.raw_column + 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseFailure(f"cannot parse: {exc}") from None
    tree = _parse_ast(source)

    model = ModuleModel(path=path, module=module)
    model.kernels = build_kernels(tree, source, options)
    if _launches is not None:
        positions = StatementPositions(cst_module, tree, source)
        info = _launches.collect(cst_module, positions, source, module_name=module, path=path)
        model.launches = list(info.launches)
        model.imports = dict(info.imports)
        model.kernel_aliases = dict(info.kernel_aliases)
        model.allocators = tuple(getattr(info, "allocators", ()))
        model.contiguous_returns = tuple(getattr(info, "contiguous_returns", ()))
    return model
