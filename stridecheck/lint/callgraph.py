"""The host side's call graph of one module: its functions, the calls they make, and what each
call passes for each tensor argument.

Read from the module's ``ast`` in one pass, with a light, flow-insensitive evaluation of each
function's local assignments (the last assignment of a name before the call, in source order):
enough to tell a tensor that is made contiguous or allocated (``packed``), a view that is not
(``strided``: an inner slice, a transpose), the caller's own parameter passed on (``param``), an
``empty_like`` copy of one (``like``), and ``self.<attr>`` (``attr``). The linker joins the
modules' graphs (:mod:`stridecheck.lint.linker`) and :mod:`stridecheck.lint.provenance` walks it
from a launch up to the callers of its launcher, a few levels at most.

Only calls that may reach a launcher are kept: of a module function, an imported name, a method
of ``self`` or of a class (``Cls.apply``), not of ``torch``, ``triton`` and the builtins.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from stridecheck.lint.model import ArgFact, CallSite, FunctionInfo


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``: every node under ``node`` (itself first), breadth first, children
    in field order. Built in one loop, without ``ast.walk``'s generators per node (``iter_fields``,
    ``iter_child_nodes``): about twice as fast, and the walks of call graphs and kernels are hot."""
    out = [node]
    i = 0
    while i < len(out):
        n = out[i]
        i += 1
        for name in n._fields:
            v = getattr(n, name, None)
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, ast.AST):
                        out.append(x)
            elif isinstance(v, ast.AST):
                out.append(v)
    return out

def kept(node: ast.AST, attr: str, compute):
    """``compute(node)``, computed once and kept on the node under ``attr``: the walks ask the same
    questions of the same nodes many times (the branches a value was made under, the other values
    its names hold, each inlining of a helper, each enclosing loop, each pass of the launch
    collector over a function), and the module's tree outlives them."""
    try:
        return getattr(node, attr)
    except AttributeError:
        got = compute(node)
        setattr(node, attr, got)
        return got


_SKIP_ROOTS = frozenset(
    """torch tl triton math np numpy os sys logger logging print len range int float bool str isinstance
    getattr setattr hasattr list tuple dict set min max super type zip enumerate sorted reversed any all sum
    abs round divmod iter next map filter repr id hash open functools itertools warnings einops rearrange
    assert_close F nn""".split()
)
_ALLOCATORS = frozenset(
    {"empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor", "new_empty", "new_zeros",
     "new_ones", "new_full", "new_tensor", "contiguous"}
)
_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"})
_STRIDED = frozenset({"t", "transpose", "permute", "expand", "expand_as", "movedim", "as_strided", "unfold",
                      "diagonal", "narrow", "select", "mT", "T"})
_KEEPS = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "to", "float", "half",
                    "bfloat16", "detach", "unflatten", "type_as", "data"})
_REGISTERS = frozenset({"custom_op", "triton_op", "impl", "register_kernel", "register_fake", "register_autograd",
                        "register_op", "direct_register_custom_op"})
_UNKNOWN = ArgFact("unknown")
MODULE_CALLER = "<module>"  # the caller's name for a call made by a module's top-level statements


def strided_subscript(elements) -> bool:
    """Whether indexing with ``elements`` (the subscript's items) makes a view whose inner
    dimensions are not packed: a partial slice of an inner dimension (`x[:, :n]`, `x[..., 1:]`), or
    an index into one after a slice (`x[:, 0]`). Indexing leading dimensions (`x[0]`, `x[0, a:b]`)
    and slicing the outermost remaining one (`x[a:b]`, `x[a:b, :, :]`) keep the rest packed."""
    i = 0
    while i < len(elements) and not isinstance(elements[i], ast.Slice) and not (
            isinstance(elements[i], ast.Constant) and elements[i].value in (None, Ellipsis)):
        i += 1  # leading indices drop dimensions
    rest = elements[i:]
    for k, e in enumerate(rest):
        if isinstance(e, ast.Constant) and e.value is Ellipsis:
            if any(isinstance(x, ast.Slice) and (x.lower or x.upper or x.step) for x in rest[k + 1:]):
                return True  # `x[..., :n]`: the innermost dimension
            continue
        if isinstance(e, ast.Constant) and e.value is None:
            continue
        if isinstance(e, ast.Slice):
            if k > 0 and (e.lower is not None or e.upper is not None or e.step is not None):
                return True
            if k == 0 and e.step is not None:
                return True  # `x[::2]`: every other row
            continue
        if k > 0:
            return True  # an index into an inner dimension after a slice
    return False


def _int_literal(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def view_key(node, generation: dict[str, int]) -> str | None:
    """What decides the strides of a tensor made by indexing (``buf[layer][:, 0:h, :]``), as text:
    the base (a dotted name, with how often its root was assigned so far: ``generation``) and each
    subscript with what does not decide strides left out. Basic indexing keeps the base's strides
    of the dimensions it keeps, whatever a slice's bounds or an integer index's value, so the
    bounds and integers are left out and a slice's step kept (``x[::2]`` doubles one). A subscript
    with any other item (a name, which may be a tensor: advanced indexing copies, to a layout its
    extents decide) is kept whole: only the same subscript gives the same strides. None for
    anything else."""
    levels = []
    while isinstance(node, ast.Subscript):
        sl = node.slice
        elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        items = []
        for e in elts:
            if isinstance(e, ast.Slice):
                items.append(":" + (_source(e.step) if e.step is not None else ""))
            elif isinstance(e, ast.Constant) and (e.value is None or e.value is Ellipsis):
                items.append(repr(e.value))
            elif _int_literal(e):
                items.append("#")
            elif isinstance(e, (ast.Name, ast.Attribute, ast.Subscript, ast.BinOp)) and not isinstance(e, ast.Starred):
                items = None
                break
            else:
                return None
        levels.append(",".join(items) if items is not None else "=" + _source(sl))
        node = node.value
    base = _dotted(node)
    if base is None or not levels:
        return None
    root = base.split(".")[0]
    return f"{base}@{generation.get(root, 0)}" + "".join(f"[{x}]" for x in reversed(levels))


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _source(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a message detail only
        return ""


def _decorator_names(fn) -> list[str]:
    return [(_dotted(d.func if isinstance(d, ast.Call) else d) or "").split(".")[-1] for d in fn.decorator_list]


def _alternative_of(fn) -> str:
    """``entry`` for a function decorated ``@register(entry, ...)`` / ``@impl_for(entry)``: a
    decorator call whose first argument names another function registers this one as another body
    of it (a backend's implementation, reached through ``entry``'s dispatch). Operator
    registrations (``@custom_op("ns::op")``) name a string, not a function."""
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and d.args and (_dotted(d.func) or "").split(".")[-1] not in _REGISTERS \
                and (_dotted(d.func) or "").split(".")[-1] not in ("wraps", "partial", "lru_cache", "cache"):
            name = _dotted(d.args[0])
            if name and name.split(".")[-1] != fn.name and not name.split(".")[0] in ("torch", "triton", "tl"):
                return name
    return ""


def public_entry(name: str, cls: str | None, bases: tuple[str, ...], decorators: list[str]) -> bool:
    """Whether a function is where tensors enter from code its module's author does not see: a
    public module function, a public method of a public class, ``forward``/``backward`` of a
    module or autograd Function, a function registered as an operator."""
    if any(d in _REGISTERS for d in decorators):
        return True
    if cls is None:
        return not name.startswith("_")
    if name in ("forward", "backward") and any("Function" in b or b.split(".")[-1] == "Module" for b in bases):
        return True
    if name in ("forward", "__call__"):
        return not cls.startswith("_")
    return not name.startswith("_") and not cls.startswith("_")


class _FunctionScan:
    """One function: its local facts in source order, and the calls it makes."""

    def __init__(self, fn, qualname: str, params: set[str], contiguous: set[str], out: list[CallSite],
                 wanted: frozenset | None = None):
        self.fn = fn
        self.wanted = wanted
        self.qualname = qualname
        self.params = params
        self.local: dict[str, ArgFact] = {p: (ArgFact("packed", p, p) if p in contiguous else ArgFact("param", p, p))
                                          for p in params}
        self.out = out
        self.imports: dict[str, str] = {}  # imports made inside the function
        self.extents: dict[str, tuple[str, ...]] = {}  # local name -> tensors whose extents it is built from
        self.literals: set[str] = set()  # local names bound to literals (`n_reqs, n_vocab = 3, 300`)
        self.checked: dict[int, frozenset] = {}  # call -> names contiguous where it runs
        self.generation: dict[str, int] = {}  # local name -> how often it was assigned so far

    def fact(self, node) -> ArgFact:
        if isinstance(node, ast.Name):
            return self.local.get(node.id, _UNKNOWN)
        if isinstance(node, ast.Attribute):
            d = _dotted(node)
            if d and d.startswith("self.") and d.count(".") == 1:
                return ArgFact("attr", d[5:], d)
            if node.attr in ("T", "mT"):
                return ArgFact("strided", text=d or "")
            if node.attr == "data":
                return self.fact(node.value)
            return _UNKNOWN
        if isinstance(node, ast.Subscript):
            base = self.fact(node.value)
            sl = node.slice
            elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            view = view_key(node, self.generation)
            if strided_subscript(elts):
                # A slice leaves gaps (not dense): `empty_like` of it is contiguous.
                return ArgFact("strided", "slice", text=_source(node), view=view)
            return replace(base if base.kind in ("param", "unknown") else _UNKNOWN, view=view)
        if isinstance(node, ast.IfExp):
            a, b = self.fact(node.body), self.fact(node.orelse)
            if isinstance(node.orelse, ast.Constant) and node.orelse.value is None:
                return a
            if isinstance(node.body, ast.Constant) and node.body.value is None:
                return b
            return a if a == b else _UNKNOWN
        if isinstance(node, ast.Call):
            f = node.func
            name = _dotted(f) or (f.attr if isinstance(f, ast.Attribute) else "")
            last = name.split(".")[-1]
            if last in _LIKE and node.args:
                src = self.fact(node.args[0])
                like = (_dotted(node.args[0]) or "").split(".")[0]
                sized = (like,) if like else ()
                if any(k.arg == "memory_format" for k in node.keywords):
                    return ArgFact("packed", text=_source(node), sized_from=sized)
                if src.kind == "packed":
                    return ArgFact("packed", src.name, src.text, sized_from=sized)
                if src.kind == "param":
                    return ArgFact("like", src.name, _dotted(node.args[0]) or "", sized_from=sized)
                return ArgFact("unknown", text=_source(node), sized_from=sized)
            if last == "contiguous" and isinstance(f, ast.Attribute):
                recv = self.fact(f.value)  # the same extents as what it copies
                return ArgFact("packed", recv.name if recv.kind == "param" else None, _source(node))
            if last in _ALLOCATORS:
                sized = self.extent_sources(node)
                if not sized and not self.literal_sizes(node):
                    sized = ("?",)  # sized by names the analysis does not place (a parameter)
                return ArgFact("packed", text=_source(node), sized_from=sized)
            if isinstance(f, ast.Attribute):
                recv = self.fact(f.value)
                if last in _STRIDED:
                    return ArgFact("strided")
                if last in _KEEPS:
                    # A reshape or a copy may change the strides a view of it had ("": not
                    # the tensor it was made from, strides unknown).
                    return replace(recv, view="") if recv.kind in ("packed", "param") else _UNKNOWN
            return _UNKNOWN
        return _UNKNOWN

    def arg_fact(self, node, checked: frozenset = frozenset()) -> ArgFact:
        """The fact of a call's argument, with the argument as written where the fact has no text
        (what a rule names as the caller's tensor); a name in ``checked`` (contiguous where the
        call runs, :func:`_contiguous_by_branch`) is packed."""
        if (isinstance(node, ast.Constant) and type(node.value) is int) or (
                isinstance(node, ast.Name) and node.id in self.literals):
            # A number the caller writes (or a name bound to one): what a size parameter is at
            # this call (`top_k = 5` ... `f(cand, top_k)`).
            return ArgFact("literal", text=_source(node))
        got = self.fact(node)
        if isinstance(node, ast.Name) and node.id in checked and got.kind != "strided":
            return replace(got, kind="packed", text=got.text or node.id)
        if not got.text:
            text = _dotted(node)
            if text:
                got = replace(got, text=text)
        return got

    def literal_sizes(self, node: ast.Call) -> bool:
        """Whether an allocation's sizes are all literals or names bound to literals."""
        for a in [*node.args, *(k.value for k in node.keywords if k.arg in ("size", None))]:
            for n in ast.walk(a):
                if isinstance(n, ast.Name) and n.id not in self.literals:
                    return False
                if isinstance(n, (ast.Attribute, ast.Call, ast.Subscript)):
                    return False
        return True

    def extent_sources(self, node, nodes: list[ast.AST] | None = None) -> tuple[str, ...]:
        """The tensors whose extents an expression is built from: `x.shape`, `x.size(1)`,
        `x.numel()`, `len(x)`, and local names assigned from those (`n, v = x.shape`). ``nodes`` is
        ``walk(node)`` when the caller has it."""
        out: list[str] = []
        for n in walk(node) if nodes is None else nodes:
            src = None
            if isinstance(n, ast.Attribute) and n.attr == "shape":
                src = _dotted(n.value)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("size", "numel"):
                src = _dotted(n.func.value)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args:
                src = _dotted(n.args[0])
            elif isinstance(n, ast.Name) and n.id in self.extents:
                out.extend(self.extents[n.id])
            if src:
                out.append(src.split(".")[0] if not src.startswith("self.") else src)
        return tuple(dict.fromkeys(out))

    def assign(self, target, value) -> None:
        nodes = walk(value)
        literal = all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.BinOp, ast.UnaryOp, ast.operator,
                                     ast.unaryop, ast.Load)) or (isinstance(n, ast.Name) and n.id in self.literals)
                      for n in nodes)
        targets = _bound_names(target)
        for n in targets:
            if literal:
                self.literals.add(n.id)
            else:
                self.literals.discard(n.id)
        sources = self.extent_sources(value, nodes)
        for n in targets:
            if sources:
                self.extents[n.id] = sources
            else:
                self.extents.pop(n.id, None)
        if isinstance(target, ast.Name):
            self.local[target.id] = self.fact(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.local[n.id] = _UNKNOWN
        for n in ast.walk(target):
            if isinstance(n, ast.Name):  # a later view of it is of another tensor
                self.generation[n.id] = self.generation.get(n.id, 0) + 1

    def run(self, attrs: dict[str, bool] | None) -> None:
        """One walk of the function: its assignments, imports and calls, then each call judged with
        the last assignment of each name before it (flow-insensitive, in source order)."""
        events = []  # (line, col, order, node)
        for n in walk(self.fn):
            if isinstance(n, ast.Call):
                events.append((n.lineno, n.col_offset, 1, n))
            elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor)):
                # An assignment takes effect after its value: order it at its end.
                events.append((n.end_lineno or n.lineno, n.end_col_offset or 0, 0, n))
            elif isinstance(n, ast.ImportFrom) and (n.module or n.level):
                # `from .mod import f` keeps its dots: the linker resolves it from the caller's module.
                where = "." * (n.level or 0) + (f"{n.module}." if n.module else "")
                for a in n.names:
                    self.imports[a.asname or a.name] = f"{where}{a.name}"
        events.sort(key=lambda e: (e[0], e[1], e[2]))
        self.checked = _contiguous_by_branch(self.fn)
        for _, _, _, n in events:
            if isinstance(n, ast.Call):
                self.call(n)
            elif isinstance(n, ast.Assign):
                for t in n.targets:
                    self.assign(t, n.value)
                    if attrs is not None:
                        d = _dotted(t)
                        if d and d.startswith("self.") and d.count(".") == 1:
                            packed = self.fact(n.value).kind == "packed"
                            attrs[d[5:]] = attrs.get(d[5:], True) and packed
            elif isinstance(n, ast.AnnAssign) and n.value is not None:
                self.assign(n.target, n.value)
            elif isinstance(n, (ast.For, ast.AsyncFor)):
                self.assign(n.target, n.iter)

    def call(self, n: ast.Call) -> None:
        callee = _dotted(n.func)
        if callee is None or callee.split(".")[0] in _SKIP_ROOTS:
            return
        if self.wanted is not None and not any(part in self.wanted for part in callee.split(".")[-2:]):
            return
        root = callee.split(".")[0]
        if "." in callee and root != "self" and root in self.local:
            return  # a method of a local value (`x.view(...)`)
        args, star = [], False
        checked = self.checked.get(id(n), frozenset())
        for a in n.args:
            if isinstance(a, ast.Starred):
                star = True
                break
            args.append(self.arg_fact(a, checked))
        kwargs = {}
        for k in n.keywords:
            if k.arg is None:
                star = True
                continue
            kwargs[k.arg] = self.arg_fact(k.value, checked)
        if not any(f.kind not in ("unknown", "literal") or f.view for f in (*args, *kwargs.values())):
            return  # nothing to tell its callee of a tensor
        head, _, rest = callee.partition(".")
        if head in self.imports:
            callee = "@" + self.imports[head] + ("." + rest if rest else "")
        self.out.append(CallSite(self.qualname, callee, n.lineno, tuple(args), kwargs, star))


def _bound_names(target) -> list[ast.Name]:
    """The names an assignment target binds: itself, or the names of a tuple / list target (a
    subscript or attribute target, `cand[..., k:] = 0`, binds none: it writes into a value)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    return []


def _contiguous_tests(test, holds: bool) -> set[str]:
    """Names ``test`` shows contiguous when it evaluates to ``holds``: ``x.is_contiguous()`` (and
    ``and`` of such) holding, ``not x.is_contiguous()`` (and ``or`` of such) failing."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, holds = test.operand, not holds
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if holds else ast.Or):
        return set().union(*(_contiguous_tests(v, holds) for v in test.values))
    if (holds and isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute)
            and test.func.attr == "is_contiguous" and not test.args and not test.keywords
            and isinstance(test.func.value, ast.Name)):
        return {test.func.value.id}
    return set()


def _ends(body) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break))


def _contiguous_by_branch(fn) -> dict[int, frozenset]:
    """For each call in ``fn`` (by ``id``), the names an enclosing test shows contiguous where it
    runs: the body of ``if x.is_contiguous():``, the ``else`` of ``if not x.is_contiguous():``,
    and what follows ``if not x.is_contiguous(): raise`` (or ``return``) in the same block. A
    name assigned inside the branch is left to the assignment's own fact."""
    out: dict[int, frozenset] = {}

    def mark(stmts, names: frozenset) -> None:
        if not names:
            return
        assigned = {n.id for st in stmts for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        keep = names - assigned
        if keep:
            for st in stmts:
                for n in ast.walk(st):
                    if isinstance(n, ast.Call):
                        out[id(n)] = out.get(id(n), frozenset()) | keep

    def block(stmts) -> None:
        for i, st in enumerate(stmts):
            if isinstance(st, ast.If):
                mark(st.body, frozenset(_contiguous_tests(st.test, True)))
                failing = frozenset(_contiguous_tests(st.test, False))
                mark(st.orelse, failing)
                if _ends(st.body) and not st.orelse:
                    mark(stmts[i + 1:], failing)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    block(inner)
            for h in getattr(st, "handlers", ()):
                block(h.body)

    block(fn.body)
    return out


def _params(fn) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _contiguous_at_entry(fn, params: list[str], defs=None) -> set[str]:
    names = _decorator_names(fn)
    if not any("contiguous" in d.lower() or d == "input_guard" for d in names):
        return _checked_by_registration(fn, params, defs or {})
    exempt: set[str] = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Call):
            for k in d.keywords:
                if k.arg and "contiguous" in k.arg and k.arg.startswith(("no_", "skip", "exclude", "except")):
                    vals = k.value.elts if isinstance(k.value, (ast.List, ast.Tuple, ast.Set)) else [k.value]
                    exempt |= {v.value for v in vals if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return set(params) - exempt


def _checked_by_registration(fn, params: list[str], defs: dict) -> set[str]:
    """Parameters a registering decorator checks for contiguity before every call: a decorator
    call given a module function as an argument (``@op.register_impl("triton",
    supports_args=_supports)``) that returns a true value only where its parameter is contiguous
    (:func:`_true_only_if_contiguous`), with the same name at the same position as the decorated
    function's: a dispatcher that asks such a predicate with the call's arguments before choosing
    the function never hands it another layout."""
    out: set[str] = set()
    for d in fn.decorator_list:
        if not isinstance(d, ast.Call):
            continue
        for value in [*d.args, *(k.value for k in d.keywords)]:
            pred = defs.get(value.id) if isinstance(value, ast.Name) else None
            if pred is None or pred is fn:
                continue
            pparams = _params(pred)
            for name in _true_only_if_contiguous(pred):
                i = pparams.index(name)
                if i < len(params) and params[i] == name:
                    out.add(name)
    return out


def _true_only_if_contiguous(fn) -> set[str]:
    """Parameters of ``fn`` that must be contiguous for it to return a true value, read from its
    top-level statements up to the first that may return otherwise: ``if <test>: return False``
    (or None, or ``raise``) where ``not p.is_contiguous()`` is the test or one of its ``or``
    terms; ``assert p.is_contiguous()``; ``return p.is_contiguous() and ...``. A parameter the
    function assigns is left out."""
    params = set(_params(fn))
    assigned = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    found: set[str] = set()

    def fails(body) -> bool:
        return len(body) == 1 and (isinstance(body[0], ast.Raise) or (
            isinstance(body[0], ast.Return) and (body[0].value is None or (
                isinstance(body[0].value, ast.Constant) and body[0].value.value in (None, False)))))

    for stmt in fn.body:
        if isinstance(stmt, ast.If) and not stmt.orelse and fails(stmt.body):
            found |= _contiguous_tests(stmt.test, False)
        elif isinstance(stmt, ast.Assert):
            found |= _contiguous_tests(stmt.test, True)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                found |= _contiguous_tests(stmt.value, True)
            break
        elif not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.Pass, ast.Delete)):
            break
    return (found & params) - assigned


# An identifier called as a function or method (`f(`, `mod.f(`, `self.m(`, `Cls.apply(`): the
# identifier before `(` (whitespace between allowed), from its first ASCII letter or underscore on
# (`1abc(` calls `abc`). Matched on the reversed text, where each match starts at a literal `(`:
# the forward pattern `([A-Za-z_]\w*)\s*\(` tries a match at every letter of the source and took
# most of the time of a module's call index.
_CALLED_REVERSED = re.compile(r"\(\s*(\w*[A-Za-z_])")


_EXTERNAL = ("torch", "triton", "numpy", "typing", "collections", "functools", "itertools", "os", "sys", "math",
             "dataclasses", "enum", "abc", "contextlib", "logging", "warnings", "re", "einops", "packaging",
             "transformers", "jax", "cupy")


def callable_names(model) -> frozenset:
    """Names a call of which may reach a launcher of the linted tree: the module's own functions
    and classes (``Cls.apply``), and what it imports from anything but the standard library,
    torch, triton and their like."""
    out = {"apply"}
    for q in model.functions:
        out.update(q.split("."))
    for local, full in model.imports.items():
        if not full.startswith(_EXTERNAL) or full.startswith("."):
            out.add(local)
    return frozenset(out)


def called_names(source: str) -> frozenset:
    """Every identifier the module calls (a regular expression over its text: what the tree
    checks before reading a module for its calls of a launcher)."""
    return frozenset(name[::-1] for name in _CALLED_REVERSED.findall(source[::-1]))


def _functions(tree: ast.Module):
    """(function or method node, class name, class bases) of a module, kernels left out."""
    for s in tree.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield s, None, ()
        elif isinstance(s, ast.ClassDef):
            bases = tuple(_dotted(b) or "" for b in s.bases)
            for m in s.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield m, s.name, bases


def collect_functions(tree: ast.Module) -> dict[str, FunctionInfo]:
    """What a caller needs to know of each function of a module (no walk of their bodies)."""
    out: dict[str, FunctionInfo] = {}
    defs = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for fn, cls, bases in _functions(tree):
        names = _decorator_names(fn)
        if any(d in ("jit", "autotune", "heuristics") for d in names):
            continue
        params = _params(fn)
        qual = f"{cls}.{fn.name}" if cls else fn.name
        autograd = bool(cls) and fn.name in ("forward", "backward") and any("Function" in b for b in bases)
        out[qual] = FunctionInfo(qual, tuple(params), public_entry(fn.name, cls, bases, names),
                                 tuple(sorted(_contiguous_at_entry(fn, params, defs))), "stride_guard" in names, fn.lineno,
                                 autograd, any(d in _REGISTERS for d in names), _alternative_of(fn),
                                 _none_defaults(fn))
    return out


def _none_defaults(fn) -> tuple[str, ...]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return tuple(p.arg for p, d in pairs if isinstance(d, ast.Constant) and d.value is None)


def collect_calls(tree: ast.Module, functions: dict[str, FunctionInfo], wanted: frozenset | None = None,
                  lines: list[str] | None = None):
    """(calls, attrs) of a module: the call sites of its functions (those calling one of
    ``wanted`` by name, when given) with what they pass, and the attributes its classes allocate.
    With the module's source ``lines``, a function whose text calls none of ``wanted`` (and
    assigns no ``self.`` attribute) is not walked."""
    calls: list[CallSite] = []
    attrs: dict[str, dict[str, str]] = {}
    class_attrs: dict[str, dict[str, bool]] = {}
    for fn, cls, _ in _functions(tree):
        qual = f"{cls}.{fn.name}" if cls else fn.name
        info = functions.get(qual)
        if info is None:
            continue
        if wanted is not None and lines is not None:
            text = "\n".join(lines[fn.lineno - 1:fn.end_lineno])
            if wanted.isdisjoint(called_names(text)) and not (cls and "self." in text and "=" in text):
                continue
        scan = _FunctionScan(fn, qual, set(info.params), set(info.contiguous_params), calls, wanted)
        scan.run(class_attrs.setdefault(cls, {}) if cls else None)
    # The module's own statements (a script's `if __name__ == "__main__":` block) call too.
    top = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                                      ast.Import, ast.ImportFrom))]
    if top:
        _FunctionScan(ast.Module(body=top, type_ignores=[]), MODULE_CALLER, set(), set(), calls, wanted).run(None)
    for cls, found in class_attrs.items():
        packed = {a: "packed" for a, ok in found.items() if ok}
        if packed:
            attrs[cls] = packed
    return calls, attrs
