"""The access model: plain, picklable data that every consumer reads.

The flow is files -> discovery -> parse -> *model* -> rules -> report. A ``ModuleModel`` is built
once per file (in a worker process, then cached by content hash); rules, the launch linker, the
bare-kernel guard and ``--fix`` read it and never re-parse. Nothing here imports libcst: a model
points at source by ``Span`` only.

Ownership (keep it, so the builders can grow their halves independently):

* kernel side (``Param``, ``Index``, ``Step``, ``Term``, ``Access``, ``HelperCall``, ``Kernel``):
  built by ``stridecheck.lint.access_model``.
* launch side (``ArgOrigin``, ``Launch``, ``WidthCheck``): built by ``stridecheck.lint.launches``.
* ``ModuleModel`` and ``Finding``: shared; add fields with defaults only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, slots=True)
class Span:
    """A source range; lines and columns are 1-based, ``end_column`` exclusive (as SARIF)."""

    line: int
    column: int
    end_line: int
    end_column: int


# ----------------------------------------------------------------------------- kernel side


class ParamKind(str, Enum):
    POINTER = "pointer"  # reaches the address of tl.load/store/atomic_*/make_block_ptr/descriptor
    STRIDE = "stride"  # named as a stride, fed .stride(i) at a launch, or multiplies an index and bounds nothing
    SIZE = "size"  # bounds a mask, a range or a tl.cdiv, or carries a size name; size wins over stride
    CONSTEXPR = "constexpr"  # annotated tl.constexpr
    SCALAR = "scalar"  # any other scalar argument (seed, scale, flags, a column number...)


@dataclass(slots=True)
class Param:
    name: str
    position: int
    kind: ParamKind
    span: Span
    constexpr: bool = False
    default: str | None = None  # source text of the default, if any
    shape_comment: str | None = None  # e.g. "[num_reqs, num_steps, vocab]" from a comment above it


class IndexSource(str, Enum):
    """Where the factors of an index come from (an index may mix several)."""

    PROGRAM_ID = "program_id"
    ARANGE = "arange"
    LOOP = "loop"  # a `for ... in range(...)` / tl.range / tl.static_range counter
    LOADED = "loaded"  # a value loaded from memory (tl.load)
    SCALAR_ARG = "scalar_arg"  # a scalar (non-constexpr) kernel argument
    CONSTEXPR = "constexpr"  # a constexpr parameter or literal
    OTHER = "other"


@dataclass(slots=True)
class Index:
    text: str  # normalised source of the index expression
    sources: frozenset[IndexSource]
    params: frozenset[str] = frozenset()  # kernel parameters it depends on
    is_int64: bool = False  # promoted to int64 somewhere on its way (.to(tl.int64), int64 load...)
    bounds: tuple[str, ...] = ()  # size names/params that bound it as a whole (`idx < n`)
    loaded_from: tuple[str, ...] = ()  # pointer parameters of the loads it comes from
    pid_blocks: tuple[str, ...] = ()  # constexprs a program id / loop counter is multiplied by (`pid * BLOCK_M`)
    arange_blocks: tuple[str, ...] = ()  # extents of the tl.arange calls in it (`tl.arange(0, BLOCK_M)` -> BLOCK_M)
    pid_axes: tuple[int, ...] = ()  # grid axes of the program ids it is computed from (-1: not a literal)


def python_scalar(value):
    """A NumPy scalar as its Python value (``.item()``: it compares equal to it, and Triton reads it
    so); any other value as it is. Raises for a NumPy array of more than one element."""
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return value.item()
    return value


@dataclass(frozen=True, slots=True)
class Condition:
    """A branch an access sits under, when its test reads a kernel parameter directly.

    ``test`` is ``"truthy"`` (``if HAS_BIAS:``), ``"none"`` (``if MASK is None:``) or ``"eq"``
    (``if ACT == "gelu":``, ``value`` the literal's source); ``truth`` is the outcome the access
    needs (``if not HAS_BIAS:`` -> truthy, False). Triton compiles a branch on a ``tl.constexpr``
    (or on a ``None`` argument, which it specialises) away when the launch's value fails it, so an
    access under such a branch does not exist for that launch."""

    param: str
    test: str
    truth: bool
    value: str | None = None

    def holds(self, value) -> bool | None:
        """Whether a launch value satisfies this condition; None when it cannot be told. A NumPy
        scalar is judged as its Python value (:func:`python_scalar`)."""
        try:
            value = python_scalar(value)
        except Exception:  # noqa: BLE001 - a NumPy array, not a scalar
            return None
        if self.test == "none":
            return (value is None) == self.truth
        if self.test == "truthy":
            if isinstance(value, (bool, int, float, str)) or value is None:
                return bool(value) == self.truth
            return None
        if self.test == "eq" and isinstance(value, (bool, int, float, str)):
            import ast as _ast

            try:
                lit = _ast.literal_eval(self.value or "")
            except (ValueError, SyntaxError):
                return None
            return (value == lit) == self.truth
        return None


class StepKind(str, Enum):
    STRIDE = "stride"  # a stride parameter (or a product containing one)
    SIZE = "size"  # a logical size or a product of sizes
    LITERAL = "literal"  # an integer literal or constexpr-only product
    UNIT = "unit"  # no multiplier: the unit inner step (`+ offs`)
    OTHER = "other"


@dataclass(slots=True)
class Step:
    kind: StepKind
    text: str
    params: tuple[str, ...] = ()  # parameters multiplied in the step


@dataclass(frozen=True, slots=True)
class Factor:
    """One factor of a product in an address, as the kernel walk read it.

    A term keeps its factors so that its split into ``index * step`` can be redone when the
    launches show more about a parameter's role than the kernel does (a scalar bound to
    ``t.shape[1]`` is a size, one bound to ``t.stride(0)`` a stride)."""

    text: str
    sources: frozenset = frozenset()  # IndexSource, parameters excluded (added once classified)
    params: frozenset = frozenset()  # kernel parameters it depends on
    int64: bool = False
    param: str | None = None  # a bare parameter
    literal: bool = False  # an integer literal or a module-level constant
    floordiv: frozenset = frozenset()  # parameters it was floor-divided by (`i // n`)
    blocks: frozenset = frozenset()  # extents of the aranges in it (`tl.arange(0, BLOCK)` -> BLOCK)
    pid_blocks: frozenset = frozenset()  # constexprs a program id/loop counter is multiplied by
    loaded_from: frozenset = frozenset()  # pointer parameters of the loads it comes from
    bounds: frozenset = frozenset()  # parameters bounding it as a whole (comparisons)
    # The index atoms it is computed from, a load being an atom of its own (its address does not
    # flow on): ("pid", axis), ("arange", extent), ("loop", name), ("load", line, col), ("opaque",).
    leaves: frozenset = frozenset()
    # Per comparison inside it: (bounding parameter, leaves of the bounded index, whether the
    # comparison is a conjunct: not under `|`, `or` or a negation).
    bound_sides: frozenset = frozenset()
    pids: frozenset = frozenset()  # program-id axes it is computed from (0, 1, 2; -1 unknown)
    # `// c` dividing the product it sits in (`row * stride // 2`, c a literal or constexpr): a
    # stride scaled to another element size is still that stride. Its ``floordiv`` is what the
    # whole product would carry were it read as one opaque index.
    divisor: bool = False


@dataclass(slots=True)
class Term:
    """One summand of an address: ``index * step``."""

    index: Index
    step: Step
    span: Span  # the product's source range (where SC001/SC006 point)
    text: str  # source text of the product, e.g. "col * vocab_size"
    is_int64: bool = False  # the product is computed in 64 bits
    factors: tuple[Factor, ...] = ()  # what the split was made from (see Factor)


@dataclass(slots=True)
class Access:
    op: str  # "load" | "store" | "atomic" | "block_ptr" | "descriptor"
    pointer: str | None  # the pointer parameter it goes through (after helper binding), if known
    terms: list[Term]
    span: Span  # the call (tl.load(...)) range
    writes: bool = False
    mask_bounds: tuple[str, ...] = ()  # parameters bounding the mask (`offs < n_vocab` -> "n_vocab")
    byte_record: bool = False  # uint8/fp8/bitcast pointer: a constexpr record size is the step by design
    descriptor_strides: tuple[str, ...] = ()  # `strides=` texts of make_block_ptr/make_tensor_descriptor
    via_helper: str | None = None  # helper function name when the access sits in a helper
    via_block: bool = False  # through a block pointer or tensor descriptor (64-bit offsets by construction)
    # Per mask bound, where the index it bounds reaches the address: (parameter, the indices into
    # `terms` of the terms computed from that index (-1: the address outside its terms, a block
    # pointer's base), the terms it bounds whole as a conjunct).
    # A bound with no reached terms bounds only an index that never flows into the address (a
    # read index, or one whose value goes on only through a load). None: not computed.
    mask_bound_reach: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] | None = None
    # The branches (on kernel parameters) the access sits under, outermost first; all must hold.
    conditions: tuple[Condition, ...] = ()

    def reached_terms(self, bound: str) -> tuple[int, ...] | None:
        """Indices into ``terms`` reached by the index the mask bound ``bound`` bounds (empty: it
        never reaches the address); None when unknown (treat every term as reached)."""
        if self.mask_bound_reach is None:
            return None
        for p, reached, _ in self.mask_bound_reach:
            if p == bound:
                return reached
        return None

    def covering_bounds(self, term: int) -> tuple[str, ...]:
        """The mask bounds whose bounded index is made only of term ``term``'s index atoms,
        under a conjunct: they bound that term's index on every stored lane."""
        return tuple(p for p, _, whole in self.mask_bound_reach or () if term in whole)

    def term_dimension(self, term: "Term") -> int:
        """Which dimension ``term`` steps, counting the non-unit terms in source order (the
        outermost first; a unit-step term is the last dimension). Raises ValueError when
        ``term`` is not one of this access's terms."""
        dim = 0
        for t in self.terms:
            if t is term:
                return dim
            if t.step.kind != StepKind.UNIT:
                dim += 1
        raise ValueError("term is not part of this access")


@dataclass(slots=True)
class HelperCall:
    callee: str  # name of the @triton.jit function called
    span: Span
    bindings: dict[str, str] = field(default_factory=dict)  # callee parameter -> caller expression text


@dataclass(slots=True)
class Kernel:
    name: str
    span: Span  # the `def` line
    params: list[Param]
    accesses: list[Access] = field(default_factory=list)
    helper_calls: list[HelperCall] = field(default_factory=list)
    decorators: tuple[str, ...] = ()  # e.g. ("triton.autotune", "triton.jit")
    docstring: str | None = None
    # Parameters that reach an address, a stored value, a tl.rand offset, a descriptor, or a call
    # the analysis could not follow (helpers inlined): what SC002 calls "used".
    used_params: frozenset[str] = frozenset()
    called_by: tuple[str, ...] = ()  # @triton.jit functions of the same module that call this one

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


# ----------------------------------------------------------------------------- launch side


class OriginKind(str, Enum):
    TENSOR = "tensor"  # a tensor variable (pointer argument)
    STRIDE = "stride"  # t.stride(i) / t.stride()[i]
    SHAPE = "shape"  # t.shape[i] / t.size(i) / a name unpacked from t.shape
    NUMEL = "numel"  # t.numel()
    PRODUCT = "product"  # a product of shapes/sizes (heads * dim)
    LITERAL = "literal"  # an integer literal
    OTHER = "other"


@dataclass(slots=True)
class ArgOrigin:
    """What one launch argument is, as far as the launcher shows."""

    kind: OriginKind
    text: str
    span: Span
    tensor: str | None = None  # which tensor (its variable name in the launcher)
    dim: int | None = None  # which dimension of it (negative as written, e.g. -1)
    contiguous: bool = False  # the tensor is provably contiguous at the launch
    fresh: bool = False  # freshly allocated in the launcher (torch.empty...)
    factors: tuple["ArgOrigin", ...] = ()  # for PRODUCT
    literal: int | None = None  # for LITERAL
    ndim: int | None = None  # the tensor's number of dimensions, when the launcher shows it (`n, v = t.shape`)
    family: str | None = None  # TENSOR: the variable whose storage it views (`x2 = x.view(...)` -> "x")
    like_of: str | None = None  # TENSOR: `torch.*_like(t)` / `t.clone()` -> "t"
    # TENSOR: on every path to the launch it was allocated or its extent checked ("*"), or it is
    # another name of these tensors (`dX = dY`): what SC007 accepts as a width check.
    vetted: tuple[str, ...] = ()
    # TENSOR: contiguous given what the module's callers of the launcher pass, a contiguity
    # decorator, or ctx.saved_tensors of a contiguous tensor (``contiguous`` is the launcher's own).
    contiguous_in_module: bool = False
    # TENSOR built as a host-side `TensorDescriptor(t, shape, strides, ...)`: its `strides` entries.
    descriptor_strides: tuple["ArgOrigin", ...] = ()
    # TENSOR returned by a call of a function the module imports ("pkg.ops.alloc_output"): the
    # linker makes it fresh and contiguous when that function is one of its module's `allocators`.
    alloc_call: str | None = None
    # TENSOR: a local variable returned by a call the launcher knows nothing of (`b_ptr =
    # _get_ptr(weights)`, a table of data pointers): what its strides should be is unknown.
    opaque: bool = False
    # TENSOR: made in the launcher by a slice of an inner dimension, a transpose, permute, expand...
    # (`logits = padded[:, :vocab]`): provably *not* packed.
    strided_view: bool = False
    inner_strided: bool = False  # TENSOR: ... a view whose innermost stride is not 1 (`x.t()`, `x.unbind(-1)`)
    # TENSOR: dimensions (as written, e.g. -1) whose stride a dominating check in the launcher pins
    # to 1 (`assert t.stride(-1) == 1`, `assert t.stride()[-1] == 1`, `if t.stride(1) != 1: raise`).
    unit_strides: tuple[int, ...] = ()
    # TENSOR: provably a tensor (facts known, annotated `torch.Tensor`, or used as one in the
    # launcher: `.stride(`, `.shape`...); an unknown name is otherwise only *passed* as one.
    is_tensor: bool = False
    # TENSOR: the launcher's parameter it is, unchanged (what its callers pass decides its layout).
    param: str | None = None
    # TENSOR: the launcher's parameter it still is on some path to the launch, rebound on others
    # (`if x.stride(-1) != 1: x = x.contiguous()`): on that path, what the callers pass reaches it.
    kept_param: str | None = None
    dtype: str | None = None  # TENSOR: "int64", "int32", ... when the launcher shows it
    # TENSOR: tensors a dominating check shows to have the same strides (`assert a.stride() == b.stride()`).
    same_strides: tuple[str, ...] = ()
    # TENSOR: strides the launcher fixes, as (dimension as written, value key): by the allocation
    # (`torch.empty_strided(s, (1, k))`, `.as_strided(s, (1, k))`) or a dominating check
    # (`assert t.stride(-2) == head_dim`, `s0 = b.stride(0)` ... `if t.stride(0) != s0: raise`).
    # A value key names a value as `launches.value_key` does: `1`, `shape:x:-1`, `stride:b:0`.
    known_strides: tuple[tuple[int, str], ...] = ()
    # The Python constant the argument is, as source (`False`, `None`, `'gelu'`, `4`): what a
    # `tl.constexpr` branch is specialised on. None when it is not a constant.
    const: str | None = None
    # TENSOR: contiguous only where a condition on a launcher name holds (`assert ref.is_contiguous()
    # if beta != 0.0 else True`), as (name, test, truth, value) in the terms of ``Condition``.
    contiguous_when: tuple[tuple[str, str, bool, str | None], ...] = ()

    def contiguous_under(self, cond: "Condition", bound: "ArgOrigin | None") -> bool:
        """Whether the kernel branch ``cond`` holding, for a launch that binds its parameter to
        ``bound``, means that this tensor is contiguous: the launcher's condition is the same test
        of the very name the launch passes for the parameter (``if BETA != 0.0:`` with
        ``BETA=beta``, where ``ref`` is contiguous whenever ``beta != 0.0``)."""
        if bound is None or not self.contiguous_when:
            return False
        name = bound.tensor if bound.kind is OriginKind.TENSOR and bound.tensor else bound.text
        for n, test, truth, value in self.contiguous_when:
            if n != name or test != cond.test or truth != cond.truth:
                continue
            if test != "eq":
                return True
            import ast as _ast

            try:
                if _ast.literal_eval(value or "") == _ast.literal_eval(cond.value or ""):
                    return True
            except (ValueError, SyntaxError):
                continue
        return False


@dataclass(slots=True)
class WidthCheck:
    """A dominating check in the launcher comparing a tensor's extent with a size."""

    tensor: str
    dim: int | None
    against: str  # source text of the other side
    span: Span


@dataclass(slots=True)
class Launch:
    """``kernel[grid](args...)`` as written in a launcher function."""

    target: str  # the launched expression as written: "_k", "K._k", "self.kernel"
    span: Span  # the launch's first line (where SC007 points)
    args: list[ArgOrigin] = field(default_factory=list)  # positional
    kwargs: dict[str, ArgOrigin] = field(default_factory=dict)
    star_args: bool = False  # *args / **kwargs that could not be resolved
    launcher: str | None = None  # enclosing function name
    guarded: bool = False  # the launcher is wrapped by @stride_guard
    width_checks: list[WidthCheck] = field(default_factory=list)
    grid_text: str = ""
    grid: list[ArgOrigin] = field(default_factory=list)  # the grid's entries, when a tuple is visible
    resolved_target: str | None = None  # `target` after a launcher-local alias (`k = _kernel; k[g](...)`)
    # The launcher is a public entry point: a public module-level function, a public method of a
    # public class, ``forward``/``backward`` of a module or autograd Function, a registered op.
    public: bool = False
    params: tuple[str, ...] = ()  # the launcher's parameters
    launcher_class: str | None = None  # the class whose method the launcher is

    @property
    def launcher_qualname(self) -> str | None:
        """The launcher as its module's functions are keyed: ``"f"``, or ``"Cls.method"``."""
        return f"{self.launcher_class}.{self.launcher}" if self.launcher_class else self.launcher


# ----------------------------------------------------------------------------- call graph


@dataclass(frozen=True, slots=True)
class ArgFact:
    """What a call passes for one argument, as far as the calling function shows: ``packed``
    (contiguous, allocated), ``strided`` (a slice of an inner dimension, a transpose...: not
    packed), ``param`` (the caller's own parameter ``name``, unchanged or through a view that keeps
    its strides), ``like`` (``empty_like(name)``), ``attr`` (``self.name``), ``literal`` (a number,
    or a name bound to one: a size), ``unknown``.
    ``sized_from`` is set on an allocation made in the caller: the tensors whose extents its shape
    is built from (``empty_like(x)``, ``torch.empty(n, v)`` after ``n, v = x.shape``: ``x``).
    ``view`` is set on a tensor made by indexing another: its base and the indexing with the
    bounds that do not decide strides left out (``buf[:, 0:h]`` and ``buf[:, h:2 * h]`` share
    it), so two arguments with one ``view`` have equal strides (see ``callgraph.view_key``)."""

    kind: str
    name: str | None = None
    text: str = ""
    sized_from: tuple[str, ...] | None = None
    view: str | None = None


@dataclass(slots=True)
class CallSite:
    caller: str  # qualified name of the calling function in its module ("f", "Cls.method")
    callee: str  # as written: "f", "mod.f", "self.m", "Cls.apply"
    line: int
    args: tuple[ArgFact, ...] = ()
    kwargs: dict[str, ArgFact] = field(default_factory=dict)
    star: bool = False  # a *args / **kwargs: positions after it are unknown


@dataclass(slots=True)
class FunctionInfo:
    qualname: str  # "f", "Cls.method"
    params: tuple[str, ...]
    public: bool  # an entry point for code out of sight (see launches._public_entry)
    contiguous_params: tuple[str, ...] = ()  # made contiguous at entry by a decorator
    guarded: bool = False  # wrapped by @stride_guard
    line: int = 0
    autograd: bool = False  # `forward`/`backward` of an autograd Function: it runs in training
    registered: bool = False  # registered as an operator (`@torch.library.custom_op`, `@triton_op`, ...)
    alternative_of: str = ""  # `@register(entry, backend=...)`: another body of `entry`, reached through its calls
    defaulted: tuple[str, ...] = ()  # parameters whose default is None (an optional tensor)


# ----------------------------------------------------------------------------- module


@dataclass(slots=True)
class ModuleModel:
    path: str  # as given/discovered
    module: str | None  # dotted module name within the linted tree, if known
    kernels: list[Kernel] = field(default_factory=list)  # every @triton.jit function (helpers too)
    launches: list[Launch] = field(default_factory=list)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> "pkg.mod.name" (resolved relative)
    kernel_aliases: dict[str, str] = field(default_factory=dict)  # variable -> kernel name it holds
    # module functions every return of which is a fresh contiguous tensor (launch side: a call of
    # one, from another module, is an allocation)
    allocators: tuple[str, ...] = ()
    # module functions every return of which is a contiguous tensor (not necessarily a new one:
    # `return x.permute(order).contiguous()`)
    contiguous_returns: tuple[str, ...] = ()
    functions: dict[str, FunctionInfo] = field(default_factory=dict)  # qualname -> what callers need
    called: frozenset = frozenset()  # every identifier the module calls (callers are read on demand)
    # Read on demand by the tree (``Tree.calls_of``): the module's call sites with what they pass,
    # and class -> attribute -> "packed" when every assignment of `self.<attr>` allocates it.
    calls: list[CallSite] | None = None
    attrs: dict[str, dict[str, str]] | None = None


# ----------------------------------------------------------------------------- findings


@dataclass(frozen=True, slots=True)
class Edit:
    span: Span
    replacement: str


@dataclass(frozen=True, slots=True)
class Fix:
    edits: tuple[Edit, ...]
    safety: str  # "safe" | "unsafe"
    description: str = ""


@dataclass(frozen=True, slots=True)
class Related:
    """Another place of the same defect (a line repeating the product, another launch of the
    kernel, a copy of the helper): reported with the finding, not as a finding of its own."""

    path: str
    span: Span
    note: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnostic. ``name``, ``severity`` and ``message`` templates come from the catalogue."""

    path: str
    span: Span
    code: str
    message: str
    severity: str  # "error" | "warning" | "info"
    hint: str | None = None
    preview: bool = False  # reported only with --preview (the lower tier)
    fix: Fix | None = None
    related: tuple[Related, ...] = ()  # the other places of the same defect
    # What makes two findings one defect across files (a vendored copy of a kernel): the rule's
    # own key (kernel, pointer, parameter...); empty for findings never merged. Not reported.
    group: str = ""

    def sort_key(self) -> tuple:
        return (self.path, self.span.line, self.span.column, self.code)


def product_key(keys, rename: dict[str, str] | None = None) -> str:
    """The value key of the product of values whose keys are ``keys`` (see :func:`value_key`):
    products flattened, factors of 1 dropped, the rest sorted; ``rename`` maps a factor to the
    key standing for it (extents a check shows equal)."""
    flat = sorted((rename or {}).get(x, x) for k in keys for x in (k[5:].split("*") if k.startswith("prod:") else [k])
                  if x != "1")
    return "prod:" + "*".join(flat) if len(flat) > 1 else (flat[0] if flat else "1")


def value_key(o: ArgOrigin) -> str | None:
    """A name for the value an origin stands for, equal for equal values as far as the launcher
    shows (`1`, `shape:x:-1`, `stride:b:0`, a product of them in any order); None when unknown."""
    if o.kind is OriginKind.LITERAL and o.literal is not None:
        return str(o.literal)
    if o.kind is OriginKind.STRIDE and o.tensor and o.dim is not None and not o.factors:
        return f"stride:{o.tensor}:{o.dim}"
    if o.kind is OriginKind.SHAPE and o.tensor and o.dim is not None:
        return f"shape:{o.tensor}:{o.dim}"
    if o.kind is OriginKind.NUMEL and o.tensor:
        return f"numel:{o.tensor}"
    if o.kind in (OriginKind.PRODUCT, OriginKind.STRIDE) and o.factors:
        keys = [value_key(f) for f in o.factors]
        if any(k is None for k in keys):
            return None
        return product_key(keys)
    if o.kind is OriginKind.TENSOR and o.tensor and not o.is_tensor and o.tensor.isidentifier():
        return f"name:{o.tensor}"  # an integer the launcher knows nothing more of (a parameter)
    return None
