"""Kernel discovery and the per-kernel access model, read from Python's ``ast``.

Why ``ast`` and not libcst: the model needs a source range for every product it keeps, and
libcst computes positions by re-generating the whole module (about twice the cost of its parse);
``ast`` carries them for free and parses an order of magnitude faster. The launch side
(:mod:`stridecheck.lint.launches`) reads the same ``ast`` tree; libcst is used only to check the
result of ``--fix``.

How an address is read. Every expression of a kernel is evaluated, statement by statement, into
a *sum of products* (``_Value``): ``x_ptr + row * x_stride + offs`` is three summands, each a list
of factors. A factor remembers where its value comes from (program id, ``tl.arange``, a loop
counter, a load, a parameter, a literal), whether it is 64-bit, and which parameters it depends
on. Simple assignments are followed (``off = row * n; p = x_ptr + off`` keeps the product
``row * n`` with its own source range), ``@triton.jit`` helpers of the same module are inlined with
the caller's values bound to their parameters, and a sum that is multiplied, divided or bounded
as a whole (``tok < seq_len``) becomes one compound factor: an index, not a set of steps.
Parameters are classified only after the walk (a size is what bounds a mask, a ``range`` or a
``tl.cdiv`` anywhere, helpers included), then each address becomes ``Term``s.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from stridecheck.lint.callgraph import kept, walk
from stridecheck.lint.model import (
    Access,
    Condition,
    Factor,
    HelperCall,
    Index,
    IndexSource,
    Kernel,
    Param,
    ParamKind,
    Span,
    Step,
    StepKind,
    Term,
)

__all__ = ["SourceText", "find_kernels", "build_kernels", "refine_kernel", "size_name", "stride_name", "tensor_of"]

# ----------------------------------------------------------------------------- names

# A stride by name: `x_stride`, `stride_xm`, `strides_0`, `sx0`, `state_s_t` (fla's `_s_<dim>`).
_STRIDE_NAME = re.compile(r"(?i)(stride|^s[a-z]{0,3}_?\d$|^[a-z]\w*_s_[a-z0-9]{1,4}$)")
# Size words, matched against the `_`-separated (and lower-cased) tokens of a name.
_SIZE_TOKENS = frozenset(
    """n num size sizes sz len length lens numel count cnt dim dims width cols rows ncols nrows
    vocab hidden heads nheads seqlen ntokens tokens batch elements elems nelem nelems nelements
    total extent height depth groups nh nt nv nk hd""".split()
)
_SIZE_WHOLE = re.compile(r"^(N|M|K|D|H|V|T|L|B|E|S|C|W|HW|HD|KV)$|^(n|num)[a-z_]+$")


def _tokens(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in name.lower().split("_") if t]


def stride_name(name: str, extra: tuple[re.Pattern, ...] = ()) -> bool:
    """Whether ``name`` reads as a stride (``x_stride``, ``stride_xm``, ``sx0``)."""
    return bool(_STRIDE_NAME.search(name)) or any(p.fullmatch(name) for p in extra)


def size_name(name: str, extra: tuple[re.Pattern, ...] = ()) -> bool:
    """Whether ``name`` reads as a logical size (``n_cols``, ``vocab_size``, ``N``, ``num_heads``)."""
    if any(p.fullmatch(name) for p in extra):
        return True
    if _SIZE_WHOLE.match(name):
        return True
    return any(t in _SIZE_TOKENS for t in _tokens(name))


_PTR_SUFFIX = re.compile(r"(?i)(_?ptrs?|_?pointers?|_p)$")
_PTR_PREFIX = re.compile(r"(?i)^(ptrs?_|p_)")


def tensor_of(pointer: str) -> str:
    """The tensor a pointer parameter stands for: ``cache_ptr`` -> ``cache``, ``X`` -> ``x``."""
    base = _PTR_SUFFIX.sub("", pointer)
    base = _PTR_PREFIX.sub("", base) or pointer
    return base if not base.isupper() else base.lower()


def _pointer_like(name: str) -> bool:
    return bool(re.search(r"(?i)ptr|pointer", name))


# ----------------------------------------------------------------------------- source text


class SourceText:
    """Source ranges and text of ``ast`` nodes (whose columns count UTF-8 bytes)."""

    def __init__(self, source: str):
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.ascii = source.isascii()
        self._bytes: dict[int, bytes] = {}

    def _col(self, line: int, col: int) -> int:
        if self.ascii or line < 1 or line > len(self.lines):
            return col
        text = self.lines[line - 1]
        if text.isascii():
            return col
        raw = self._bytes.get(line)
        if raw is None:
            raw = self._bytes[line] = text.encode("utf-8")
        return len(raw[:col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno
        col, end_col = node.col_offset, node.end_col_offset or node.col_offset
        return Span(line, self._col(line, col) + 1, end_line, self._col(end_line, end_col) + 1)

    def text(self, node: ast.AST) -> str:
        line, end_line = node.lineno, node.end_lineno or node.lineno
        col, end_col = node.col_offset, node.end_col_offset
        if self.ascii:
            if line == end_line:
                return self.lines[line - 1][col:end_col]
            parts = [self.lines[line - 1][col:]]
            parts.extend(self.lines[line:end_line - 1])
            parts.append(self.lines[end_line - 1][:end_col])
            return " ".join(" ".join(p.split()) for p in parts)
        sc, ec = self._col(line, col), self._col(end_line, end_col)
        if line == end_line:
            return " ".join(self.lines[line - 1][sc:ec].split())
        parts = [self.lines[line - 1][sc:]]
        parts.extend(self.lines[line:end_line - 1])
        parts.append(self.lines[end_line - 1][:ec])
        return " ".join(" ".join(p.split()) for p in parts)


# ----------------------------------------------------------------------------- kernel discovery


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _name_ids(node: ast.AST) -> tuple[str, ...]:
    """The ids of the ``Name`` nodes in ``node`` (itself included), in ``ast.walk`` order."""
    return kept(node, "_stridecheck_names", lambda n: tuple(x.id for x in walk(n) if isinstance(x, ast.Name)))


def _stored_names(func: ast.FunctionDef) -> frozenset[str]:
    """The names a function assigns anywhere in its body."""
    return kept(func, "_stridecheck_stored", lambda n: frozenset(
        x.id for x in walk(n) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)))


def _augmented_names(stmt: ast.stmt) -> tuple[ast.Name, ...]:
    """The ``Name`` targets of the augmented assignments in ``stmt``, in ``ast.walk`` order."""
    return kept(stmt, "_stridecheck_augmented", lambda n: tuple(
        x.target for x in walk(n) if isinstance(x, ast.AugAssign) and isinstance(x.target, ast.Name)))


def _statements(body: list[ast.stmt]):
    """Every statement at module level and inside classes/if/try/with/functions (not expressions)."""
    stack = list(reversed(body))
    while stack:
        s = stack.pop()
        yield s
        for attr in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(s, attr, None)
            if sub:
                stack.extend(reversed(sub))


def _imports(body: list[ast.stmt]) -> tuple[set[str], set[str], set[str]]:
    """Names bound to triton (or a module re-exporting it), to ``triton.jit``, and to tl functions."""
    triton_names: set[str] = {"triton"}
    jit_names: set[str] = set()
    tl_names: set[str] = set()
    for s in _statements(body):
        if isinstance(s, ast.Import):
            for a in s.names:
                if "triton" in a.name:
                    triton_names.add((a.asname or a.name).split(".")[0] if not a.asname else a.asname)
        elif isinstance(s, ast.ImportFrom):
            mod = s.module or ""
            for a in s.names:
                local = a.asname or a.name
                if a.name == "jit" and "triton" in mod:
                    jit_names.add(local)
                elif "triton" in a.name or "triton" in mod:
                    triton_names.add(local)
                    if mod.endswith("language"):
                        tl_names.add(local)
    return triton_names, jit_names, tl_names


def _decorator_name(d: ast.expr) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    return _dotted(d) or ""


def _is_jit(name: str, triton_names: set[str], jit_names: set[str]) -> bool:
    if name in jit_names:
        return True
    head, _, last = name.rpartition(".")
    if last != "jit" or not head:
        return False
    root = head.split(".")[0]
    return root in triton_names or "triton" in head


def find_kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    """Every function decorated by ``triton.jit`` (any spelling), in source order."""
    triton_names, jit_names, _ = _imports(tree.body)
    found = []
    for s in _statements(tree.body):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.decorator_list:
            if any(_is_jit(_decorator_name(d), triton_names, jit_names) for d in s.decorator_list):
                found.append(s)
    found.sort(key=lambda f: (f.lineno, f.col_offset))
    return found


# ----------------------------------------------------------------------------- values


_Factor = Factor


@dataclass(frozen=True, slots=True)
class _Summand:
    factors: tuple[_Factor, ...]
    span: Span
    text: str
    neg: bool = False


@dataclass(frozen=True, slots=True)
class _Block:
    """A block pointer or tensor descriptor: base, and per dimension an offset and a stride."""

    op: str
    base: "_Value"
    strides: tuple[tuple["_Value", Span, str], ...]
    offsets: tuple["_Value | None", ...]
    span: Span


@dataclass(frozen=True, slots=True)
class _Value:
    summands: tuple[_Summand, ...] = ()
    byte_record: bool = False
    block: _Block | None = None


_EMPTY = _Value()


# A value we cannot follow: whatever is bounded may flow into it.
_OPAQUE = ("opaque",)


def _merge(factors, text: str, **extra) -> _Factor:
    srcs, params, fd, blocks, pb, lf, bounds = set(), set(), set(), set(), set(), set(), set()
    leaves, sides, pids = set(), set(), set()
    int64 = False
    for f in factors:
        srcs |= f.sources
        params |= f.params
        if f.param:
            params.add(f.param)
        fd |= f.floordiv
        blocks |= f.blocks
        pb |= f.pid_blocks
        lf |= f.loaded_from
        bounds |= f.bounds
        leaves |= f.leaves
        sides |= f.bound_sides
        pids |= f.pids
        int64 = int64 or f.int64
    literal = all(f.literal for f in factors) if factors else False
    kw = dict(
        text=text, sources=frozenset(srcs), params=frozenset(params), int64=int64, literal=literal,
        floordiv=frozenset(fd), blocks=frozenset(blocks), pid_blocks=frozenset(pb),
        loaded_from=frozenset(lf), bounds=frozenset(bounds), leaves=frozenset(leaves),
        bound_sides=frozenset(sides), pids=frozenset(pids),
    )
    kw.update(extra)
    return _Factor(**kw)


def _all_factors(v: _Value):
    for s in v.summands:
        yield from s.factors
    if v.block is not None:
        yield from _all_factors(v.block.base)
        for sv, _, _ in v.block.strides:
            yield from _all_factors(sv)
        for ov in v.block.offsets:
            if ov is not None:
                yield from _all_factors(ov)


def _params_of(v: _Value) -> set[str]:
    out: set[str] = set()
    for f in _all_factors(v):
        out |= f.params
        if f.param:
            out.add(f.param)
    return out


def _leaves_of(v: _Value) -> frozenset:
    out: set = set()
    for f in _all_factors(v):
        out |= f.leaves
    return frozenset(out)


def _disjoined(v: _Value) -> _Value:
    """``v`` with its comparisons no longer conjuncts (it sits under `|`, `or` or a negation)."""
    def fix(f: _Factor) -> _Factor:
        if not any(c for _, _, c in f.bound_sides):
            return f
        return replace(f, bound_sides=frozenset((p, lv, False) for p, lv, _ in f.bound_sides))
    return replace(v, summands=tuple(replace(s, factors=tuple(fix(f) for f in s.factors)) for s in v.summands))


def _undivided(v: _Value) -> _Value:
    """``v`` with a scaled product (``row * stride // 2``) read whole: what a product of it, or
    any expression but an address, sees."""
    if not any(f.divisor for s in v.summands for f in s.factors):
        return v
    return replace(v, summands=tuple(
        replace(s, factors=(_merge(list(s.factors), s.text, **_divisor_floordiv(s.factors)),))
        if any(f.divisor for f in s.factors) else s
        for s in v.summands
    ))


def _divisor_floordiv(factors) -> dict:
    fd = [f.floordiv for f in factors if f.divisor]
    return {"floordiv": fd[-1]} if fd else {}


def _with_int64(v: _Value, flag: bool) -> _Value:
    return replace(
        v,
        summands=tuple(
            replace(s, factors=tuple(replace(f, int64=flag) for f in s.factors)) for s in v.summands
        ),
    )


# ----------------------------------------------------------------------------- the walk

_ATOMICS = frozenset(
    "atomic_add atomic_max atomic_min atomic_and atomic_or atomic_xor atomic_xchg atomic_cas".split()
)
_PASS_THROUGH = frozenset(
    """multiple_of max_contiguous max_constancy broadcast_to reshape view expand_dims ravel
    broadcast assume""".split()
)
_RANDOM = frozenset("rand randn randint randint4x philox".split())
_RANGES = frozenset({"range", "static_range"})
_INT64 = re.compile(r"u?int64")
_BYTE_TYPES = re.compile(r"(?i)u?int8|fp8|float8|bitcast")
_MAX_INLINE_DEPTH = 4
_MAX_ALTERNATIVES = 3


@dataclass
class _Raw:
    op: str
    address: _Value | None
    mask: _Value | None
    span: Span
    writes: bool
    via_helper: str | None
    in_loop: bool = False  # inside a loop of the kernel or of a helper it inlines
    conditions: tuple = ()  # Condition's of the branches it sits under


@dataclass
class _Facts:
    """What one kernel's walk (helpers inlined) learnt; parameters are the kernel's own."""

    bound: set = field(default_factory=set)  # bound a comparison, a range or a tl.cdiv
    address: set = field(default_factory=set)  # appear in an address
    used: set = field(default_factory=set)  # reach an address, a stored value, a rand offset...
    multiplies_index: set = field(default_factory=set)  # multiply an index inside an address
    times_size: set = field(default_factory=set)  # multiplied by a size inside an address
    bases: set = field(default_factory=set)  # the base pointer of an address
    extents: set = field(default_factory=set)  # the extent of a tl.arange (a tile, when constexpr)
    multiplied: set = field(default_factory=set)  # a factor of a product (a pointer never is)
    none_tested: set = field(default_factory=set)  # compared with None (an optional tensor)
    evidence: set = field(default_factory=set)  # named as an address's first name in the text
    raws: list = field(default_factory=list)
    helper_calls: list = field(default_factory=list)
    anns: dict = field(default_factory=dict)  # the kernel's parameter annotations


_ASSERTIONS = frozenset({"device_assert", "static_assert", "assume"})


class _Walker:
    def __init__(self, ctx: "_Context", func: ast.FunctionDef, facts: _Facts, env: dict, params: dict,
                 depth: int, helper: str | None, stack: tuple[str, ...]):
        self.ctx = ctx
        self.func = func
        self.facts = facts
        self.env = env
        self.params = params  # name -> annotation text (only for the analysed kernel itself)
        self.depth = depth
        self.helper = helper
        self.stack = stack
        self.returned: _Value | None = None
        # The branches the returned value was made under, and the values (with their branches)
        # it holds on the helper's other if-arms: its caller's name gets both.
        self.returned_conds: tuple[Condition, ...] = ()
        self.returned_alts: list[tuple[_Value, tuple[Condition, ...]]] = []
        # The call of the helper last inlined here, and what it returned: (call node, walker).
        self.inlined: tuple[ast.Call, "_Walker"] | None = None
        self.loops = 0  # depth of enclosing loops
        # Inside an assertion: a `tl.cdiv` there checks a relation (`tl.cdiv(stride_k, stride_m)`,
        # a ratio of strides) and bounds no loop or grid, so it gives no parameter a size role.
        self.checking = 0
        self.in_loop = False  # a helper inlined inside a loop of its caller
        self.alts: dict[str, list[_Value]] = {}  # other values a name holds on another if-arm
        self.conds: tuple[Condition, ...] = ()  # branches on parameters the walk is inside
        # Local names holding a test (`aligned = (stride_xn == 1) & (n % BLOCK == 0)`): a branch on
        # the name is a branch on the test. Per name, the conditions it puts when true and when false.
        self.tests: dict[str, tuple[list[Condition] | None, list[Condition] | None]] = {}
        # The branches a name's value (and each of its alternatives) was made under: an address
        # built under `if SHUFFLED:` and read after the `if` exists only where that branch ran.
        self.vconds: dict[str, tuple[Condition, ...]] = {}
        self.alt_conds: dict[str, list[tuple[Condition, ...]]] = {}
        # An inlined helper's parameters whose None-ness the call settles (`pid_1=None` left to
        # its default: True; `pid_1=pid_0` passed: False): `if pid_1 is None:` has one live arm.
        self.none_params: dict[str, bool] = {}
        self.bounded_names = ctx.bounded_names(func)
        self.evidence: frozenset = ctx.pointer_evidence(func)  # mapped to the kernel's names in inline()

    # -- statements

    def block(self, body: list[ast.stmt]) -> None:
        for s in body:
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            v = self.eval(s.value)
            for t in s.targets:
                self.assign(t, s.value, v)
            if self.alts and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                self._alternatives_through(s.targets[0].id, s.value, v)
                if s.targets[0].id in self.alts:
                    self.vconds[s.targets[0].id] = self.conds_of(s.value, with_alts=True)
            if self.inlined is not None and self.inlined[0] is s.value and len(s.targets) == 1 \
                    and isinstance(s.targets[0], ast.Name):
                # `c_ptrs = _get_c_ptrs(..., sort_c)`: a value the helper made under `if sort_c:`
                # exists only where that branch is compiled in; its other arms' values are the
                # name's alternatives.
                w, name = self.inlined[1], s.targets[0].id
                self.vconds[name] = tuple(dict.fromkeys(self.vconds.get(name, ()) + w.returned_conds))
                if w.returned_alts:
                    self.alts[name] = [a for a, _ in w.returned_alts][:_MAX_ALTERNATIVES]
                    self.alt_conds[name] = [tuple(dict.fromkeys(self.conds + c)) for _, c in w.returned_alts][
                        :_MAX_ALTERNATIVES]
            self.inlined = None
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, s.value, self.eval(s.value))
        elif isinstance(s, ast.AugAssign):
            rhs = self.eval(s.value)
            if isinstance(s.target, ast.Name):
                cur = self.name(s.target)
                v = self.binop(s.op, cur, rhs, s, s.target)
                if self.loops and v.block is None and _base_summand(v, self) is None:
                    # An integer carried across iterations (`step += 1`): a loop counter.
                    v = self._counter(s.target, v)
                self.vconds[s.target.id] = self.conds_of(s)
                self.env[s.target.id] = v
        elif isinstance(s, ast.Expr):
            self.eval(s.value)
        elif isinstance(s, ast.If) and (live := self._settled_none_test(s.test)) is not None:
            # Triton specialises `p is None` on the call's argument: only one arm is compiled.
            self.block(s.body if live else s.orelse)
        elif isinstance(s, ast.If):
            self.eval(s.test)
            outer = self.conds
            body_conds, else_conds = self._branch_conditions(s.test)
            if not s.orelse:
                before, before_vc = dict(self.env), dict(self.vconds)
                self.conds = outer + body_conds
                self.block(s.body)
                self.conds = outer
                self._keep_alternatives(before, self.env, before_vc)
            else:
                before, before_vc = dict(self.env), dict(self.vconds)
                self.conds = outer + body_conds
                self.block(s.body)
                after_body, body_vc = dict(self.env), dict(self.vconds)
                self.env.clear()
                self.env.update(before)
                self.vconds = dict(before_vc)
                self.conds = outer + else_conds
                self.block(s.orelse)
                self.conds = outer
                after_else, else_vc = dict(self.env), self.vconds
                # Both arms' values survive: the body's as the value, the other as an alternative
                # (`x_ptrs` built one way under `if SPLIT_K:` and another way in `else`).
                self.env.clear()
                self.env.update(after_body)
                self.vconds = body_vc
                self._keep_alternatives(after_else, after_body, else_vc)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.loop(s)
        elif isinstance(s, ast.While):
            self.eval(s.test)
            self._loop_carried(s.body)
            self.loops += 1
            self.block(s.body)
            self.loops -= 1
            self.block(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            self.block(s.body)
        elif isinstance(s, ast.Try):
            self.block(s.body)
            for h in s.handlers:
                self.block(h.body)
            self.block(s.orelse)
            self.block(s.finalbody)
        elif isinstance(s, ast.Return):
            if s.value is not None:
                self.returned = self.eval(s.value)
                self.returned_conds = self.conds_of(s.value, with_alts=True)
                if isinstance(s.value, ast.Name) and s.value.id in self.alts:
                    self.returned_alts = [(alt, self._alternative_conds(s.value.id, i))
                                          for i, alt in enumerate(self.alts[s.value.id])]
        elif isinstance(s, ast.Assert):
            self.checking += 1
            try:
                self.eval(s.test)
            finally:
                self.checking -= 1

    def _settled_none_test(self, test: ast.expr) -> bool | None:
        """The value of ``p is None`` / ``p is not None`` where the call settles p's None-ness."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
                and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
            return None
        is_none = self.none_params.get(test.left.id)
        if is_none is None:
            return None
        return is_none if isinstance(test.ops[0], ast.Is) else not is_none

    def _condition_param(self, node: ast.expr) -> str | None:
        """The kernel parameter a branch test reads directly (through a helper's binding too)."""
        if not isinstance(node, ast.Name):
            return None
        v = self.env.get(node.id) if node.id in self.env else None
        if v is None:
            return node.id if node.id in self.params else None
        if len(v.summands) == 1 and len(v.summands[0].factors) == 1 and not v.summands[0].neg:
            return v.summands[0].factors[0].param
        return None

    def _condition(self, test: ast.expr, truth: bool) -> list[Condition] | None:
        """The conditions ``test`` (taken as ``truth``) puts on parameters, when it is a
        conjunction of direct tests of them; None when it says nothing we can read."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._condition(test.operand, not truth)
        if isinstance(test, ast.Name) and test.id in self.tests:
            return self.tests[test.id][0 if truth else 1]
        conjuncts = None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            conjuncts = test.values
        elif isinstance(test, ast.BinOp) and isinstance(test.op, ast.BitAnd):
            conjuncts = [test.left, test.right]  # `(a == 1) & (b == 1)`, Triton's `and` of tensors
        if conjuncts is not None and truth:
            out: list[Condition] = []
            for v in conjuncts:
                got = self._condition(v, True)
                if got:
                    out.extend(got)
            return out or None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and not truth:
            out = []
            for v in test.values:
                got = self._condition(v, False)
                if got:
                    out.extend(got)
            return out or None
        p = self._condition_param(test)
        if p is not None:
            return [Condition(p, "truthy", truth)]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            p = self._condition_param(test.left)
            if p is None:
                return None
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                return [Condition(p, "none", truth == isinstance(op, ast.Is))]
            if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right, ast.Constant):
                return [Condition(p, "eq", truth == isinstance(op, ast.Eq), self.ctx.src.text(right))]
        return None

    def _branch_conditions(self, test: ast.expr) -> tuple[tuple[Condition, ...], tuple[Condition, ...]]:
        """The conditions of an ``if``'s body and of its ``else``."""
        return tuple(self._condition(test, True) or ()), tuple(self._condition(test, False) or ())

    def _alternatives_through(self, target: str, value: ast.expr, v: _Value) -> None:
        """`x_ptrs = x_ptr + pid * stride_xb` where `stride_xb` holds another value on another
        if-arm (64-bit on one, 32-bit on the other): `x_ptrs` holds the matching other values."""
        names = {n for n in _name_ids(value) if n in self.alts and n in self.env}
        if not names:
            self.alts.pop(target, None)
            self.alt_conds.pop(target, None)
            return
        got: list[_Value] = []
        got_conds: list[tuple[Condition, ...]] = []
        for name in sorted(names):
            saved, saved_vc = self.env[name], self.vconds.get(name, ())
            for i, alt in enumerate(self.alts[name]):
                self.env[name] = alt
                self.vconds[name] = self._alternative_conds(name, i)
                other = self.eval(value)
                if other is not v and len(got) < _MAX_ALTERNATIVES:
                    got.append(other)
                    got_conds.append(self.conds_of(value, with_alts=True))
            self.env[name], self.vconds[name] = saved, saved_vc
        if got:
            self.alts[target] = got
            self.alt_conds[target] = got_conds

    def _keep_alternatives(self, other: dict, current: dict, other_conds: dict) -> None:
        for name, v in other.items():
            cur = current.get(name)
            if cur is not None and cur is not v:
                alts = self.alts.setdefault(name, [])
                if len(alts) < _MAX_ALTERNATIVES and all(a is not v for a in alts):
                    alts.append(v)
                    self.alt_conds.setdefault(name, []).append(other_conds.get(name, ()))

    def _alternative_conds(self, name: str, i: int) -> tuple[Condition, ...]:
        got = self.alt_conds.get(name, ())
        return got[i] if i < len(got) else ()

    def conds_of(self, node: ast.AST | None, with_alts: bool = False) -> tuple[Condition, ...]:
        """The branches the walk is inside, and those the names ``node`` reads were made under.
        A name holding other values on other arms lends its branches only ``with_alts``: where
        the caller also reads ``node`` with each alternative (and its own branches); otherwise
        the value would vanish with its arm."""
        out = list(self.conds)
        if node is not None:
            for n in _name_ids(node):
                if with_alts or n not in self.alts:
                    out.extend(c for c in self.vconds.get(n, ()) if c not in out)
        return tuple(out)

    def assign(self, target: ast.expr, value_node: ast.expr, v: _Value) -> None:
        if isinstance(target, ast.Name):
            self.vconds[target.id] = self.conds_of(value_node)
            self.env[target.id] = v
            if isinstance(value_node, ast.Name) and value_node.id in self.tests:
                self.tests[target.id] = self.tests[value_node.id]
            elif isinstance(value_node, (ast.Compare, ast.BoolOp)) or (
                    isinstance(value_node, ast.BinOp) and isinstance(value_node.op, ast.BitAnd)):
                self.tests[target.id] = (self._condition(value_node, True), self._condition(value_node, False))
            else:
                self.tests.pop(target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts):
                for t, e in zip(target.elts, value_node.elts):
                    self.assign(t, e, self.eval(e))
            else:
                for t in target.elts:
                    if isinstance(t, ast.Name):
                        self.vconds[t.id] = self.conds_of(value_node)
                        f = _merge(list(_all_factors(v)), t.id)
                        f = replace(f, sources=f.sources | {IndexSource.OTHER})
                        self.env[t.id] = _Value((_Summand((f,), self.ctx.src.span(t), t.id),))

    def loop(self, s) -> None:
        it = s.iter
        fn = it.func if isinstance(it, ast.Call) else None
        name = (_dotted(fn) or "") if fn is not None else ""
        if name.rpartition(".")[2] in _RANGES:
            args = it.args
            bound_args = args[1:2] if len(args) >= 2 else args[:1]
            vals = [self.eval(a) for a in args]
            for a, v in zip(args, vals):
                if a in bound_args:
                    self.facts.bound |= _params_of(v)
            int64 = any(f.int64 for v in vals[:2] for f in _all_factors(v))
            if isinstance(s.target, ast.Name):
                self.env[s.target.id] = self._loop_variable(s.target, int64)
                self.vconds[s.target.id] = self.conds_of(it)
        else:
            self.eval(it)
            for t in ast.walk(s.target):
                if isinstance(t, ast.Name):
                    self.env[t.id] = self._loop_variable(t, False)
                    self.vconds[t.id] = self.conds_of(it)
        self._loop_carried(s.body)
        self.loops += 1
        self.block(s.body)
        self.loops -= 1
        self.block(s.orelse)

    def _loop_carried(self, body: list[ast.stmt]) -> None:
        """Names incremented in a loop body hold a loop counter from the first iteration on."""
        for st in body:
            for target in _augmented_names(st):
                cur = self.env.get(target.id)
                if cur is not None and cur.block is None and _base_summand(cur, self) is None:
                    self.env[target.id] = self._counter(target, cur)

    def _loop_variable(self, target: ast.Name, int64: bool) -> _Value:
        """The value of a ``for`` loop's target name: a loop counter of its own."""
        return _Value((
            _Summand((_Factor(target.id, frozenset({IndexSource.LOOP}), int64=int64,
                              leaves=frozenset({("loop", target.id)})),),
                     self.ctx.src.span(target), target.id),
        ))

    def _counter(self, target: ast.Name, v: _Value) -> _Value:
        """``v``, held by ``target`` and stepped in a loop (``step += 1``), as a loop counter: its
        sources and leaves plus the loop's."""
        return self.collapse(
            target, [v], sources=frozenset({IndexSource.LOOP}) | frozenset(x for f in _all_factors(v) for x in f.sources),
            literal=False, leaves=_leaves_of(v) | {("loop", target.id)},
        )

    # -- expressions

    def atom(self, node: ast.AST, factor: _Factor) -> _Value:
        return _Value((_Summand((factor,), self.ctx.src.span(node), factor.text),))

    def collapse(self, node: ast.AST, values: list[_Value], **extra) -> _Value:
        text = self.ctx.src.text(node)
        factors = [f for v in values for f in _all_factors(_undivided(v))]
        return self.atom(node, _merge(factors, text, **extra))

    def name(self, node: ast.Name) -> _Value:
        v = self.env.get(node.id)
        if v is not None:
            if node.id in self.bounded_names and len(v.summands) > 1 and v.block is None:
                return self.collapse(node, [v])
            return v
        if node.id in self.params:
            ann = self.params[node.id]
            return self.atom(node, _Factor(node.id, param=node.id, int64=bool(ann and _INT64.search(ann))))
        # A module-level name: a constant (captured as constexpr) or a function.
        return self.atom(node, _Factor(node.id, frozenset({IndexSource.CONSTEXPR}), literal=True))

    def eval(self, node: ast.expr | None) -> _Value:
        if node is None:
            return _EMPTY
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, int) and not isinstance(node.value, bool):
                return self.atom(node, _Factor(repr(node.value), frozenset({IndexSource.CONSTEXPR}), literal=True))
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.CONSTEXPR}), literal=True))
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left), self.eval(node.right), node, node.right)
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand)
            if isinstance(node.op, ast.USub):
                return replace(v, summands=tuple(replace(s, neg=not s.neg) for s in v.summands))
            if isinstance(node.op, ast.UAdd):
                return v
            return _disjoined(self.collapse(node, [v]))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            v = self.eval(node.value)
            self.eval(node.slice) if not isinstance(node.slice, (ast.Slice, ast.Tuple, ast.Constant)) else None
            return v
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and (node.value.id in self.env or node.value.id in self.params):
                return self.eval(node.value)
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.CONSTEXPR}), literal=True))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.BoolOp):
            v = self.collapse(node, [self.eval(v) for v in node.values])
            return _disjoined(v) if isinstance(node.op, ast.Or) else v
        if isinstance(node, ast.IfExp):
            self.eval(node.test)
            a, b = self.eval(node.body), self.eval(node.orelse)
            if a.block is not None or _has_pointer_base(a, self):
                return a
            if b.block is not None or _has_pointer_base(b, self):
                return b
            return self.collapse(node, [a, b])
        if isinstance(node, (ast.Tuple, ast.List)):
            return self.collapse(node, [self.eval(e) for e in node.elts])
        if isinstance(node, ast.JoinedStr):
            return _EMPTY
        return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.OTHER}),
                                       leaves=frozenset({_OPAQUE})))

    def binop(self, op: ast.operator, a: _Value, b: _Value, node: ast.AST, right: ast.AST) -> _Value:
        if isinstance(op, ast.Add):
            return _Value(a.summands + b.summands, a.byte_record or b.byte_record, a.block or b.block)
        if isinstance(op, ast.Sub):
            neg = tuple(replace(s, neg=not s.neg) for s in b.summands)
            return _Value(a.summands + neg, a.byte_record or b.byte_record, a.block or b.block)
        if isinstance(op, ast.Mult):
            a, b = _undivided(a), _undivided(b)
            fa = self._product_factors(a)
            fb = self._product_factors(b)
            if not a.summands or not b.summands:
                return a if a.summands else b
            neg = (len(a.summands) == 1 and a.summands[0].neg) != (len(b.summands) == 1 and b.summands[0].neg)
            factors = fa + fb
            self.facts.multiplied.update(f.param for f in factors if f.param)
            pid_blocks = self._pid_blocks(factors)
            if pid_blocks:
                factors = tuple(replace(f, pid_blocks=f.pid_blocks | pid_blocks) for f in factors)
            return _Value((_Summand(factors, self.ctx.src.span(node), self.ctx.src.text(node), neg),))
        if isinstance(op, ast.FloorDiv):
            a, b = _undivided(a), _undivided(b)
            floordiv = frozenset(_params_of(b)) | frozenset(f.text for f in _all_factors(b))
            scaled = [self._scales_a_product(_Value((s,)), b) for s in a.summands] if a.block is None else []
            if any(scaled):
                # `row * stride // 2`: the product keeps its factors (a stride among them stays
                # a stride, scaled); :func:`_make_term` reads it whole where no stride is in it.
                # `(block * stride_block + OFFSET) // 2`, a byte offset rebased for a 2-byte view:
                # each summand divided alone, so a stride product keeps its factors likewise.
                d = _merge(list(_all_factors(b)), "// " + self.ctx.src.text(right), floordiv=floordiv,
                           divisor=True, literal=True)
                if len(a.summands) == 1:
                    s = a.summands[0]
                    return _Value((_Summand(s.factors + (d,), self.ctx.src.span(node), self.ctx.src.text(node)),))
                parts = []
                for s, one in zip(a.summands, scaled):
                    if one:
                        parts.append(_Summand(s.factors + (d,), s.span, s.text, s.neg))
                    else:
                        parts.extend(self.collapse(node, [_Value((s,)), b], floordiv=floordiv).summands)
                return _Value(tuple(parts), a.byte_record)
            return self.collapse(node, [a, b], floordiv=floordiv)
        if isinstance(op, ast.BitOr):
            return _disjoined(self.collapse(node, [a, b]))
        if isinstance(op, ast.Mod):
            # `(pid_z * H + h) % H`: a remainder is bounded by its divisor, not by the grid
            # extents of the program ids it is made of.
            return self.collapse(node, [a, b], pids=frozenset())
        return self.collapse(node, [a, b])

    def _scales_a_product(self, a: _Value, b: _Value) -> bool:
        """``a // b`` divides a product holding a runtime parameter (a stride, maybe) by a
        literal or a ``tl.constexpr``."""
        if len(a.summands) != 1 or len(a.summands[0].factors) < 2 or a.block is not None:
            return False
        if not any(f.param and not f.literal and "constexpr" not in (self.facts.anns.get(f.param) or "")
                   for f in a.summands[0].factors):
            return False
        if len(b.summands) != 1 or b.block is not None:
            return False
        return all(f.literal or (f.param and "constexpr" in (self.facts.anns.get(f.param) or ""))
                   for f in b.summands[0].factors)

    def _pid_blocks(self, factors) -> frozenset:
        """`pid * BLOCK`: the constexpr tile size a program id (or loop counter) is multiplied by."""
        if not any(f.sources & {IndexSource.PROGRAM_ID, IndexSource.LOOP} for f in factors):
            return frozenset()
        return frozenset(
            f.text for f in factors
            if f.literal or (f.param and "constexpr" in (self.facts.anns.get(f.param) or ""))
        )

    def _product_factors(self, v: _Value) -> tuple[_Factor, ...]:
        if len(v.summands) == 1:
            return v.summands[0].factors
        if not v.summands:
            return ()
        texts = " + ".join(s.text for s in v.summands)
        return (_merge([f for s in v.summands for f in s.factors], f"({texts})"),)

    def compare(self, node: ast.Compare) -> _Value:
        sides = [self.eval(node.left)] + [self.eval(c) for c in node.comparators]
        nodes = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
                for a, b in ((i, i + 1), (i + 1, i)):
                    if isinstance(nodes[b], ast.Constant) and nodes[b].value is None:
                        self.facts.none_tested |= {f.param for f in _all_factors(sides[a]) if f.param}
        bounds: set[str] = set()
        bsides: set = set()
        for i, op in enumerate(node.ops):
            if not isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                continue
            left, right = sides[i], sides[i + 1]
            li, ri = _is_index(left), _is_index(right)
            if li and not ri:
                index, size = left, right
            elif ri and not li:
                index, size = right, left
            else:
                continue
            ps = _params_of(size)
            bounds |= ps
            lv = _leaves_of(index)
            bsides |= {(p, lv, True) for p in ps}
        self.facts.bound |= bounds
        out = self.collapse(node, sides)
        s = out.summands[0]
        f = replace(s.factors[0], bounds=s.factors[0].bounds | frozenset(bounds),
                    bound_sides=s.factors[0].bound_sides | frozenset(bsides))
        return _Value((replace(s, factors=(f,)),))

    def call(self, node: ast.Call) -> _Value:
        fn = node.func
        dotted = _dotted(fn) or ""
        last = dotted.rpartition(".")[2] if dotted else (fn.attr if isinstance(fn, ast.Attribute) else "")
        is_tl = "." in dotted or dotted in self.ctx.tl_names
        # Method calls on a value: x.to(...), x.cast, ptr.to(tl.pointer_type(...)).
        root = fn.value if isinstance(fn, ast.Attribute) else None
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(fn, ast.Attribute) and not (
            isinstance(root, ast.Name) and root.id not in self.env and root.id not in self.params
        ):
            if fn.attr in ("to", "cast"):
                return self.cast(self.eval(fn.value), node.args, node)
            if fn.attr in _PASS_THROUGH or fn.attr in ("T",):
                return self.eval(fn.value)
            base = self.eval(fn.value)
            args = [self.eval(a) for a in node.args] + [self.eval(k.value) for k in node.keywords]
            if fn.attr in ("load", "store") and base.block is not None:
                return self.block_access(node, base, fn.attr)
            if fn.attr == "advance":
                return base
            return self.collapse(node, [base] + args)
        if last in _ASSERTIONS and is_tl:
            self.checking += 1
            try:
                vals = [self.eval(a) for a in node.args] + [self.eval(k.value) for k in node.keywords]
            finally:
                self.checking -= 1
            return self.collapse(node, vals)
        if last == "program_id" and is_tl:
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.PROGRAM_ID}),
                                           leaves=frozenset({("pid", self._arg_key(node))}),
                                           pids=frozenset({_axis(node)})))
        if last == "arange" and is_tl:
            ext = node.args[1] if len(node.args) > 1 else (node.args[0] if node.args else None)
            blocks = frozenset({self.ctx.src.text(ext)}) if ext is not None else frozenset()
            if ext is not None:
                self.facts.extents |= _params_of(self.eval(ext))
            # Two `tl.arange`s of the same extent are the same values (a helper's extent is
            # read through its binding, so `BLOCK_N` bound to `BLOCK` is `BLOCK`).
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.ARANGE}), blocks=blocks,
                                           leaves=frozenset({("arange", self._arg_key(node))})))
        if last in ("load", "store") or last in _ATOMICS:
            if is_tl:
                return self.access(node, last)
        if last in ("make_block_ptr", "make_tensor_descriptor") and is_tl:
            return self.make_block(node, last)
        if last == "advance" and is_tl and node.args:
            for a in node.args[1:]:
                self.eval(a)
            return self.eval(node.args[0])
        if last == "cast" and is_tl and node.args:
            return self.cast(self.eval(node.args[0]), node.args[1:], node)
        if last in _PASS_THROUGH and is_tl and node.args:
            v = self.eval(node.args[0])
            for a in node.args[1:]:
                self.eval(a)
            return v
        if last == "cdiv" and node.args:
            vals = [self.eval(a) for a in node.args]
            if not self.checking:
                self.facts.bound |= _params_of(vals[0])
            return self.collapse(node, vals)
        if last in _RANDOM and is_tl:
            vals = [self.eval(a) for a in node.args] + [self.eval(k.value) for k in node.keywords]
            for v in vals:
                self.facts.used |= _params_of(v)
            return self.collapse(node, vals, sources=frozenset({IndexSource.OTHER}))
        if last in ("full", "zeros") and is_tl:
            vals = [self.eval(a) for a in node.args]
            int64 = any(_INT64.search(self.ctx.src.text(a)) for a in list(node.args[1:]) + [k.value for k in node.keywords])
            # `tl.full([B], head, ...)` carries `head` on.
            leaves = frozenset(x for v in vals for x in _leaves_of(v))
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.CONSTEXPR}), int64=bool(int64),
                                           leaves=leaves))
        if last == "where" and is_tl and len(node.args) == 3:
            self.eval(node.args[0])
            a, b = self.eval(node.args[1]), self.eval(node.args[2])
            if a.block is not None or _has_pointer_base(a, self):
                return a
            if b.block is not None or _has_pointer_base(b, self):
                return b
            return self.collapse(node, [a, b])
        if isinstance(fn, ast.Name) and fn.id in self.ctx.jit_funcs and fn.id not in self.stack \
                and self.depth < _MAX_INLINE_DEPTH and _binds(node, self.ctx.jit_funcs[fn.id]):
            return self.inline(node, self.ctx.jit_funcs[fn.id])
        vals = [self.eval(a) for a in node.args] + [self.eval(k.value) for k in node.keywords]
        if not is_tl and not (isinstance(fn, ast.Name) and fn.id in ("min", "max", "int", "abs", "len")):
            # A call we cannot follow: whatever it is handed may be used.
            for v in vals:
                self.facts.used |= _params_of(v)
        return self.collapse(node, vals)

    def cast(self, v: _Value, args: list[ast.expr], node: ast.Call) -> _Value:
        texts = [self.ctx.src.text(a) for a in args] + [
            f"{k.arg}={self.ctx.src.text(k.value)}" for k in node.keywords
        ]
        joined = " ".join(texts)
        if "pointer_type" in joined or "bitcast=True" in joined:
            if _BYTE_TYPES.search(joined) or "bitcast=True" in joined:
                v = replace(v, byte_record=True)
            return v
        if _INT64.search(joined):
            return _with_int64(v, True)
        if re.search(r"int(8|16|32)\b", joined):
            return _with_int64(v, False)
        return v

    def inline(self, node: ast.Call, helper: ast.FunctionDef) -> _Value:
        names = [a.arg for a in helper.args.posonlyargs + helper.args.args]
        env: dict[str, _Value] = {}
        bindings: dict[str, str] = {}
        vconds: dict[str, tuple[Condition, ...]] = {}
        for name, a in zip(names, node.args):
            if isinstance(a, ast.Starred):
                break
            env[name] = self.eval(a)
            bindings[name] = self.ctx.src.text(a)
            vconds[name] = self.conds_of(a)
        for k in node.keywords:
            if k.arg:
                env[k.arg] = self.eval(k.value)
                bindings[k.arg] = self.ctx.src.text(k.value)
                vconds[k.arg] = self.conds_of(k.value)
        self.facts.helper_calls.append(HelperCall(helper.name, self.ctx.src.span(node), bindings))
        w = _Walker(self.ctx, helper, self.facts, env, {}, self.depth + 1, helper.name,
                    self.stack + (helper.name,))
        w.in_loop = self.loops > 0 or self.in_loop
        w.conds = self.conds
        for name, a in list(zip(names, node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]:
            if isinstance(a, ast.Name) and a.id in self.tests:
                w.tests[name] = self.tests[a.id]  # a test handed to the helper
        w.vconds = vconds
        assigned = _stored_names(helper)
        defaults = dict(zip(names[len(names) - len(helper.args.defaults):], helper.args.defaults))
        for name in names:
            if name in assigned:
                continue
            if name in bindings:
                w.none_params[name] = bindings[name].strip() == "None"
            elif isinstance(defaults.get(name), ast.Constant) and defaults[name].value is None:
                w.none_params[name] = True
        # The helper's pointer names, as the kernel's parameters bound to them.
        mapped = set(self.evidence)
        for n in w.evidence:
            v = env.get(n)
            if v is not None and len(v.summands) == 1 and len(v.summands[0].factors) == 1 \
                    and v.summands[0].factors[0].param:
                mapped.add(v.summands[0].factors[0].param)
        self.facts.evidence |= mapped
        w.evidence = frozenset(mapped)
        w.block(helper.body)
        if w.returned is not None:
            self.inlined = (node, w)
            return w.returned
        return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.OTHER}),
                                       leaves=frozenset({_OPAQUE})))

    def _mask_arg(self, node: ast.Call, op: str) -> ast.expr | None:
        for k in node.keywords:
            if k.arg == "mask":
                return k.value
        pos = 1 if op == "load" else 2
        return node.args[pos] if len(node.args) > pos else None

    def _pointer_arg(self, node: ast.Call) -> ast.expr | None:
        if node.args:
            return node.args[0]
        for k in node.keywords:
            if k.arg in ("pointer", "ptr", "base"):
                return k.value
        return None

    def access(self, node: ast.Call, op: str) -> _Value:
        kind = "atomic" if op in _ATOMICS else op
        ptr_node = self._pointer_arg(node)
        addr = self.eval(ptr_node)
        mask_node = self._mask_arg(node, op)
        mask = self.eval(mask_node) if mask_node is not None else None
        others = [a for a in node.args[1:] if a is not mask_node] + [
            k.value for k in node.keywords if k.value is not mask_node and k.arg not in ("pointer", "ptr")
        ]
        for o in others:
            v = self.eval(o)
            if kind != "load":
                self.facts.used |= _params_of(v)  # a stride stored as a value is used
        if addr.block is not None:
            return self.block_access(node, addr, kind, mask, self.conds_of(ptr_node))
        in_loop = self.loops > 0 or self.in_loop
        self.facts.raws.append(_Raw(kind, addr, mask, self.ctx.src.span(node), kind != "load", self.helper, in_loop,
                                    self.conds_of(ptr_node, with_alts=True)))
        ps = _params_of(addr)
        if self.alts and ptr_node is not None:
            # The address read with each other value its names hold on another if-arm.
            for n in _name_ids(ptr_node):
                if n in self.alts and n in self.env:
                    saved, saved_vc = self.env[n], self.vconds.get(n, ())
                    for i, alt in enumerate(self.alts[n]):
                        self.env[n] = alt
                        self.vconds[n] = self._alternative_conds(n, i)
                        other = self.eval(ptr_node)
                        if other.block is None:
                            self.facts.raws.append(_Raw(kind, other, mask, self.ctx.src.span(node),
                                                        kind != "load", self.helper, in_loop,
                                                        self.conds_of(ptr_node, with_alts=True)))
                            ps |= _params_of(other)
                    self.env[n], self.vconds[n] = saved, saved_vc
        self.facts.address |= ps
        self.facts.used |= ps
        if kind == "load":
            base = _base_summand(addr, self)
            lf = frozenset({base.factors[0].param}) if base is not None else frozenset()
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.LOADED}), loaded_from=lf,
                                           leaves=self._load_leaf(node)))
        return _EMPTY

    def block_access(self, node: ast.Call, bv: _Value, kind: str, mask: _Value | None = None,
                     conds: tuple[Condition, ...] | None = None) -> _Value:
        kind = "load" if kind == "load" else kind
        self.facts.raws.append(_Raw(kind, bv, mask, self.ctx.src.span(node), kind != "load", self.helper,
                                    self.loops > 0 or self.in_loop, self.conds if conds is None else conds))
        if kind == "load":
            return self.atom(node, _Factor(self.ctx.src.text(node), frozenset({IndexSource.LOADED}),
                                           leaves=self._load_leaf(node)))
        return _EMPTY

    def _load_leaf(self, node: ast.Call) -> frozenset:
        """A loaded value is an index atom of its own: what its address was built from does not
        flow on (a slot read at `tids` is not `tids`)."""
        sp = self.ctx.src.span(node)
        return frozenset({("load", sp.line, sp.column)})

    def _arg_key(self, node: ast.Call) -> str:
        """The arguments of a pure call, as their values read (not their spelling)."""
        parts = []
        for a in list(node.args) + [k.value for k in node.keywords]:
            v = self.eval(a)
            parts.append(" ".join(f.text for f in _all_factors(v)) or "".join(self.ctx.src.text(a).split()))
        return ",".join(parts)

    def make_block(self, node: ast.Call, last: str) -> _Value:
        op = "block_ptr" if last == "make_block_ptr" else "descriptor"
        names = ["base", "shape", "strides", "offsets", "block_shape", "order"] if op == "block_ptr" else [
            "base", "shape", "strides", "block_shape"]
        args: dict[str, ast.expr] = dict(zip(names, node.args))
        for k in node.keywords:
            if k.arg:
                args[k.arg] = k.value
        base = self.eval(args.get("base"))
        strides: list[tuple[_Value, Span, str]] = []
        s_node = args.get("strides")
        if isinstance(s_node, (ast.Tuple, ast.List)):
            for e in s_node.elts:
                strides.append((self.eval(e), self.ctx.src.span(e), self.ctx.src.text(e)))
        elif s_node is not None:
            strides.append((self.eval(s_node), self.ctx.src.span(s_node), self.ctx.src.text(s_node)))
        offsets: list[_Value | None] = []
        o_node = args.get("offsets")
        if isinstance(o_node, (ast.Tuple, ast.List)):
            offsets = [self.eval(e) for e in o_node.elts]
        for k in ("shape", "block_shape", "order"):
            if k in args:
                v = self.eval(args[k])
                if k == "shape":
                    self.facts.bound |= _params_of(v)
        blk = _Block(op, base, tuple(strides), tuple(offsets), self.ctx.src.span(node))
        v = _Value(block=blk)
        ps = _params_of(v)
        self.facts.address |= ps
        self.facts.used |= ps
        self.facts.raws.append(_Raw(op, v, None, self.ctx.src.span(node), False, self.helper,
                                    self.loops > 0 or self.in_loop, self.conds))
        return v


def _axis(node: ast.Call) -> int:
    """The axis of ``tl.program_id(axis)`` when it is a literal, else -1."""
    arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "axis"), None)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and not isinstance(arg.value, bool):
        return arg.value
    return -1 if arg is not None else 0


def _binds(call: ast.Call, func: ast.FunctionDef) -> bool:
    """Whether the call binds every required parameter of ``func`` and nothing unknown, as Python
    would (a call that does not is dead or wrong code: inlining it would shift every argument)."""
    a = func.args
    positional = a.posonlyargs + a.args
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        return False
    if len(call.args) > len(positional) and a.vararg is None:
        return False
    names = {x.arg for x in positional + a.kwonlyargs}
    given = {x.arg for x in positional[:len(call.args)]}
    for k in call.keywords:
        if k.arg in given or (k.arg not in names and a.kwarg is None):
            return False
        given.add(k.arg)
    with_default = {x.arg for x in positional[len(positional) - len(a.defaults):]} if a.defaults else set()
    with_default |= {x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    return all(x.arg in given or x.arg in with_default for x in positional + a.kwonlyargs)


def _is_index(v: _Value) -> bool:
    """Whether a compared side is an index (depends on a program id, arange, loop or load)."""
    idx = {IndexSource.PROGRAM_ID, IndexSource.ARANGE, IndexSource.LOOP, IndexSource.LOADED, IndexSource.OTHER}
    return any(f.sources & idx for f in _all_factors(v))


_INT_ANN = re.compile(r"constexpr|\bint\b|u?int(8|16|32|64)|float|bool")


def _not_a_pointer(p: str, facts: "_Facts") -> bool:
    """What a pointer never is: annotated as a constexpr or a number, compared as a bound, a factor
    of a product, or the extent of a ``tl.arange``."""
    ann = facts.anns.get(p) or ""
    return bool(_INT_ANN.search(ann)) or p in facts.bound or p in facts.multiplied or p in facts.extents


def _base_summand(v: _Value, w, pointers: frozenset | None = None) -> _Summand | None:
    """The summand holding the base pointer: a bare parameter.

    By evidence first: a parameter known to be a pointer (``pointers``, once the walk is done), or
    one the kernel's text shows as an address's first name (``tl.load(X + ...)``, ``X += ...``,
    ``X.dtype.element_ty``), and nothing shows as a number. Names break the ties that remain
    (``x_ptr``; never a size or stride name), so ``Q``, ``K``, ``V``, ``A``, ``B``, ``C`` are
    pointers like ``x_ptr`` when their use says so."""
    cands = [s for s in v.summands if len(s.factors) == 1 and s.factors[0].param and not s.neg]
    if not cands:
        return None
    if pointers is not None:
        known = [s for s in cands if s.factors[0].param in pointers]
        if len(known) == 1:
            return known[0]
        if len(known) > 1:
            return next((s for s in known if _pointer_like(s.factors[0].param)), known[0])
    facts = w.facts
    live = [s for s in cands if not _not_a_pointer(s.factors[0].param, facts)]
    seen = [s for s in live if s.factors[0].param in w.evidence]
    if len(seen) == 1:
        return seen[0]
    if len(seen) > 1:
        live = seen
    live = [s for s in live if not stride_name(s.factors[0].param)]
    if not live:
        return None
    if len(live) == 1:
        p = live[0].factors[0].param
        return live[0] if not size_name(p) or _pointer_like(p) or p in w.evidence else None
    for s in live:
        if _pointer_like(s.factors[0].param):
            return s
    for s in live:
        p = s.factors[0].param
        if not size_name(p):
            return s
    return live[0]


def _has_pointer_base(v: _Value, w) -> bool:
    s = _base_summand(v, w)
    return s is not None and (_pointer_like(s.factors[0].param) or s.factors[0].param in w.evidence)


# A name the text shows as a pointer: an address's first name, advanced in place, its element type.
_POINTER_USE = re.compile(
    r"(?:\b(?:load|store|atomic_\w+|make_block_ptr|make_tensor_descriptor)\(\s*(?:(?:pointer|ptr|base)\s*=\s*)?"
    r"([A-Za-z_]\w*)\b(?!\s*[(\[.]))"
    r"|(?:\b([A-Za-z_]\w*)\s*\+=)"
    r"|(?:\b([A-Za-z_]\w*)\.dtype\.element_ty)"
)


# ----------------------------------------------------------------------------- module context


class _Context:
    def __init__(self, tree: ast.Module, src: SourceText, options):
        self.src = src
        self.kernels = find_kernels(tree)
        self.jit_funcs = {f.name: f for f in self.kernels}
        _, _, self.tl_names = _imports(tree.body)
        self._bounded: dict[int, frozenset] = {}
        self._evidence: dict[int, frozenset] = {}
        self.extra_size = tuple(re.compile(p) for p in getattr(options, "extra_size_names", ()) or ())
        self.extra_stride = tuple(re.compile(p) for p in getattr(options, "extra_stride_names", ()) or ())

    def pointer_evidence(self, func: ast.FunctionDef) -> frozenset:
        """Names the function's text shows as pointers (``_POINTER_USE``); read with a regular
        expression for the same reason as :meth:`bounded_names`."""
        got = self._evidence.get(id(func))
        if got is None:
            text = "".join(self.src.lines[func.lineno - 1:func.end_lineno])
            got = self._evidence[id(func)] = frozenset(
                n for m in _POINTER_USE.finditer(text) for n in m.groups() if n)
        return got

    def bounded_names(self, func: ast.FunctionDef) -> frozenset:
        """Local names compared as a whole with an ordering comparison (`tok < seq_len`).

        Read from the function's text with a regular expression (an ``ast.walk`` of every kernel
        cost more than the rest of the model): a name too many only keeps a sum whole."""
        got = self._bounded.get(id(func))
        if got is None:
            text = "".join(self.src.lines[func.lineno - 1:func.end_lineno])
            names = set(_CMP_LEFT.findall(text)) | set(_CMP_RIGHT.findall(text))
            got = self._bounded[id(func)] = frozenset(names)
        return got


# The look-behind only skips starts inside a word, which match exactly when the word's own start does.
_CMP_LEFT = re.compile(r"(?<![A-Za-z_])([A-Za-z_]\w*)\s*(?:\[[^\]\n]*\]\s*)?(?:<=?|>=?)(?![<>=])")
_CMP_RIGHT = re.compile(r"(?<![<>=-])(?:<|>)=?\s*([A-Za-z_]\w*)")


def _shape_comment(src: SourceText, line: int) -> str | None:
    """A `# [rows, cols]` comment on the line above a parameter, or trailing on its own line."""
    lines = src.lines
    if 1 <= line <= len(lines):
        own = lines[line - 1]
        if "#" in own and "[" in own.split("#", 1)[1]:
            return own.split("#", 1)[1].strip()
    if line >= 2:
        above = lines[line - 2].strip()
        if above.startswith("#") and "[" in above:
            return above.lstrip("#").strip()
    return None


def _classify(name: str, ann: str | None, facts: _Facts, ctx: _Context) -> ParamKind:
    """A parameter's role from its use in the kernel; names only break ties.

    A ``tl.constexpr`` is not a role: one that bounds a mask, a ``range`` or a ``tl.cdiv`` is a
    size (``NUM_COLUMNS``), one that multiplies an index like a stride is a stride
    (``stride_x_token: tl.constexpr``), and only one that is the extent of a ``tl.arange`` (or
    nothing else shows) is a tile or flag (``ParamKind.CONSTEXPR``). The launches may say more
    (:func:`refine_kernel`)."""
    constexpr = bool(ann and "constexpr" in ann)
    if name in facts.bases and not constexpr:
        return ParamKind.POINTER
    if name in facts.bound:
        return ParamKind.SIZE
    if constexpr:
        if name in facts.extents:
            return ParamKind.CONSTEXPR
        if name in facts.multiplied and stride_name(name, ctx.extra_stride):
            return ParamKind.STRIDE
        if name in facts.multiplied and size_name(name, ctx.extra_size):
            return ParamKind.SIZE
        return ParamKind.CONSTEXPR
    if stride_name(name, ctx.extra_stride):
        return ParamKind.STRIDE
    if size_name(name, ctx.extra_size):
        return ParamKind.SIZE
    if name in facts.multiplies_index and name not in facts.times_size:
        return ParamKind.STRIDE
    if _pointer_like(name) or (name in facts.none_tested and not _not_a_pointer(name, facts)):
        return ParamKind.POINTER
    return ParamKind.SCALAR


def _pointers(facts: _Facts, w) -> frozenset:
    """The parameters that are the base of some address, by evidence (see :func:`_base_summand`):
    the one candidate of an address that nothing shows as a number, else the one the text shows
    as a pointer; names decide only the addresses where neither does."""
    found: set[str] = set()
    undecided = []
    for raw in facts.raws:
        addr = raw.address.block.base if raw.address.block is not None else raw.address
        cands = {s.factors[0].param for s in addr.summands if len(s.factors) == 1 and s.factors[0].param
                 and not s.neg}
        live = {p for p in cands if not _not_a_pointer(p, facts)}
        if len(live) == 1:
            found |= live
        elif len(live & facts.evidence) == 1:
            found |= live & facts.evidence
        elif live:
            undecided.append(addr)
    for addr in undecided:
        if not any(len(s.factors) == 1 and s.factors[0].param in found for s in addr.summands):
            base = _base_summand(addr, w)
            if base is not None:
                found.add(base.factors[0].param)
    return frozenset(found)


def _index_and_step(summand: _Summand, kinds: dict[str, ParamKind], pid_free: bool = False):
    step_f, lit_f, idx_f = [], [], []
    for f in summand.factors:
        k = kinds.get(f.param) if f.param else None
        if k in (ParamKind.STRIDE, ParamKind.SIZE):
            step_f.append(f)
        elif f.literal or k == ParamKind.CONSTEXPR:
            lit_f.append(f)
        else:
            idx_f.append(f)
    if not idx_f and lit_f and not step_f:
        # `4 * BLOCK` alone, or a bare constexpr offset: an index of its own, unit step.
        idx_f, lit_f = lit_f, []
    return idx_f, step_f, lit_f


def _make_term(summand: _Summand, kinds: dict[str, ParamKind], consts: set[str]) -> Term:
    kept = summand.factors
    idx_f, step_f, lit_f = _index_and_step(summand, kinds)
    if any(f.divisor for f in kept) and not any(kinds.get(f.param) is ParamKind.STRIDE for f in step_f):
        # A scaled product with no stride in it (`offs * n // 2`) is one index, as any floor
        # division is; its factors stay on the term for a re-split (:func:`refine_kernel`).
        summand = _undivided(_Value((summand,))).summands[0]
        idx_f, step_f, lit_f = _index_and_step(summand, kinds)
    # `(i // n) * n` is an index rounded down, not a step.
    rounded = {p for f in idx_f for p in f.floordiv}
    if step_f and all(f.param in rounded for f in step_f):
        idx_f, step_f = idx_f + step_f, []
    sources: set = set()
    params: set = set()
    bounds: set = set()
    loaded: set = set()
    for f in idx_f:
        sources |= f.sources
        bounds |= f.bounds
        loaded |= f.loaded_from
        ps = set(f.params) | ({f.param} if f.param else set())
        params |= ps
        for p in ps:
            k = kinds.get(p)
            if k is None:
                continue
            sources.add(IndexSource.CONSTEXPR if k == ParamKind.CONSTEXPR else IndexSource.SCALAR_ARG)
    if not idx_f and lit_f:
        sources.add(IndexSource.CONSTEXPR)
    idx_text = " * ".join(f.text for f in idx_f) if idx_f else "1"
    index = Index(
        text=idx_text,
        sources=frozenset(sources),
        params=frozenset(params),
        is_int64=any(f.int64 for f in idx_f),
        bounds=tuple(sorted(bounds)),
        loaded_from=tuple(sorted(loaded)),
        pid_blocks=tuple(sorted({b for f in idx_f for b in f.pid_blocks})),
        arange_blocks=tuple(sorted({b for f in idx_f for b in f.blocks})),
        pid_axes=tuple(sorted({a for f in idx_f for a in f.pids})),
    )
    if step_f:
        kind = StepKind.STRIDE if any(kinds[f.param] == ParamKind.STRIDE for f in step_f) else StepKind.SIZE
        step = Step(kind, " * ".join(f.text for f in step_f + lit_f if not f.divisor)
                    + "".join(f" {f.text}" for f in lit_f if f.divisor), tuple(f.param for f in step_f))
    elif lit_f:
        step = Step(StepKind.LITERAL, " * ".join(f.text for f in lit_f))
    elif len(summand.factors) == 1:
        step = Step(StepKind.UNIT, "")
    else:
        step = Step(StepKind.OTHER, "")
    return Term(index, step, summand.span, summand.text,
                is_int64=any(f.int64 for f in summand.factors), factors=kept)


def _build_kernel(func: ast.FunctionDef, ctx: _Context) -> Kernel:
    src = ctx.src
    args = func.args
    plain = args.posonlyargs + args.args
    all_args = plain + args.kwonlyargs
    anns = {a.arg: (src.text(a.annotation) if a.annotation is not None else None) for a in all_args}
    facts = _Facts(anns=anns)
    env: dict[str, _Value] = {}
    w = _Walker(ctx, func, facts, env, anns, 0, None, (func.name,))
    w.block(func.body)

    # Base pointers and index multipliers, from the raw addresses.
    facts.evidence |= w.evidence
    pointers = _pointers(facts, w)
    facts.bases |= pointers
    for raw in facts.raws:
        if raw.address.block is None:
            for s in raw.address.summands:
                if len(s.factors) < 2 or any(f.divisor for f in s.factors):
                    continue  # a scaled product (`i * s // 2`) is read as one index here
                has_index = any(
                    f.sources & {IndexSource.PROGRAM_ID, IndexSource.ARANGE, IndexSource.LOOP, IndexSource.LOADED}
                    for f in s.factors
                )
                ps = {f.param for f in s.factors if f.param}
                with_size = any(p in facts.bound or size_name(p, ctx.extra_size) for p in ps)
                if with_size:
                    # A stride is never multiplied by a size: `slot * n_steps * dim` is sizes all through.
                    facts.times_size |= ps
                elif has_index:
                    facts.multiplies_index |= ps

    defaults = list(args.defaults)
    default_of: dict[str, str] = {}
    for a, d in zip(plain[len(plain) - len(defaults):], defaults):
        default_of[a.arg] = src.text(d)
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        if d is not None:
            default_of[a.arg] = src.text(d)
    params: list[Param] = []
    kinds: dict[str, ParamKind] = {}
    for pos, a in enumerate(all_args):
        kind = _classify(a.arg, anns[a.arg], facts, ctx)
        kinds[a.arg] = kind
        params.append(Param(
            name=a.arg, position=pos, kind=kind, span=src.span(a),
            constexpr=bool(anns[a.arg] and "constexpr" in anns[a.arg]), default=default_of.get(a.arg),
            shape_comment=_shape_comment(src, a.lineno) if kind == ParamKind.POINTER else None,
        ))

    accesses: list[Access] = []
    consts = {p for p, k in kinds.items() if k == ParamKind.CONSTEXPR}
    pointers = frozenset(p for p, k in kinds.items() if k is ParamKind.POINTER)
    for raw in facts.raws:
        accesses.append(_make_access(raw, kinds, consts, w, pointers))

    decorators = tuple(_decorator_name(d) for d in func.decorator_list)
    return Kernel(
        name=func.name,
        span=_def_span(func, src),
        params=params,
        accesses=accesses,
        helper_calls=facts.helper_calls,
        decorators=decorators,
        docstring=ast.get_docstring(func),
        used_params=frozenset(p for p in facts.used if p in kinds),
    )


def refine_kernel(kernel: Kernel, roles: dict[str, ParamKind]) -> Kernel:
    """``kernel`` with the given parameters re-classified (what its launches show about them:
    :meth:`stridecheck.lint.linker.Tree`), every term re-split into index and step accordingly.
    Returns ``kernel`` itself when nothing changes; never modifies it."""
    changed = {n: k for n, k in roles.items() if (p := kernel.param(n)) is not None and p.kind is not k}
    if not changed:
        return kernel
    params = [replace(p, kind=changed.get(p.name, p.kind)) for p in kernel.params]
    kinds = {p.name: p.kind for p in params}
    accesses = []
    for a in kernel.accesses:
        terms = [
            _make_term(_Summand(t.factors, t.span, t.text), kinds, set()) if _reads_any(t.factors, changed) else t
            for t in a.terms
        ]
        accesses.append(replace(a, terms=terms))
    return replace(kernel, params=params, accesses=accesses)


def _reads_any(factors: tuple[_Factor, ...], names) -> bool:
    """Whether a term's split into index and step may depend on the kinds of ``names``: a term is
    split (:func:`_make_term`) by the kinds of its factors' parameters only, so one whose factors
    name none of them splits as it did when it was built."""
    return any(f.param in names or not f.params.isdisjoint(names) for f in factors)


def _bare_kernel(func: ast.FunctionDef, src: SourceText) -> Kernel:
    args = func.args
    params = []
    for pos, a in enumerate(args.posonlyargs + args.args + args.kwonlyargs):
        ann = src.text(a.annotation) if a.annotation is not None else ""
        kind = ParamKind.CONSTEXPR if "constexpr" in ann else ParamKind.SCALAR
        params.append(Param(a.arg, pos, kind, src.span(a), constexpr=kind == ParamKind.CONSTEXPR))
    return Kernel(name=func.name, span=_def_span(func, src), params=params,
                  decorators=tuple(_decorator_name(d) for d in func.decorator_list))


def _def_span(func: ast.FunctionDef, src: SourceText) -> Span:
    line = func.lineno
    text = src.lines[line - 1] if line <= len(src.lines) else ""
    col = src._col(line, func.col_offset)
    end = col + len(text[col:].split("(", 1)[0].rstrip())
    return Span(line, col + 1, line, max(end, col + 1) + 1)


def _mask_reach(mask: _Value | None, mask_bounds: tuple[str, ...], term_leaves: list[frozenset],
                extra_leaves: frozenset = frozenset(), in_loop: bool = False):
    """Per mask bound: the terms its bounded index reaches, and the terms it bounds whole.

    A bounded index reaches the address when every index atom it is made of (program id, arange,
    loop counter, loaded value) appears in the address: it, or a value computed from it other
    than through a load, is then part of the written address. It reaches the terms sharing an atom
    with it. It bounds a term whole when all its atoms are that term's and it is a conjunct. An
    index we cannot follow (no atoms, or an opaque one) reaches every term. In a loop a loop
    counter is not asked of the address: a pointer advanced each iteration (`y_ptrs += BLOCK *
    stride`) carries the counter without naming it (an index of counters alone reaches only that
    advance, outside the terms)."""
    if mask is None or not mask_bounds:
        return ()
    sides: dict[str, set] = {}
    for f in _all_factors(mask):
        for p, lv, conj in f.bound_sides:
            sides.setdefault(p, set()).add((lv, conj))
    everything = frozenset().union(*term_leaves, extra_leaves) if term_leaves else extra_leaves
    all_terms = tuple(range(len(term_leaves)))
    out = []
    for p in mask_bounds:
        reached: set[int] = set()
        whole: set[int] = set()
        got = sides.get(p)
        if not got or _OPAQUE in everything:
            reached.update(all_terms or (-1,))
        for lv, conj in got or ():
            if in_loop:
                counters = frozenset(x for x in lv if x[0] == "loop")
                if lv and counters == lv and not lv <= everything:
                    # Only loop counters the address never names: they reach it through a pointer
                    # advanced each iteration, which is no term of it.
                    reached.add(-1)
                    continue
                lv = lv - counters
            if not lv or _OPAQUE in lv:
                reached.update(all_terms or (-1,))
                continue
            if lv <= everything:
                hit = {i for i, tl_ in enumerate(term_leaves) if tl_ & lv}
                # Reached only through a block pointer's base: no term to name, -1 stands for it.
                reached.update(hit or {-1})
            if conj:
                whole.update(i for i, tl_ in enumerate(term_leaves) if lv <= tl_)
        out.append((p, tuple(sorted(reached)), tuple(sorted(whole))))
    return tuple(out)


def _make_access(raw: _Raw, kinds, consts, w, pointers: frozenset = frozenset()) -> Access:
    mask_bounds: tuple[str, ...] = ()
    if raw.mask is not None:
        mask_bounds = tuple(sorted({p for f in _all_factors(raw.mask) for p in f.bounds if p in kinds}))
    v = raw.address
    if v.block is not None:
        blk = v.block
        base = _base_summand(blk.base, w, pointers)
        terms = []
        term_leaves = []
        for i, (sv, span, text) in enumerate(blk.strides):
            off = blk.offsets[i] if i < len(blk.offsets) else None
            factors = []
            if off is not None and off.summands:
                factors.append(_merge(list(_all_factors(off)), " + ".join(s.text for s in off.summands)))
            factors.extend(f for s in sv.summands for f in s.factors)
            if not factors:
                continue
            terms.append(_make_term(_Summand(tuple(factors), span, text), kinds, consts))
            term_leaves.append(frozenset().union(*(f.leaves for f in factors)))
        return Access(
            op=raw.op if raw.op in ("block_ptr", "descriptor") else raw.op,
            pointer=base.factors[0].param if base is not None else None,
            terms=terms, span=raw.span, writes=raw.writes, mask_bounds=mask_bounds,
            byte_record=blk.base.byte_record,
            descriptor_strides=tuple(t for _, _, t in blk.strides) if raw.op in ("block_ptr", "descriptor") else (),
            via_helper=raw.via_helper, via_block=True,
            mask_bound_reach=_mask_reach(raw.mask, mask_bounds, term_leaves, _leaves_of(blk.base), raw.in_loop),
            conditions=raw.conditions,
        )
    base = _base_summand(v, w, pointers)
    summands = [s for s in v.summands if s is not base]
    terms = [_make_term(s, kinds, consts) for s in summands]
    term_leaves = [frozenset().union(*(f.leaves for f in s.factors)) for s in summands]
    return Access(
        op=raw.op, pointer=base.factors[0].param if base is not None else None, terms=terms,
        span=raw.span, writes=raw.writes, mask_bounds=mask_bounds, byte_record=v.byte_record,
        via_helper=raw.via_helper,
        mask_bound_reach=_mask_reach(raw.mask, mask_bounds, term_leaves, in_loop=raw.in_loop),
        conditions=raw.conditions,
    )


def build_kernels(tree: ast.Module, source: str, options) -> list[Kernel]:
    """The access model of every ``@triton.jit`` function of a module (helpers included).

    ``Kernel.called_by`` names the kernels of the same module that call it (its accesses are
    then also inlined into theirs, with the callers' values bound)."""
    src = SourceText(source)
    ctx = _Context(tree, src, options)
    kernels = []
    for f in ctx.kernels:
        try:
            kernels.append(_build_kernel(f, ctx))
        except RecursionError:
            # An expression nested deeper than Python's stack (generated code): keep the kernel
            # and its parameters for launch binding, with no access model rather than a guess.
            kernels.append(_bare_kernel(f, src))
    callers: dict[str, set[str]] = {}
    for k in kernels:
        for hc in k.helper_calls:
            callers.setdefault(hc.callee, set()).add(k.name)
    for k in kernels:
        k.called_by = tuple(sorted(set(callers.get(k.name, ())) - {k.name}))
    return kernels
