"""Launch sites and their launchers: what each launch argument is, as far as the launcher shows.

Entry point (called by ``stridecheck.lint.access_model.build_module_model``)::

    collect(module, positions, source, module_name=None, path=None) -> LaunchInfo

* ``module``: the ``libcst.Module`` of the file.
* ``positions``: libcst's ``PositionProvider`` mapping (node -> ``CodeRange``) for that module;
  only the nodes that become spans are looked up (missing nodes get the span 1:1).
* ``source``: the file's text; a file with no ``](`` and no ``.run(`` has no launch, and then only
  its imports and kernel aliases are read (a handful of top-level statements).
* ``module_name``: the dotted module name (``ModuleModel.module``) used to resolve relative imports;
  ``path`` tells whether the module is a package ``__init__``. Without ``module_name`` a relative
  import is kept with its leading dots and the linker resolves it from the model's path.

It returns a :class:`LaunchInfo` with ``launches`` (every ``kernel[grid](...)`` and
``kernel.run(...)`` in a function, method or at module level), ``imports`` (local name -> dotted
name) and ``kernel_aliases`` (variable -> the name it holds, for ``k = _kernel``,
``k = triton.autotune(...)(_impl)``, ``self.kernel = _kernel``). Nothing here knows which names are
kernels: the linker resolves targets against the index of kernels of the whole tree.

Provenance is tracked per launcher, statement by statement, in order: facts established on both
arms of an ``if`` (or on the arm that does not raise/return) survive it; a loop body may not run,
so its facts survive only where they agree with the facts before it. A fact is:

* a tensor variable is *contiguous* (``.contiguous()``; a fresh ``torch.empty/zeros/ones/full/
  rand*/arange/tensor`` or ``t.new_*`` without a non-default ``memory_format``; ``torch.*_like(t)``
  or ``t.clone()`` only when ``t`` is itself contiguous or ``memory_format=torch.contiguous_format``
  is given, since their default ``preserve_format`` keeps ``t``'s strides; ``view``/``reshape`` of a
  contiguous tensor; a dominating ``assert t.is_contiguous()`` or
  ``if not t.is_contiguous(): raise``), *fresh* (allocated in the launcher);
* an integer variable came from ``t.shape[i]``/``t.size(i)``/tuple unpacking of ``t.shape``
  (``n, v = logits.shape``), ``t.stride(i)``, ``t.numel()``, a product of sizes, or a literal;
* a width check: ``assert``/``if ...: raise`` comparing ``t.size(i)``/``t.shape[i]`` with something.

Beyond the launcher (``ArgOrigin.contiguous_in_module`` only; ``contiguous`` stays the launcher's own
fact): a parameter is contiguous at entry when every call of the launcher in the module (two levels
of callers) passes a contiguous tensor, when a decorator makes the arguments contiguous
(``@input_guard``, ``@ensure_contiguous``), or, for ``ctx.saved_tensors``, when the autograd
``forward`` of the same class saved a contiguous tensor.

Cost: one walk over the statements of the functions that hold a launch, nothing else.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import libcst as cst

from stridecheck.lint.model import ArgOrigin, Launch, OriginKind, Span, WidthCheck

__all__ = ["LaunchInfo", "collect"]

_NO_SPAN = Span(1, 1, 1, 1)
_LAUNCH_HINT = re.compile(r"\]\s*\(|\.run\s*\(")
_ALLOC_HINT = re.compile(r"\b(?:empty|zeros|ones|full|new_\w+|\w+_like)\(")

# Allocation functions whose result is a new, contiguous tensor unless a memory_format says otherwise.
_FRESH_CONTIGUOUS = frozenset(
    {
        "empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange",
        "tensor", "linspace", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor",
    }
)
# Allocations that keep the layout of their source by default (memory_format=torch.preserve_format).
_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like"})
# Views and conversions that are contiguous when their source is (a reshape of a packed tensor is packed).
_KEEPS_CONTIGUITY = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "to",
                               "float", "half", "bfloat16", "int", "long", "cuda", "cpu", "type"})
# Views that keep every element of their source (what was allocated or checked stays so).
_SAME_EXTENT_VIEWS = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "unflatten",
                                "contiguous", "to", "float", "half", "bfloat16"})
# Views whose strides are not those of a packed tensor of their shape.
_STRIDED_VIEWS = frozenset({"transpose", "permute", "t", "narrow", "select", "expand", "expand_as", "movedim",
                            "as_strided", "unfold", "diagonal"})
# Results that share storage with their source, with other strides (the source's "family").
_VIEWS = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "transpose", "permute",
                    "t", "T", "mT", "narrow", "select", "expand", "expand_as", "unflatten", "movedim",
                    "as_strided", "unfold", "split", "chunk", "diagonal", "contiguous", "to", "detach"})


@dataclass(slots=True)
class LaunchInfo:
    launches: list[Launch] = field(default_factory=list)
    imports: dict[str, str] = field(default_factory=dict)
    kernel_aliases: dict[str, str] = field(default_factory=dict)
    allocators: tuple[str, ...] = ()  # module functions that return a fresh contiguous tensor
    contiguous_returns: tuple[str, ...] = ()  # module functions that return a contiguous tensor


@dataclass(frozen=True, slots=True)
class _Tensor:
    contiguous: bool = False
    fresh: bool = False
    family: str | None = None  # the variable whose storage it views (itself when unknown)
    like_of: str | None = None  # torch.*_like(t) / t.clone(): t
    alloc_call: str | None = None  # returned by an imported function (resolved by the linker)
    opaque: bool = False  # returned by a call we know nothing of (a table of data pointers, a view...)
    view: bool = False  # a slice, transpose, permute, expand... made in the launcher: strided for sure


_ANY = frozenset({"*"})  # vetted against every extent: allocated in the launcher


class _State:
    """Facts known at one point of a launcher."""

    __slots__ = ("tensors", "ints", "seqs", "checks", "aliases", "vetted")

    def __init__(self):
        self.tensors: dict[str, _Tensor] = {}
        self.ints: dict[str, ArgOrigin] = {}
        self.seqs: dict[str, cst.BaseExpression] = {}  # name -> tuple/list/dict/lambda expression
        self.checks: dict[tuple, WidthCheck] = {}
        self.aliases: dict[str, str] = {}
        # tensor -> the tensors whose extents it is known to match (`*`: allocated here, or checked)
        self.vetted: dict[str, frozenset[str]] = {}

    def copy(self) -> "_State":
        s = _State()
        s.tensors = dict(self.tensors)
        s.ints = dict(self.ints)
        s.seqs = dict(self.seqs)
        s.checks = dict(self.checks)
        s.aliases = dict(self.aliases)
        s.vetted = dict(self.vetted)
        return s

    def kill(self, name: str) -> None:
        self.tensors.pop(name, None)
        self.ints.pop(name, None)
        self.seqs.pop(name, None)
        self.aliases.pop(name, None)
        self.vetted.pop(name, None)

    @staticmethod
    def meet(states: list["_State"]) -> "_State":
        """Facts that hold on every path."""
        first, rest = states[0], states[1:]
        out = first.copy()
        for s in rest:
            for attr in ("ints", "seqs", "checks", "aliases"):
                mine = getattr(out, attr)
                theirs = getattr(s, attr)
                for key in list(mine):
                    if key not in theirs or theirs[key] is not mine[key] and theirs[key] != mine[key]:
                        del mine[key]
            for key in list(out.tensors):
                a, b = out.tensors[key], s.tensors.get(key)
                if b is None:
                    del out.tensors[key]
                elif a != b:
                    out.tensors[key] = _Tensor(
                        contiguous=a.contiguous and b.contiguous,
                        fresh=a.fresh and b.fresh,
                        family=a.family if a.family == b.family else None,
                        like_of=a.like_of if a.like_of == b.like_of else None,
                    )
            for key in list(out.vetted):
                a, b = out.vetted[key], s.vetted.get(key)
                if b is None:
                    del out.vetted[key]
                else:
                    out.vetted[key] = b if a == _ANY else a if b == _ANY else a & b
        return out


# ----------------------------------------------------------------------------- small helpers


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _int_literal(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = _int_literal(node.expression)
        return None if v is None else -v
    return None


def _kwarg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def _method(call: cst.Call) -> tuple[cst.BaseExpression, str] | None:
    """``obj.name(...)`` -> (obj, name)."""
    if isinstance(call.func, cst.Attribute):
        return call.func.value, call.func.attr.value
    return None


def _is_contiguous_format(node: cst.BaseExpression | None) -> bool | None:
    """None: no memory_format given; True: torch.contiguous_format; False: another format."""
    if node is None:
        return None
    d = dotted(node) or ""
    return d.endswith("contiguous_format")


def _ends_in_exit(block: cst.BaseSuite) -> bool:
    body = block.body
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Raise, cst.Return, cst.Continue, cst.Break)) for s in last.body)
    if isinstance(block, cst.SimpleStatementSuite):
        return any(isinstance(s, (cst.Raise, cst.Return, cst.Continue, cst.Break)) for s in body)
    return False


def _sub_index(node: cst.Subscript) -> cst.BaseExpression | None:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return node.slice[0].slice.value
    return None


def _stmts(block: cst.BaseSuite) -> list:
    return list(block.body)


# ----------------------------------------------------------------------------- the collector


class _Collector:
    def __init__(self, module: cst.Module, positions: Mapping, module_name: str | None, is_package: bool):
        self.module = module
        self.positions = positions
        self.module_name = module_name
        self.is_package = is_package
        self.info = LaunchInfo()
        self._conflicting_aliases: set[str] = set()
        self._resolving: set[str] = set()
        self.collecting = False  # the first passes: gather call-site facts only, no launches
        self.call_lines: list[int] | None = None  # while collecting: lines calling a function of interest
        self._callers: set[str] = set()
        self._class: str | None = None
        self.signatures: dict[str, list[str]] = {}  # module function -> parameter names in order
        self.call_facts: dict[str, dict[str, list]] = {}  # function -> parameter -> facts at each call
        self.entry: dict[str, dict[str, _Tensor]] = {}  # function -> parameter -> facts at entry
        self.saved: dict[str | None, list] = {}  # class -> facts of ctx.save_for_backward(...) arguments
        self._returns: list | None = None  # while summarising a function: facts of its returns
        self.summaries: dict[str, _Tensor] = {}  # module function -> what every return of it is
        self.source: str = ""
        self.line_starts: list[int] | None = None
        self.hint_lines: list[int] | None = None  # lines holding `](` / `.run(`; None: look everywhere
        self._stmt: cst.CSTNode | None = None  # the statement being walked (whose nodes get spans)
        self._range_in = getattr(positions, "range_in", None)
        self._lines_of = getattr(positions, "lines", None)

    # -- spans and text

    def span(self, node: cst.CSTNode) -> Span:
        try:
            if self._range_in is not None:
                # Positions of the statement being walked only (StatementPositions).
                r = self._range_in(node, self._stmt)
            else:
                r = self.positions[node]
        except (KeyError, TypeError):
            return _NO_SPAN
        return Span(r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    def text(self, node: cst.CSTNode) -> str:
        d = dotted(node) if isinstance(node, cst.BaseExpression) else None
        if d is not None:
            return d
        sp = self.span(node)
        if sp is not _NO_SPAN and self.line_starts is not None and not getattr(node, "lpar", None):
            # Slicing the source is far cheaper than libcst's code generation.
            a = self.line_starts[sp.line - 1] + sp.column - 1
            b = self.line_starts[sp.end_line - 1] + sp.end_column - 1
            return " ".join(self.source[a:b].split()) if sp.end_line > sp.line else self.source[a:b]
        return self.module.code_for_node(node).strip()

    # -- imports and module-level aliases

    def _resolve_relative(self, relative: int, name: str) -> str:
        if not relative:
            return name
        if self.module_name is None:
            return "." * relative + name
        parts = self.module_name.split(".")
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
            package = parts
        else:
            package = parts if self.is_package else parts[:-1]
        base = package[: len(package) - (relative - 1)] if relative > 1 else package
        return ".".join([*base, name] if name else base)

    def add_import(self, stmt: cst.CSTNode) -> None:
        imports = self.info.imports
        if isinstance(stmt, cst.Import):
            for alias in stmt.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    imports[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    imports.setdefault(head, head)
        elif isinstance(stmt, cst.ImportFrom):
            if isinstance(stmt.names, cst.ImportStar):
                return
            mod = dotted(stmt.module) if stmt.module is not None else ""
            base = self._resolve_relative(len(stmt.relative), mod or "")
            for alias in stmt.names:
                name = dotted(alias.name)
                if name is None:
                    continue
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                full = f"{base}.{name}" if base and not base.endswith(".") else f"{base}{name}"
                imports[local] = full

    def add_alias(self, target: str, value: cst.BaseExpression) -> None:
        held = self._held_kernel(value)
        if held is None or held == target:
            return
        if target in self._conflicting_aliases:
            return
        old = self.info.kernel_aliases.get(target)
        if old is not None and old != held:
            del self.info.kernel_aliases[target]
            self._conflicting_aliases.add(target)
            return
        self.info.kernel_aliases[target] = held

    @staticmethod
    def _held_kernel(value: cst.BaseExpression) -> str | None:
        """``_k`` for ``_k``, ``triton.jit(_k)``, ``triton.autotune(...)(_k)``, ``jit(**kw)(_k)``."""
        d = dotted(value)
        if d is not None:
            return d
        if isinstance(value, cst.Call):
            pos = _positional(value)
            if len(pos) == 1 and len(value.args) == 1:
                func = value.func
                name = dotted(func.func) if isinstance(func, cst.Call) else dotted(func)
                if name and name.split(".")[-1] in {"jit", "autotune", "heuristics"}:
                    return dotted(pos[0])
        return None

    def module_level(self, body) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        self.add_import(small)
                    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                        t = small.targets[0].target
                        if isinstance(t, cst.Name):
                            self.add_alias(t.value, small.value)
            elif isinstance(stmt, (cst.If, cst.Try)):
                self.module_level(_stmts(stmt.body))
                other = []
                if isinstance(stmt, cst.If) and stmt.orelse is not None:
                    other = [stmt.orelse] if isinstance(stmt.orelse, cst.If) else _stmts(stmt.orelse.body)
                elif isinstance(stmt, cst.Try):
                    for h in stmt.handlers:
                        other.extend(_stmts(h.body))
                    if stmt.orelse is not None:
                        other.extend(_stmts(stmt.orelse.body))
                self.module_level(other)

    # -- functions

    def summarise(self, body) -> None:
        """Module functions every return of which is a contiguous tensor (``alloc_output(x)``
        returning ``x.new_empty(x.shape)`` or ``torch.empty_like(x, memory_format=...)``: a call of
        one is an allocation; ``dim_compress`` returning ``x.permute(...).contiguous()``). Only small
        functions, so that this stays cheap."""
        for stmt in body:
            if not isinstance(stmt, cst.FunctionDef) or len(stmt.body.body) > 12:
                continue
            self._returns = []
            self._fn, self._guarded = stmt.name.value, False
            exits = self.block(_stmts(stmt.body), _State(), False)
            returns, self._returns = self._returns, None
            if returns and exits and all(r is not None and r.contiguous for r in returns):
                fresh = all(r.fresh for r in returns)
                self.summaries[stmt.name.value] = _Tensor(contiguous=True, fresh=fresh)

    def functions(self, body, scan: bool) -> None:
        """Walk defs (top level, in classes, nested) and analyse those that may hold a launch."""
        for stmt in body:
            if isinstance(stmt, cst.FunctionDef):
                self.function(stmt, scan)
            elif isinstance(stmt, cst.ClassDef):
                saved_class, self._class = self._class, stmt.name.value
                self.functions(_stmts(stmt.body), scan)
                self._class = saved_class
            elif isinstance(stmt, (cst.If, cst.Try, cst.With)):
                self.functions(_stmts(stmt.body), scan)

    def function(self, fn: cst.FunctionDef, scan: bool) -> None:
        if not scan:
            return
        for d in fn.decorators:
            name = dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or ""
            if name.split(".")[-1] in ("jit", "autotune", "heuristics"):
                return  # a kernel: launches nothing
        lines = self.call_lines if self.collecting else self.hint_lines
        if lines is not None:
            sp = self.span(fn)
            if sp is not _NO_SPAN and not _any_between(lines, sp.line, sp.end_line):
                if not self.collecting:
                    self._self_aliases(_stmts(fn.body))
                return
            if self.collecting:
                self._callers.add(fn.name.value)
        decorators = [
            (dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) or "").split(".")[-1]
            for d in fn.decorators
        ]
        self._fn = fn.name.value
        self._guarded = "stride_guard" in decorators
        state = _State()
        params = _param_names(fn)
        if any("contiguous" in d.lower() or d == "input_guard" for d in decorators):
            # A decorator that makes every tensor argument contiguous (`@input_guard`,
            # `@ensure_contiguous`): the parameters are contiguous at entry.
            for name in params:
                state.tensors[name] = _Tensor(contiguous=True, family=name)
        for name, facts in self.entry.get(fn.name.value, {}).items():
            state.tensors[name] = facts
        self.block(_stmts(fn.body), state, scan and not self.collecting)

    def may_launch(self, node: cst.CSTNode) -> bool:
        """Whether ``node``'s lines hold a ``](`` or ``.run(`` (a dictionary lookup on positions)."""
        if self.hint_lines is None:
            return True
        first_last = self._lines_of(node) if self._lines_of is not None else None
        if first_last is None:
            sp = self.span(node)
            if sp is _NO_SPAN:
                return True
            first_last = (sp.line, sp.end_line)
        lines = self.hint_lines
        i = bisect.bisect_left(lines, first_last[0])
        return i < len(lines) and lines[i] <= first_last[1]

    def _self_aliases(self, stmts) -> None:
        """``self.kernel = _kernel`` in a method without launches (``__init__``)."""
        for stmt in stmts:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        d = dotted(small.targets[0].target)
                        if d is not None and d.startswith("self."):
                            self.add_alias(d, small.value)
            elif isinstance(stmt, (cst.If, cst.With)):
                self._self_aliases(_stmts(stmt.body))

    def block(self, stmts, state: _State, scan: bool) -> bool:
        """Walk statements in order, updating ``state``; True when the block always exits."""
        for stmt in stmts:
            if not isinstance(stmt, cst.BaseSmallStatement):
                self._stmt = stmt
            if isinstance(stmt, cst.BaseSmallStatement):
                # the body of `if x: raise ...` written on one line
                self.small(stmt, state, scan)
                if isinstance(stmt, (cst.Raise, cst.Return, cst.Continue, cst.Break)):
                    return True
            elif isinstance(stmt, cst.SimpleStatementLine):
                line_scan = scan and self.may_launch(stmt)
                for small in stmt.body:
                    self.small(small, state, line_scan)
                    if isinstance(small, (cst.Raise, cst.Return, cst.Continue, cst.Break)):
                        return True
            elif isinstance(stmt, cst.If):
                self.if_(stmt, state, scan)
            elif isinstance(stmt, (cst.For, cst.While)):
                if isinstance(stmt, cst.For):
                    for name in _target_names(stmt.target):
                        state.kill(name)
                    if scan:
                        self.find_launches(stmt.iter, state)
                elif scan:
                    self.find_launches(stmt.test, state)
                inner = state.copy()
                self.block(_stmts(stmt.body), inner, scan)
                merged = _State.meet([state, inner])
                _assign_state(state, merged)
                if stmt.orelse is not None:
                    self.block(_stmts(stmt.orelse.body), state, scan)
            elif isinstance(stmt, cst.With):
                for item in stmt.items:
                    if scan:
                        self.find_launches(item.item, state)
                    if item.asname is not None:
                        for name in _target_names(item.asname.name):
                            state.kill(name)
                if self.block(_stmts(stmt.body), state, scan):
                    return True
            elif isinstance(stmt, cst.Try):
                self.block(_stmts(stmt.body), state, scan)
                for h in stmt.handlers:
                    self.block(_stmts(h.body), state.copy(), scan)
                if stmt.orelse is not None:
                    self.block(_stmts(stmt.orelse.body), state, scan)
                if stmt.finalbody is not None:
                    self.block(_stmts(stmt.finalbody.body), state, scan)
            elif isinstance(stmt, cst.FunctionDef):
                saved = (self._fn, self._guarded)
                self.function(stmt, scan)
                self._fn, self._guarded = saved
                state.kill(stmt.name.value)
            elif isinstance(stmt, cst.ClassDef):
                self.functions(_stmts(stmt.body), scan)
        return False

    def if_(self, stmt: cst.If, state: _State, scan: bool) -> None:
        self._stmt = stmt
        if scan:
            self.find_launches(stmt.test, state)
        then_state = state.copy()
        self.assume(stmt.test, then_state, truth=True)
        then_exits = self.block(_stmts(stmt.body), then_state, scan)
        else_state = state.copy()
        self.assume(stmt.test, else_state, truth=False)
        if then_exits:
            # `if <bad>: raise`: what follows runs only when the test was false.
            self._stmt = stmt
            self.record_checks(stmt.test, else_state)
        else_exits = False
        if isinstance(stmt.orelse, cst.If):
            self.if_(stmt.orelse, else_state, scan)
        elif isinstance(stmt.orelse, cst.Else):
            else_exits = self.block(_stmts(stmt.orelse.body), else_state, scan)
        live = [s for s, ex in ((then_state, then_exits), (else_state, else_exits)) if not ex]
        _assign_state(state, _State.meet(live) if live else state)

    def assume(self, test: cst.BaseExpression, state: _State, truth: bool) -> None:
        """Facts implied by ``test`` being ``truth`` (``t.is_contiguous()`` and its negation)."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self.assume(test.expression, state, not truth)
            return
        if isinstance(test, cst.BooleanOperation):
            if truth and isinstance(test.operator, cst.And) or not truth and isinstance(test.operator, cst.Or):
                self.assume(test.left, state, truth)
                self.assume(test.right, state, truth)
            return
        if truth and isinstance(test, cst.Call):
            m = _method(test)
            if m is not None and m[1] == "is_contiguous" and not test.args:
                name = dotted(m[0])
                if name is not None:
                    old = state.tensors.get(name, _Tensor(family=name))
                    state.tensors[name] = replace(old, contiguous=True)

    def record_checks(self, test: cst.BaseExpression, state: _State) -> None:
        for comp in _comparisons(test):
            sides = [comp.left, *(t.comparator for t in comp.comparisons)]
            refs = [self.size_ref(s, state) for s in sides]
            for i, ref in enumerate(refs):
                if ref is None:
                    continue
                others = [self.text(s) for j, s in enumerate(sides) if j != i]
                tensor, dim = ref
                check = WidthCheck(tensor, dim, " ".join(others), self.span(comp))
                state.checks[(tensor, dim, check.against, check.span)] = check
                state.vetted[tensor] = _ANY

    def size_ref(self, node: cst.BaseExpression, state: _State) -> tuple[str, int | None] | None:
        """(tensor, dim) when ``node`` is a tensor's extent (``t.size(-1)``, ``t.shape``)."""
        if isinstance(node, cst.Attribute) and node.attr.value == "shape":
            name = self.tensor_name(node.value)
            return (name, None) if name else None
        o = self.origin(node, state)
        if o.kind is OriginKind.SHAPE and o.tensor is not None:
            return o.tensor, o.dim
        return None

    # -- statements

    def small(self, small: cst.CSTNode, state: _State, scan: bool) -> None:
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            self.add_import(small)
            return
        if isinstance(small, cst.Assert):
            self.assume(small.test, state, truth=True)
            self.record_checks(small.test, state)
            return
        if scan:
            self.find_launches(small, state)
        if self.collecting:
            value = getattr(small, "value", None)
            if isinstance(value, cst.Call):
                self.record_call(value, state)
        if isinstance(small, cst.Return) and self._returns is not None:
            self._returns.append(self.tensor_facts(small.value, state) if small.value is not None else None)
        if isinstance(small, cst.Assign):
            value = small.value
            for target in small.targets:
                self.assign(target.target, value, state)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self.assign(small.target, small.value, state)
        elif isinstance(small, cst.AugAssign):
            for name in _target_names(small.target):
                if name in state.tensors and name not in state.ints:
                    continue  # `dh0 += ...` on a tensor works in place: same storage, same layout
                state.kill(name)
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            # torch._check(t.is_contiguous()) / torch._check(cond, msg)
            if (dotted(call.func) or "").endswith("_check") and call.args:
                self.assume(call.args[0].value, state, truth=True)
                self.record_checks(call.args[0].value, state)

    def record_call(self, call: cst.Call, state: _State) -> None:
        """Facts of the tensors a module function is called with; ``ctx.save_for_backward(...)``."""
        fname = dotted(call.func)
        if fname is None:
            return
        if fname.endswith(".save_for_backward"):
            self.saved[self._class] = [
                None if a.star else self.tensor_facts(a.value, state) for a in call.args
            ]
            return
        params = self.signatures.get(fname)
        if params is None:
            return
        sites = self.call_facts.setdefault(fname, {})
        bound: dict[str, _Tensor | None] = {}
        for i, a in enumerate(call.args):
            if a.star:
                return  # positions unknown
            if a.keyword is not None:
                bound[a.keyword.value] = self.tensor_facts(a.value, state)
            elif i < len(params):
                bound[params[i]] = self.tensor_facts(a.value, state)
        for p in params:
            sites.setdefault(p, []).append(bound.get(p))

    def derive_entry(self) -> dict[str, dict[str, _Tensor]]:
        """A parameter is contiguous at entry when every call in the module passes a contiguous tensor."""
        entry: dict[str, dict[str, _Tensor]] = {}
        for fname, sites in self.call_facts.items():
            for p, facts in sites.items():
                if facts and all(f is not None and f.contiguous for f in facts):
                    entry.setdefault(fname, {})[p] = _Tensor(contiguous=True, family=p)
        return entry

    def assign(self, target: cst.BaseExpression, value: cst.BaseExpression, state: _State) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            self.unpack(target, value, state)
            return
        if isinstance(target, cst.Attribute):
            d = dotted(target)
            if d is not None and d.startswith("self."):
                self.add_alias(d, value)
            return
        if not isinstance(target, cst.Name):
            return
        name = target.value
        facts = self.tensor_facts(value, state)
        origin = self.origin(value, state)
        seq = value if isinstance(value, (cst.Tuple, cst.List, cst.Dict, cst.Lambda)) else None
        if isinstance(value, cst.Call) and (dotted(value.func) or "").split(".")[-1] in ("dict", "TensorDescriptor"):
            seq = value
        held = self._held_kernel(value)
        src = value.value if isinstance(value, cst.Name) and not _is_none(value) else None
        src_vetted = state.vetted.get(src, frozenset()) if src else None
        state.kill(name)
        if facts is None and isinstance(value, cst.Call) and origin.kind is OriginKind.OTHER:
            facts = _Tensor(family=name, opaque=True)
        if _is_none(value):
            # `dz = None` on the other arm of an allocation: None reaches no address, so it
            # takes nothing away from what the allocating arm establishes.
            facts = _Tensor(contiguous=True, fresh=True, family=name)
        if facts is not None:
            state.tensors[name] = facts
            if facts.fresh:
                state.vetted[name] = _ANY
        elif src is not None and src != name and src not in state.ints:
            # `dX = dY`: the same tensor under another name (an in-place launch).
            state.tensors[name] = _Tensor(family=self.family(src, state))
        if src is not None and src != name and src not in state.ints:
            fam = self.family(src, state)
            state.vetted[name] = _ANY if src_vetted == _ANY else src_vetted | {src, fam}
        elif isinstance(value, cst.Call) and (m := _method(value)) is not None and m[1] in _SAME_EXTENT_VIEWS:
            # `y_view = y.view(-1, N)` of an allocated (or checked) y covers what y covers.
            base = dotted(m[0])
            if base is not None and state.vetted.get(base) == _ANY:
                state.vetted[name] = _ANY
        if origin.kind in (OriginKind.SHAPE, OriginKind.STRIDE, OriginKind.NUMEL, OriginKind.PRODUCT,
                           OriginKind.LITERAL):
            state.ints[name] = origin
        if seq is not None:
            state.seqs[name] = seq
        if held is not None and held != name:
            state.aliases[name] = state.aliases.get(held, held)

    def unpack(self, target, value, state: _State) -> None:
        elements = target.elements
        names = [e.value for e in elements]
        for n in names:
            for k in _target_names(n):
                state.kill(k)
        # n, v = logits.shape / logits.size() / logits.stride()
        kind = None
        base = None
        if isinstance(value, cst.Attribute) and value.attr.value == "shape":
            kind, base = OriginKind.SHAPE, value.value
        elif isinstance(value, cst.Call) and not value.args:
            m = _method(value)
            if m is not None and m[1] in ("size", "stride"):
                kind = OriginKind.SHAPE if m[1] == "size" else OriginKind.STRIDE
                base = m[0]
        if kind is not None:
            tensor = self.tensor_name(base)
            if tensor is None:
                return
            starred = [i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)]
            ndim = None if starred else len(elements)
            for i, e in enumerate(elements):
                if isinstance(e, cst.StarredElement) or not isinstance(e.value, cst.Name):
                    continue
                dim = i if not starred or i < starred[0] else i - len(elements)
                state.ints[e.value.value] = ArgOrigin(
                    kind, f"{tensor}.{'stride' if kind is OriginKind.STRIDE else 'size'}({dim})",
                    _NO_SPAN, tensor=tensor, dim=dim, ndim=ndim,
                )
            return
        if isinstance(value, cst.Attribute) and value.attr.value == "saved_tensors":
            saved = self.saved.get(self._class)
            if saved is not None and len(saved) == len(elements):
                for e, facts in zip(elements, saved):
                    if isinstance(e, cst.Element) and isinstance(e.value, cst.Name) and facts is not None:
                        state.tensors[e.value.value] = replace(facts, family=e.value.value, like_of=None)
            return
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
            if any(isinstance(e, cst.StarredElement) for e in (*elements, *value.elements)):
                return
            for t, v in zip(elements, value.elements):
                self.assign(t.value, v.value, state)

    # -- expressions

    def tensor_name(self, node: cst.BaseExpression) -> str | None:
        d = dotted(node)
        if d is not None:
            return d
        if isinstance(node, cst.Call):
            m = _method(node)
            if m is not None and m[1] == "contiguous":
                return self.tensor_name(m[0])
        return None

    def family(self, name: str, state: _State) -> str:
        t = state.tensors.get(name)
        return t.family if t is not None and t.family else name

    def tensor_facts(self, node: cst.BaseExpression, state: _State) -> _Tensor | None:
        """What a tensor-valued expression is, or None when it is nothing known."""
        if isinstance(node, cst.Name):
            return state.tensors.get(node.value)
        if isinstance(node, cst.Subscript) and any(isinstance(e.slice, cst.Slice) for e in node.slice):
            # `logits[:, :vocab]`, `x[..., 1:]`: a slice view made right here.
            base = self.tensor_name(node.value)
            if base is not None and not (dotted(node.value) or "").endswith(("shape", "stride")):
                inner = [e for e in node.slice[1:] if isinstance(e.slice, cst.Slice)]
                return _Tensor(family=self.family(base, state), view=bool(inner))
        if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT", "H", "mH"):
            base = self.tensor_name(node.value)
            if base is not None:
                return _Tensor(family=self.family(base, state), view=True)
        if isinstance(node, cst.IfExp):
            # `x if x.is_contiguous() else x.contiguous()`
            body_state = state.copy()
            self.assume(node.test, body_state, truth=True)
            a = self.tensor_facts(node.body, body_state)
            else_state = state.copy()
            self.assume(node.test, else_state, truth=False)
            b = self.tensor_facts(node.orelse, else_state)
            # `torch.empty(...) if HAVE_BETA else None`: None reaches no address, the other arm decides.
            if _is_none(node.orelse):
                return a
            if _is_none(node.body):
                return b
            if a is not None and b is not None and a.contiguous and b.contiguous:
                return _Tensor(contiguous=True, fresh=a.fresh and b.fresh, family=a.family or b.family)
            return None
        if not isinstance(node, cst.Call):
            return None
        fname = dotted(node.func) or ""
        if fname in self.summaries:
            return self.summaries[fname]
        head, _, rest = fname.partition(".")
        if head in self.info.imports:
            target = self.info.imports[head] + ("." + rest if rest else "")
            if target.split(".")[0] not in ("torch", "triton", "numpy", "math"):
                return _Tensor(alloc_call=target, opaque=True)
        last = fname.split(".")[-1]
        m = _method(node)
        fmt = _is_contiguous_format(_kwarg(node, "memory_format"))
        if last in _FRESH_CONTIGUOUS and (m is None or last.startswith("new_") or _is_torch(fname)):
            return _Tensor(contiguous=fmt is not False, fresh=True)
        if last == "empty_strided":
            return _Tensor(fresh=True)
        if last in _LIKE or (last == "clone" and m is not None):
            src_node = m[0] if last == "clone" else (node.args[0].value if node.args else None)
            src = self.tensor_name(src_node) if src_node is not None else None
            src_facts = self.tensor_facts(src_node, state) if src_node is not None else None
            if isinstance(src_node, cst.Call) and _method(src_node) and _method(src_node)[1] == "contiguous":
                src_facts = _Tensor(contiguous=True)
            contiguous = fmt is True or (fmt is None and src_facts is not None and src_facts.contiguous)
            return _Tensor(contiguous=contiguous, fresh=True, like_of=src)
        if m is not None:
            base, meth = m
            base_name = self.tensor_name(base)
            base_facts = self.tensor_facts(base, state)
            fam = self.family(base_name, state) if base_name else None
            if meth == "contiguous":
                return _Tensor(contiguous=True, fresh=False, family=fam)
            if meth in _KEEPS_CONTIGUITY:
                return _Tensor(contiguous=bool(base_facts and base_facts.contiguous), family=fam)
            if meth in _VIEWS:
                return _Tensor(family=fam, view=meth in _STRIDED_VIEWS)
        return None

    def origin(self, node: cst.BaseExpression, state: _State) -> ArgOrigin:
        """What one expression is, as far as the launcher shows (span/text filled by the caller)."""
        lit = _int_literal(node)
        if lit is not None:
            return ArgOrigin(OriginKind.LITERAL, "", _NO_SPAN, literal=lit)
        if isinstance(node, cst.Name):
            known = state.ints.get(node.value)
            if known is not None:
                return known
            seq = state.seqs.get(node.value)
            if isinstance(seq, cst.Call):
                desc = self.host_descriptor(seq, state)
                if desc is not None:
                    return desc
            facts = state.tensors.get(node.value)
            return self._tensor_origin(node.value, facts, state)
        if isinstance(node, cst.Call):
            desc = self.host_descriptor(node, state)
            if desc is not None:
                return desc
        if isinstance(node, cst.Subscript):
            idx = _sub_index(node)
            i = _int_literal(idx) if idx is not None else None
            base = node.value
            if isinstance(base, cst.Attribute) and base.attr.value == "shape":
                t = self.tensor_name(base.value)
                if t is not None:
                    return ArgOrigin(OriginKind.SHAPE, "", _NO_SPAN, tensor=t, dim=i)
            if isinstance(base, cst.Call) and not base.args and i is not None:
                m = _method(base)
                if m is not None and m[1] in ("size", "stride"):
                    t = self.tensor_name(m[0])
                    if t is not None:
                        kind = OriginKind.SHAPE if m[1] == "size" else OriginKind.STRIDE
                        return ArgOrigin(kind, "", _NO_SPAN, tensor=t, dim=i)
            d = dotted(base)
            if d is not None and d in state.seqs and i is not None and d not in self._resolving:
                seq = state.seqs[d]
                if isinstance(seq, (cst.Tuple, cst.List)) and -len(seq.elements) <= i < len(seq.elements):
                    el = seq.elements[i]
                    if isinstance(el, cst.Element):
                        # `grid = (grid[0] * M,)` refers to an older `grid`: never resolve a name in itself.
                        self._resolving.add(d)
                        try:
                            return self.origin(el.value, state)
                        finally:
                            self._resolving.discard(d)
            facts = self.tensor_facts(node, state)
            if facts is not None:
                return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=self.tensor_name(node.value),
                                 family=facts.family, strided_view=facts.view)
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, cst.Call):
            m = _method(node)
            fname = dotted(node.func) or ""
            if m is not None:
                base, meth = m
                pos = _positional(node)
                if meth in ("size", "stride", "numel", "nelement", "dim") and len(node.args) <= 1:
                    t = self.tensor_name(base)
                    if t is not None:
                        if meth in ("numel", "nelement"):
                            return ArgOrigin(OriginKind.NUMEL, "", _NO_SPAN, tensor=t)
                        if meth == "dim":
                            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
                        if len(pos) == 1:
                            kind = OriginKind.SHAPE if meth == "size" else OriginKind.STRIDE
                            return ArgOrigin(kind, "", _NO_SPAN, tensor=t, dim=_int_literal(pos[0]))
            if fname in ("int", "len") and len(node.args) == 1:
                inner = self.origin(node.args[0].value, state)
                if fname == "int":
                    return inner
                t = self.tensor_name(node.args[0].value)
                if t is not None:
                    return ArgOrigin(OriginKind.SHAPE, "", _NO_SPAN, tensor=t, dim=0)
                return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
            facts = self.tensor_facts(node, state)
            if facts is not None:
                name = self.tensor_name(node)
                if name is None and m is not None:
                    name = self.tensor_name(m[0])
                return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name,
                                 contiguous=facts.contiguous, fresh=facts.fresh,
                                 family=facts.family or name, like_of=facts.like_of, strided_view=facts.view)
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            left = self.origin(node.left, state)
            right = self.origin(node.right, state)
            kinds = {left.kind, right.kind}
            if OriginKind.STRIDE in kinds:
                s = left if left.kind is OriginKind.STRIDE else right
                return ArgOrigin(OriginKind.STRIDE, "", _NO_SPAN, tensor=s.tensor, dim=None, factors=(left, right))
            sizes = {OriginKind.SHAPE, OriginKind.NUMEL, OriginKind.PRODUCT}
            if kinds <= sizes | {OriginKind.LITERAL}:
                if kinds == {OriginKind.LITERAL}:
                    return ArgOrigin(OriginKind.LITERAL, "", _NO_SPAN, literal=left.literal * right.literal)
                return ArgOrigin(OriginKind.PRODUCT, "", _NO_SPAN, factors=(left, right))
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("T", "mT"):
                facts = self.tensor_facts(node, state)
                if facts is not None:
                    return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=self.tensor_name(node.value),
                                     family=facts.family, strided_view=True)
            d = dotted(node)
            if d is not None:
                return self._tensor_origin(d, state.tensors.get(d), state)
        return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)

    def host_descriptor(self, call: cst.Call, state: _State) -> ArgOrigin | None:
        """``TensorDescriptor(t, shape, strides, block_shape)``: the base tensor, with its strides."""
        fname = dotted(call.func) or ""
        if fname.split(".")[-1] != "TensorDescriptor":
            return None
        strides = _kwarg(call, "strides")
        pos = _positional(call)
        if strides is None and len(pos) >= 3:
            strides = pos[2]
        base = _kwarg(call, "base") or (pos[0] if pos else None)
        if not isinstance(strides, (cst.List, cst.Tuple)) or base is None:
            return None
        name = self.tensor_name(base)
        facts = self.tensor_facts(base, state)
        elements = tuple(
            self.arg_origin(e.value, state) for e in strides.elements if isinstance(e, cst.Element)
        )
        return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name, family=name,
                         contiguous=bool(facts and facts.contiguous), fresh=bool(facts and facts.fresh),
                         descriptor_strides=elements)

    def _tensor_origin(self, name: str, facts: _Tensor | None, state: _State) -> ArgOrigin:
        vetted = tuple(sorted(state.vetted.get(name, ())))
        if facts is None:
            return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name, family=name, vetted=vetted)
        return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name, contiguous=facts.contiguous,
                         fresh=facts.fresh, family=facts.family or name, like_of=facts.like_of, vetted=vetted,
                         alloc_call=facts.alloc_call, opaque=facts.opaque, strided_view=facts.view)

    def arg_origin(self, node: cst.BaseExpression, state: _State) -> ArgOrigin:
        o = self.origin(node, state)
        extra = {}
        if o.kind in (OriginKind.SHAPE, OriginKind.STRIDE, OriginKind.NUMEL) and o.tensor is not None:
            facts = state.tensors.get(o.tensor)
            extra["family"] = self.family(o.tensor, state)
            extra["contiguous"] = bool(facts and facts.contiguous)
            extra["fresh"] = bool(facts and facts.fresh)
            extra["like_of"] = facts.like_of if facts else None
        return replace(o, text=self.text(node), span=self.span(node), **extra)

    # -- launches

    def find_launches(self, node: cst.CSTNode, state: _State) -> None:
        """Every launch call inside one statement or expression (lambdas and defs excluded)."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, cst.Call):
                self.maybe_launch(n, state)
                stack.append(n.func)
                stack.extend(a.value for a in n.args)
            elif isinstance(n, (cst.Name, cst.BaseNumber, cst.BaseString, cst.Lambda)):
                continue
            elif isinstance(n, cst.Attribute):
                stack.append(n.value)
            elif isinstance(n, cst.Subscript):
                stack.append(n.value)
                stack.extend(e.slice.value for e in n.slice if isinstance(e.slice, cst.Index))
            elif isinstance(n, (cst.Expr, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Await)):
                v = n.expression if isinstance(n, cst.Await) else n.value
                if v is not None:
                    stack.append(v)
            elif isinstance(n, (cst.BinaryOperation, cst.BooleanOperation)):
                stack.extend((n.left, n.right))
            elif isinstance(n, cst.UnaryOperation):
                stack.append(n.expression)
            elif isinstance(n, cst.Comparison):
                stack.append(n.left)
                stack.extend(c.comparator for c in n.comparisons)
            elif isinstance(n, (cst.Tuple, cst.List, cst.Set)):
                stack.extend(e.value for e in n.elements)
            elif isinstance(n, cst.IfExp):
                stack.extend((n.test, n.body, n.orelse))
            elif isinstance(n, cst.Dict):
                stack.extend(e.value for e in n.elements)

    def maybe_launch(self, call: cst.Call, state: _State) -> None:
        func = call.func
        grid_node = None
        if isinstance(func, cst.Subscript):
            target = dotted(func.value)
            grid_node = _sub_index(func)
        elif isinstance(func, cst.Attribute) and func.attr.value == "run":
            target = dotted(func.value)
            grid_node = _kwarg(call, "grid")
        else:
            return
        if target is None or isinstance(grid_node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return  # `table["name"](x)` is a lookup, not a launch
        head, _, rest = target.partition(".")
        resolved = None
        if head in state.aliases:
            resolved = state.aliases[head] + ("." + rest if rest else "")
        launch = Launch(target=target, span=self.span(call), launcher=self._fn, guarded=self._guarded,
                        resolved_target=resolved)
        if grid_node is not None:
            launch.grid_text = self.text(grid_node)
            launch.grid = self.grid_origins(grid_node, state)
        for arg in call.args:
            if arg.star == "*":
                seq = self._seq(arg.value, state)
                if isinstance(arg.value, cst.Name) and isinstance(seq, cst.List):
                    seq = None  # a list variable may have grown since (`args.append(...)`)
                if isinstance(seq, (cst.Tuple, cst.List)) and not any(
                    isinstance(e, cst.StarredElement) for e in seq.elements
                ):
                    launch.args.extend(self.arg_origin(e.value, state) for e in seq.elements)
                elif not launch.star_args:
                    launch.star_args = True
            elif arg.star == "**":
                seq = self._seq(arg.value, state)
                pairs = _dict_pairs(seq) if seq is not None else None
                if pairs is None:
                    launch.star_args = True
                else:
                    for k, v in pairs:
                        launch.kwargs[k] = self.arg_origin(v, state)
            elif arg.keyword is not None:
                launch.kwargs[arg.keyword.value] = self.arg_origin(arg.value, state)
            elif not launch.star_args:
                # After an unresolved *args the positions of what follows are unknown.
                launch.args.append(self.arg_origin(arg.value, state))
        launch.width_checks = list(state.checks.values())
        self.info.launches.append(launch)

    def _seq(self, node: cst.BaseExpression, state: _State):
        if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
            return node
        if isinstance(node, cst.Name):
            return state.seqs.get(node.value)
        return None

    def grid_origins(self, node: cst.BaseExpression, state: _State) -> list[ArgOrigin]:
        seq = self._seq(node, state)
        if isinstance(seq, cst.Lambda):
            seq = seq.body
        if isinstance(seq, (cst.Tuple, cst.List)):
            return [self.arg_origin(e.value, state) for e in seq.elements if isinstance(e, cst.Element)]
        return []


def _any_between(lines: list[int], first: int, last: int) -> bool:
    i = bisect.bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last


def _param_names(fn: cst.FunctionDef) -> list[str]:
    p = fn.params
    return [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_torch(fname: str) -> bool:
    return fname.split(".")[0] in ("torch", "th") or fname in _FRESH_CONTIGUOUS


def _dict_pairs(node) -> list[tuple[str, cst.BaseExpression]] | None:
    if isinstance(node, cst.Dict):
        out = []
        for el in node.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            out.append((el.key.evaluated_value, el.value))
        return out
    if isinstance(node, cst.Call) and (dotted(node.func) or "") == "dict":
        out = []
        for a in node.args:
            if a.keyword is None:
                return None
            out.append((a.keyword.value, a.value))
        return out
    return None


def _comparisons(test: cst.BaseExpression):
    stack = [test]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Comparison):
            yield n
        elif isinstance(n, cst.BooleanOperation):
            stack.extend((n.left, n.right))
        elif isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Not):
            stack.append(n.expression)
        elif isinstance(n, cst.Call) and (dotted(n.func) or "") in ("all", "any") and n.args:
            stack.append(n.args[0].value)


def _target_names(node) -> list[str]:
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        out = []
        for e in node.elements:
            out.extend(_target_names(e.value))
        return out
    if isinstance(node, cst.StarredElement):
        return _target_names(node.value)
    return []


def may_hold_launch_or_allocator(source: str) -> bool:
    """Whether :func:`collect` would read more than the module-level imports and aliases of
    ``source``: a launch hint (``](`` / ``.run(``) or a small allocating function (``return`` and
    an allocation call). When False, :func:`module_level_from_ast` gives the same result."""
    return bool(_LAUNCH_HINT.search(source)) or ("return" in source and bool(_ALLOC_HINT.search(source)))


def _ast_dotted(node) -> str | None:
    """``a.b.c`` for an ``ast`` Name/Attribute chain, else None (as :func:`dotted`)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Constant) and (node.value is None or node.value is True or node.value is False):
        parts.append(repr(node.value))
        return ".".join(reversed(parts))  # libcst reads `None`/`True`/`False` as Names: keep the same aliases
    return None


def _ast_held_kernel(value) -> str | None:
    """:meth:`_Collector._held_kernel` on an ``ast`` expression."""
    d = _ast_dotted(value)
    if d is not None:
        return d
    if isinstance(value, ast.Call):
        pos = [a for a in value.args if not isinstance(a, ast.Starred)]
        if len(pos) == 1 and len(value.args) + len(value.keywords) == 1:
            func = value.func
            name = _ast_dotted(func.func) if isinstance(func, ast.Call) else _ast_dotted(func)
            if name and name.split(".")[-1] in {"jit", "autotune", "heuristics"}:
                return _ast_dotted(pos[0])
    return None


def module_level_from_ast(tree: ast.Module, module_name: str | None = None, path: str | None = None) -> LaunchInfo:
    """The :class:`LaunchInfo` of a module that holds no launch hint and no allocating function
    (see :func:`may_hold_launch_or_allocator`), read from its ``ast`` tree: only ``imports`` and
    ``kernel_aliases``, by the same rules as :meth:`_Collector.module_level`, so such a file needs
    no libcst parse (a third of the corpus's triton-mentioning bytes)."""
    is_package = bool(path) and path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    c = _Collector(None, {}, module_name, is_package)

    def walk(body) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname is not None:
                        c.info.imports[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        c.info.imports.setdefault(head, head)
            elif isinstance(stmt, ast.ImportFrom):
                if any(a.name == "*" for a in stmt.names):
                    continue
                base = c._resolve_relative(stmt.level, stmt.module or "")
                for alias in stmt.names:
                    local = alias.asname if alias.asname is not None else alias.name
                    full = f"{base}.{alias.name}" if base and not base.endswith(".") else f"{base}{alias.name}"
                    c.info.imports[local] = full
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                if isinstance(stmt.targets[0], ast.Name):
                    target = stmt.targets[0].id
                    held = _ast_held_kernel(stmt.value)
                    if held is None or held == target or target in c._conflicting_aliases:
                        continue
                    old = c.info.kernel_aliases.get(target)
                    if old is not None and old != held:
                        del c.info.kernel_aliases[target]
                        c._conflicting_aliases.add(target)
                        continue
                    c.info.kernel_aliases[target] = held
            elif isinstance(stmt, ast.If):
                walk(stmt.body)
                walk(stmt.orelse)  # an `elif` is an If in orelse, as libcst's orelse If
            elif isinstance(stmt, ast.Try):
                walk(stmt.body)
                other = []
                for h in stmt.handlers:
                    other.extend(h.body)
                other.extend(stmt.orelse)
                walk(other)

    walk(tree.body)
    return c.info


def _assign_state(dst: _State, src: _State) -> None:
    dst.tensors, dst.ints, dst.seqs, dst.checks, dst.aliases, dst.vetted = (
        src.tensors, src.ints, src.seqs, src.checks, src.aliases, src.vetted,
    )


def collect(
    module: cst.Module,
    positions: Mapping,
    source: str,
    module_name: str | None = None,
    path: str | None = None,
) -> LaunchInfo:
    """Launches, imports and kernel aliases of one module (see the module docstring).

    ``module`` is the parsed ``libcst.Module``; ``positions`` maps its nodes to ``CodeRange``
    (libcst's ``PositionProvider``); ``source`` is its text. Never raises on valid libcst input.
    """
    is_package = bool(path) and path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    c = _Collector(module, positions, module_name, is_package)
    body = list(module.body)
    c.module_level(body)
    hints = [m.end() for m in _LAUNCH_HINT.finditer(source)]
    scan = bool(hints)
    if scan:
        c.source = source
        c.line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
        c.hint_lines = sorted({source.count("\n", 0, end) + 1 for end in hints})
    c._fn, c._guarded = None, False
    if "return" in source and _ALLOC_HINT.search(source):
        c.summarise(body)
    if scan:
        # Facts that flow into launchers from their callers in this module (`forward` calling
        # `_fwd(x.contiguous())`, `@input_guard`, ctx.save_for_backward): two rounds reach two levels.
        defs = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
        wanted = set()
        for name, fn in defs.items():
            sp = c.span(fn)
            if sp is _NO_SPAN or _any_between(c.hint_lines, sp.line, sp.end_line):
                wanted.add(name)
        # Their callers in this module (one level up), found by text: `name(` inside a def.
        if wanted:
            pattern = "|".join(re.escape(n) for n in sorted(wanted))
            call_ends = [m.end() for m in re.finditer(rf"\b(?:{pattern})\s*\(", source)]
            call_at = sorted({source.count("\n", 0, e) + 1 for e in call_ends})
            for name, fn in defs.items():
                sp = c.span(fn)
                if sp is not _NO_SPAN and _any_between(call_at, sp.line, sp.end_line):
                    wanted.add(name)
        if wanted or "save_for_backward" in source:
            c.signatures = {n: _param_names(defs[n]) for n in wanted}
            pattern = "|".join(re.escape(n) for n in sorted(wanted)) or "(?!)"
            ends = [m.end() for m in re.finditer(rf"\b(?:{pattern})\s*\(|save_for_backward", source)]
            c.call_lines = sorted({source.count("\n", 0, e) + 1 for e in ends})
            c.collecting = True
            for _ in range(2):
                c.call_facts = {}
                c.functions(body, True)
                c.entry = c.derive_entry()
        c.collecting = False
        c.call_lines = None
    if c.entry or c.saved:
        # Twice: with what callers guarantee (-> `contiguous_in_module`), then with the launcher's
        # own facts only (-> `contiguous`, which the kernel-side rules read as the issue defines it).
        c.functions(body, scan)
        with_callers, c.info.launches = c.info.launches, []
        c.entry, c.saved = {}, {}
        c.functions(body, scan)
        for mine, theirs in zip(c.info.launches, with_callers):
            for a, b in zip(mine.args, theirs.args):
                a.contiguous_in_module = b.contiguous
            for k, a in mine.kwargs.items():
                b = theirs.kwargs.get(k)
                a.contiguous_in_module = b.contiguous if b is not None else a.contiguous
    else:
        c.functions(body, scan)
        for launch in c.info.launches:
            for a in (*launch.args, *launch.kwargs.values()):
                a.contiguous_in_module = a.contiguous
    c.info.allocators = tuple(sorted(n for n, t in c.summaries.items() if t.fresh))
    c.info.contiguous_returns = tuple(sorted(c.summaries))
    if scan:
        # Launches at module level (scripts, benchmarks).
        before = len(c.info.launches)
        c.block([s for s in body if isinstance(s, cst.SimpleStatementLine)], _State(), True)
        for launch in c.info.launches[before:]:
            for a in (*launch.args, *launch.kwargs.values()):
                a.contiguous_in_module = a.contiguous
    return c.info
