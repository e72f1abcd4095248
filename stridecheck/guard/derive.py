"""Contracts derived from a Triton kernel's own source (bare ``@stride_guard`` on a kernel).

The kernel's module is read once through the linter's access model
(:func:`stridecheck.lint.kernels.build_kernels`: every address split into ``index * step``
terms, with the branches on kernel parameters each access sits under). Per pointer parameter,
each access becomes an :class:`AccessPlan`: its stepping terms, each step an arithmetic
expression of kernel parameters and literals that a launch's values evaluate.

What a term is:

* a **unit term** (``+ offs``): step 1, when its index walks elements (an arange, a program
  id, a loop counter); a scalar or loaded value added with no step (``+ start``,
  ``+ tl.load(idx)``) is an *offset* and says nothing of the layout;
* a **stepping term** (``row * x_stride``, ``col * vocab_size``, ``h * STRIDE_H`` with a
  ``tl.constexpr`` stride, ``pid * BLOCK_M * stride_m``): step = the launch value of its step.
  A factor that is a tile size (a constexpr some ``tl.arange`` extends over) is dropped: ``pid *
  BLOCK_M`` tiles walk rows of stride ``stride_m`` in blocks, and a tile may span a flattened
  boundary;
* a term whose index is a constant (``I_dim * stride_n``, a fixed shift into a tensor) is an
  offset; a term whose step is not arithmetic of parameters (a loaded value, a call) is
  *opaque*: it may step any dim, so it excuses the packing check;
* ``tl.make_block_ptr`` / ``tl.make_tensor_descriptor``: their ``strides=`` are stepping
  terms whose indices are the block's (vectors); a host ``TensorDescriptor`` argument (a
  parameter used as ``desc.load(...)`` / ``desc.store(...)``) is checked the same way from its
  ``shape`` and ``strides`` against its ``base`` tensor (see :mod:`stridecheck.guard.check`).

At a launch the access exists only if its branch conditions hold for the launch's values: code
under ``if HAS_SHIFT:`` with ``HAS_SHIFT=False`` (a constexpr, or a ``None`` argument, which
Triton specialises) is compiled away, and what it would have read is not judged. Whether the
values the terms take reach the tensor as its own strides do is :mod:`stridecheck.guard.layout`'s
question.

What this cannot see: two stride arguments swapped when both are strides of the tensor
(``positional_stride_swap.py`` on a square matrix), faults that depend on values, not layouts
(32-bit offset overflow), a step that divides a dim's extent (a row of 600 stepped by 300 reads
as that row split in two), and accesses through pointers the model cannot trace to a parameter.
"""

from __future__ import annotations

import ast
import inspect
import linecache
from dataclasses import dataclass, field

from stridecheck.guard.spec import StrideGuardError
from stridecheck.lint.model import IndexSource

_WALKS = frozenset({IndexSource.ARANGE, IndexSource.PROGRAM_ID, IndexSource.LOOP})
# An index that varies at run time (or is a launch argument) selects elements: its step is judged.
_VARIES = frozenset(
    {
        IndexSource.ARANGE,
        IndexSource.PROGRAM_ID,
        IndexSource.LOOP,
        IndexSource.LOADED,
        IndexSource.SCALAR_ARG,
        IndexSource.OTHER,
    }
)
# Methods of a host tensor descriptor inside a kernel; the last five write.
_DESC_READ = frozenset({"load", "gather"})
_DESC_WRITE = frozenset({"store", "scatter", "atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor"})
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


@dataclass(frozen=True, slots=True)
class TermPlan:
    """One stepping term of an address."""

    text: str  # as written: "row * x_stride"
    index: str  # its index: "row"
    step: str  # its step after dropping tile factors: "x_stride"; "" for a unit step
    kind: str  # the model's step kind: "unit" | "stride" | "size" | "literal"
    expr: str  # the step as a Python expression of parameters ("1" for a unit step)
    names: tuple[str, ...]  # the parameters ``expr`` reads
    vector: bool  # the index holds a tl.arange
    bound: str | None = None  # a store's mask bound on this (unit) term's index
    tiled: bool = False  # a tile factor was dropped from the step (`pid * BLOCK_M * stride_m`)


@dataclass(frozen=True, slots=True)
class AccessPlan:
    op: str  # "load" | "store" | "atomic" | "block_ptr" | "descriptor"
    line: int
    text: str  # the address's terms joined, for messages
    writes: bool
    conditions: tuple = ()  # stridecheck.lint.model.Condition's: all must hold for it to exist
    terms: tuple[TermPlan, ...] = ()
    opaque: tuple[str, ...] = ()  # terms whose step is not arithmetic of parameters
    offsets: tuple[str, ...] = ()  # terms that shift the address without walking


@dataclass(slots=True)
class PointerPlan:
    name: str
    accesses: list[AccessPlan] = field(default_factory=list)
    descriptor: bool = False  # a host TensorDescriptor parameter (desc.load / desc.store)
    descriptor_writes: bool = False


@dataclass(slots=True)
class DerivedContract:
    """The contract of a kernel, derived from its source (see the module docstring)."""

    func_name: str
    params: list[str]
    pointers: list[PointerPlan]
    source_path: str = ""

    def reads(self) -> list[str]:
        """Every parameter whose launch value a check reads, in signature order."""
        names = {p.name for p in self.pointers}
        for p in self.pointers:
            for a in p.accesses:
                names.update(c.param for c in a.conditions)
                for t in a.terms:
                    names.update(t.names)
                    if t.bound:
                        names.add(t.bound)
        return [n for n in self.params if n in names]

    def describe(self) -> str:
        lines = [f"{self.func_name} (derived from {self.source_path}):"]
        for p in self.pointers:
            if p.descriptor:
                lines.append(f"  {p.name}: host TensorDescriptor{' (written)' if p.descriptor_writes else ''}: "
                             f"its shape and strides must address its base tensor's elements")
            for a in p.accesses:
                parts = []
                for t in a.terms:
                    if t.kind == "unit":
                        parts.append(f"unit `{t.text}` walks elements 1 apart")
                    else:
                        parts.append(f"`{t.text}` steps by {t.step}")
                    if t.bound:
                        parts.append(f"stored below {t.bound}")
                parts += [f"`{t}` not judged" for t in a.opaque]
                parts += [f"offset `{t}` not judged" for t in a.offsets]
                when = " if " + " and ".join(_cond_text(c) for c in a.conditions) if a.conditions else ""
                lines.append(f"  {p.name} line {a.line} ({a.op}{', written' if a.writes else ''}){when}: " + "; ".join(parts))
        return "\n".join(lines)


def _cond_text(c) -> str:
    if c.test == "none":
        return f"{c.param} is {'' if c.truth else 'not '}None"
    if c.test == "eq":
        return f"{c.param} {'==' if c.truth else '!='} {c.value}"
    return c.param if c.truth else f"not {c.param}"


# ----------------------------------------------------------------------------- steps


def _factors(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _arithmetic(node: ast.expr, params: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in params
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _OPS) and _arithmetic(node.left, params) and _arithmetic(node.right, params)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub) and _arithmetic(node.operand, params)
    return False


def step_expression(text: str, params: set[str], tiles: set[str]) -> tuple[str, str, tuple[str, ...], bool] | None:
    """``(step text, Python expression, parameters read, whether tile factors were dropped)`` of
    a step; None when the step is not arithmetic of parameters and integer literals."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not _arithmetic(node, params):
        return None
    factors = _factors(node)
    kept = [f for f in factors if not (isinstance(f, ast.Name) and f.id in tiles)]
    if len(kept) != len(factors):
        if not kept:
            return "", "1", (), True
        text = " * ".join(ast.unparse(f) for f in kept)
        node = ast.parse(text, mode="eval").body
    names = tuple(sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}))
    return ast.unparse(node), ast.unparse(node), names, len(kept) != len(factors)


# ----------------------------------------------------------------------------- planning

_PLAIN_INDEX = ("//", "%", ">>", "<<", "/")


def _store_bound(acc, k: int, params: list[str]) -> str | None:
    """The one mask bound a store puts on term ``k`` (its unit term), when the model says so."""
    if not (acc.writes and acc.op == "store"):
        return None
    term = acc.terms[k]
    if any(op in term.index.text for op in _PLAIN_INDEX):
        return None  # `offs // 2 < n`-like indices: the bound would overstate the extent
    if acc.mask_bound_reach is not None:
        bounds = acc.covering_bounds(k)
    else:
        # Older models: only a store whose one vector index is this unit term, with one bound.
        vectors = [t for t in acc.terms if IndexSource.ARANGE in t.index.sources]
        bounds = acc.mask_bounds if len(vectors) == 1 and vectors[0] is term else ()
    if len(bounds) == 1 and bounds[0] in params:
        return bounds[0]
    return None


def plan_access(acc, params: list[str], tiles: set[str]) -> AccessPlan:
    """The plan of one access of the model (see the module docstring)."""
    pset = set(params)
    terms, opaque, offsets = [], [], []
    if acc.op in ("block_ptr", "descriptor"):
        for i, text in enumerate(acc.descriptor_strides):
            got = step_expression(text, pset, tiles)
            if got is None:
                opaque.append(text)
                continue
            step, expr, names, _ = got
            terms.append(TermPlan(f"strides[{i}] = {text}", f"block index {i}", step, "stride", expr, names, True))
    else:
        for k, term in enumerate(acc.terms):
            sources = term.index.sources
            vector = IndexSource.ARANGE in sources
            if term.step.kind.value == "unit":
                if sources & _WALKS:
                    terms.append(TermPlan(term.text, term.index.text, "", "unit", "1", (), vector, _store_bound(acc, k, params)))
                else:
                    offsets.append(term.text)
                continue
            if not sources & _VARIES:
                offsets.append(term.text)  # a constant index: a fixed shift, not a walk
                continue
            got = step_expression(term.step.text, pset, tiles) if term.step.kind.value != "other" else None
            if got is None:
                opaque.append(term.text)
                continue
            step, expr, names, tiled = got
            kind = "unit" if expr == "1" else term.step.kind.value
            terms.append(TermPlan(term.text, term.index.text, step, kind, expr, names, vector, None, tiled))
    return AccessPlan(
        acc.op,
        acc.span.line,
        " + ".join(t.text for t in acc.terms) or ", ".join(acc.descriptor_strides),
        bool(acc.writes and acc.op in ("store", "atomic")),
        tuple(acc.conditions),
        tuple(terms),
        tuple(opaque),
        tuple(offsets),
    )


def _tiles(model) -> set[str]:
    """Constexpr parameters some tl.arange extends over: tile sizes."""
    out: set[str] = set()
    for acc in model.accesses:
        for t in acc.terms:
            out.update(t.index.arange_blocks)
    constexprs = {p.name for p in model.params if p.constexpr}
    return out & constexprs


def plan_pointers(model, params: list[str]) -> list[PointerPlan]:
    """Per pointer parameter, its accesses' plans (``model`` is a
    :class:`stridecheck.lint.model.Kernel`, ``params`` its parameter names)."""
    tiles = _tiles(model)
    pointers: dict[str, PointerPlan] = {}
    for acc in model.accesses:
        if acc.pointer is None:
            acc = _with_base(acc, params)
        if acc.pointer is None or acc.pointer not in params:
            continue
        if acc.op not in ("load", "store", "atomic", "block_ptr", "descriptor"):
            continue
        if acc.byte_record:
            continue  # a uint8 / bitcast pointer: a constexpr record size is the step by design
        plan = pointers.setdefault(acc.pointer, PointerPlan(acc.pointer))
        ap = plan_access(acc, params, tiles)
        if ap not in plan.accesses:
            plan.accesses.append(ap)
    out = []
    for p in pointers.values():
        # Keep accesses that judge something, and the writes (a pointer stored through must not
        # overlap, whatever its address).
        p.accesses = [a for a in p.accesses if a.terms or a.writes]
        if p.accesses:
            out.append(p)
    return out


def _with_base(acc, params: list[str]):
    """An access whose base pointer the model did not name (``V + h * stride_vh + ...`` with a
    one-letter pointer it took for a size): the one term that is a bare parameter at index 1 is
    the base. Returns a copy with that pointer and without that term, or ``acc`` unchanged."""
    import dataclasses

    bases = [
        k
        for k, t in enumerate(acc.terms)
        if t.index.text == "1" and not t.index.sources & _VARIES and t.step.text.strip() in params
        and t.step.text.strip().isidentifier()
    ]
    if len(bases) != 1 or acc.op not in ("load", "store", "atomic"):
        return acc
    k = bases[0]
    terms = [t for j, t in enumerate(acc.terms) if j != k]
    reach = acc.mask_bound_reach
    if reach is not None:
        shift = lambda ix: tuple(i - (i > k) for i in ix if i != k)  # noqa: E731 - indices after the removed term move down
        reach = tuple((p, shift(r), shift(w)) for p, r, w in reach)
    return dataclasses.replace(acc, pointer=acc.terms[k].step.text.strip(), terms=terms, mask_bound_reach=reach)


def descriptor_params(source: str, line: int, name: str, params: list[str]) -> dict[str, bool]:
    """Parameters a kernel uses as host tensor descriptors (``p.load(...)``), and whether each
    is written (``p.store(...)``, atomics)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    if not funcs:
        return {}
    func = min(funcs, key=lambda f: abs(f.lineno - line))
    out: dict[str, bool] = {}
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in params
            and node.func.attr in _DESC_READ | _DESC_WRITE
        ):
            p = node.func.value.id
            out[p] = out.get(p, False) or node.func.attr in _DESC_WRITE
    return out


# ----------------------------------------------------------------------------- sources

_CACHE: dict[tuple, DerivedContract] = {}
_MODULES: dict[tuple[str, int], list] = {}  # (path, hash of source) -> access model of its kernels


def _module_source(pyfn) -> tuple[str, str]:
    path = pyfn.__code__.co_filename
    lines = linecache.getlines(path, pyfn.__globals__)
    if not lines:
        try:
            return inspect.getsource(inspect.getmodule(pyfn)), path
        except (OSError, TypeError):
            raise StrideGuardError(
                f"stride_guard on {pyfn.__name__}: cannot read the kernel's source ({path}) to derive its "
                "contract; give specs instead, e.g. @stride_guard(x='M N', ...)"
            ) from None
    return "".join(lines), path


def _find_kernel(kernels, pyfn):
    named = [k for k in kernels if k.name == pyfn.__name__]
    if not named:
        return None
    first = pyfn.__code__.co_firstlineno
    # co_firstlineno is the first decorator's line; the def follows it.
    return min(named, key=lambda k: (k.span.line < first, abs(k.span.line - first)))


def _module_kernels(source: str, path: str, name: str) -> list:
    # One parse per module, however many of its kernels are guarded.
    key = (path, hash(source))
    kernels = _MODULES.get(key)
    if kernels is None:
        from stridecheck.lint.analysis import AnalysisOptions
        from stridecheck.lint.kernels import build_kernels

        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise StrideGuardError(f"stride_guard on {name}: cannot parse {path}: {exc.msg}") from None
        kernels = _MODULES[key] = build_kernels(tree, source, AnalysisOptions())
    return kernels


def derive_contract(kernel, pyfn) -> DerivedContract:
    """The derived contract of ``kernel`` (cached per kernel function).

    Raises:
        StrideGuardError: the source cannot be read or parsed, or holds no such kernel.
    """
    key = (pyfn.__code__.co_filename, pyfn.__name__, pyfn.__code__.co_firstlineno)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    source, path = _module_source(pyfn)
    model = _find_kernel(_module_kernels(source, path, pyfn.__name__), pyfn)
    if model is None:
        raise StrideGuardError(f"stride_guard on {pyfn.__name__}: no @triton.jit function of that name in {path}")
    params = list(inspect.signature(pyfn).parameters)
    pointers = plan_pointers(model, params)
    known = {p.name for p in pointers}
    for name, writes in descriptor_params(source, model.span.line, pyfn.__name__, params).items():
        if name not in known:
            pointers.append(PointerPlan(name, [], True, writes))
    pointers.sort(key=lambda p: params.index(p.name))
    contract = DerivedContract(pyfn.__name__, params, pointers, path)
    _CACHE[key] = contract
    return contract
