"""Parsing of ``@stride_guard`` specs into a contract (no torch, no triton).

A *contract* is the decorated function's signature plus one ``ArgRule`` per guarded argument,
in signature order. The fast per-call check (:mod:`stridecheck.guard.spec_check`) and the slow, explaining check
that builds the error messages both read it. The spec language itself is documented in
:mod:`stridecheck.guard`.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT = re.compile(r"[0-9]+\Z")


class StrideGuardError(ValueError):
    """A tensor's layout breaks a ``@stride_guard`` contract, or the contract itself is malformed.

    Raised before the launch, from metadata only. The message names the function, the argument,
    the dimension, the expected and the actual value, where a named size was bound, and the fix.
    """


# Shown (and pickled) under its public path: `stridecheck.StrideGuardError`.
StrideGuardError.__module__ = "stridecheck"


@dataclass(frozen=True, slots=True)
class Dim:
    """One whitespace-separated token of a spec."""

    kind: str  # "name" | "fixed" | "min_name" | "min_fixed" | "any"
    token: str
    name: str | None = None
    value: int | None = None


class Tensor:
    """The object form of a spec: a tensor argument's dims plus options.

    Args:
        spec: dims as in the string form, e.g. ``"R S >=V"`` (see :mod:`stridecheck.guard`).
        dtype: a ``torch.dtype`` or a tuple of them; ``None`` accepts any dtype.
        inner_stride: the stride the last dimension must have (default 1, what a Triton
            address ``ptr + offs`` assumes); ``None`` opts out, for a kernel that steps the
            last dimension by its stride.
        writes: the kernel writes through this argument, so no two of its elements may share
            memory (a stride-0 or overlapping view would be a write race).
        required: ``None`` is refused (by default ``None`` skips the spec).
    """

    __slots__ = ("spec", "dtype", "inner_stride", "writes", "required")

    def __init__(
        self,
        spec: str,
        *,
        dtype=None,
        inner_stride: int | None = 1,
        writes: bool = False,
        required: bool = False,
    ) -> None:
        if not isinstance(spec, str):
            raise StrideGuardError(f"Tensor(spec): the spec must be a string like 'T V', got {spec!r}")
        if inner_stride is not None and (not isinstance(inner_stride, int) or isinstance(inner_stride, bool)):
            raise StrideGuardError(f"Tensor({spec!r}): inner_stride must be an int or None, got {inner_stride!r}")
        self.spec = spec
        self.dtype = dtype
        self.inner_stride = inner_stride
        self.writes = bool(writes)
        self.required = bool(required)

    def __repr__(self) -> str:
        opts = []
        if self.dtype is not None:
            opts.append(f"dtype={self.dtype!r}")
        if self.inner_stride != 1:
            opts.append(f"inner_stride={self.inner_stride!r}")
        if self.writes:
            opts.append("writes=True")
        if self.required:
            opts.append("required=True")
        return "Tensor(" + ", ".join([repr(self.spec), *opts]) + ")"


class stride:  # noqa: N801 - reads as a spec keyword: stride("logits", 0)
    """Spec of an integer argument that claims to be ``tensor.stride(dim)``.

    Args:
        tensor: the name of the tensor argument (a parameter of the guarded function).
        dim: the dimension, negative counting from the last.
        required: ``None`` is refused (by default ``None`` skips the check).
    """

    __slots__ = ("tensor", "dim", "required")

    def __init__(self, tensor: str, dim: int, *, required: bool = False) -> None:
        if not isinstance(tensor, str) or not _NAME.match(tensor):
            raise StrideGuardError(f"stride(tensor, dim): tensor must be an argument name, got {tensor!r}")
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise StrideGuardError(f"stride({tensor!r}, dim): dim must be an int, got {dim!r}")
        self.tensor = tensor
        self.dim = dim
        self.required = bool(required)

    def __repr__(self) -> str:
        return f"stride({self.tensor!r}, {self.dim})"


@dataclass(slots=True)
class ArgRule:
    """What one argument must satisfy."""

    name: str
    position: int  # index in the signature
    kind: str  # "tensor" | "auto" (tensor, or an int when the value is an int) | "stride"
    spec_text: str = ""
    dims: tuple[Dim, ...] = ()
    ellipsis: bool = False
    dtypes: tuple | None = None
    inner_stride: int | None = 1
    writes: bool = False
    required: bool = False
    stride_of: tuple[str, int] | None = None  # for kind "stride"
    origin: str = "spec"  # "spec" or a sentence saying where a derived rule came from


@dataclass(slots=True)
class Contract:
    """A decorated function's compiled-once description."""

    func_name: str
    params: list[str]  # signature order
    rules: list[ArgRule] = field(default_factory=list)  # signature order

    def rule(self, name: str) -> ArgRule | None:
        for r in self.rules:
            if r.name == name:
                return r
        return None


def parse_dims(spec: str, where: str) -> tuple[tuple[Dim, ...], bool]:
    """Split ``"... R S >=V"`` into dims; returns ``(dims, has_leading_ellipsis)``."""
    tokens = spec.split()
    ellipsis = False
    dims: list[Dim] = []
    for i, tok in enumerate(tokens):
        if tok == "...":
            if i != 0:
                raise StrideGuardError(f"{where}: '...' may only lead the spec (any number of leading dims), got {spec!r}")
            ellipsis = True
        elif tok == "*":
            dims.append(Dim("any", tok))
        elif _INT.match(tok):
            dims.append(Dim("fixed", tok, value=int(tok)))
        elif _NAME.match(tok):
            dims.append(Dim("name", tok, name=tok))
        elif tok.startswith(">="):
            rest = tok[2:]
            if _INT.match(rest):
                dims.append(Dim("min_fixed", tok, value=int(rest)))
            elif _NAME.match(rest):
                dims.append(Dim("min_name", tok, name=rest))
            else:
                raise StrideGuardError(f"{where}: {tok!r} in {spec!r}: '>=' takes a name or an integer")
        else:
            raise StrideGuardError(
                f"{where}: cannot read {tok!r} in {spec!r}; a dim is a name (binds a size), an integer "
                "(fixed size), >=NAME or >=INT (a minimum), * (any size), or a leading ... (any leading dims)"
            )
    return tuple(dims), ellipsis


def _dtypes(dtype, where: str) -> tuple | None:
    if dtype is None:
        return None
    items = tuple(dtype) if isinstance(dtype, (tuple, list, set, frozenset)) else (dtype,)
    for d in items:
        # torch.dtype without importing torch: it is the class of torch.float32 and friends.
        if type(d).__name__ != "dtype":
            raise StrideGuardError(f"{where}: dtype must be a torch.dtype or a tuple of them, got {d!r}")
    return items


def callable_name(fn) -> str:
    """The name messages use: the function's, a partial's function's, or the callable's class."""
    for obj in (fn, getattr(fn, "func", None)):
        name = getattr(obj, "__name__", None)
        if isinstance(name, str):
            return name
    return type(fn).__name__


def build_contract(fn, specs: dict, writes: tuple[str, ...] = (), *, params: list[str] | None = None) -> Contract:
    """Check ``specs`` against ``fn``'s signature and return the contract.

    Raises:
        StrideGuardError: an unknown argument name, a malformed spec, a name used only in
            ``>=`` form, a ``stride()`` naming no tensor argument.
    """
    name = callable_name(fn)
    variadic: set[str] = set()
    if params is None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise StrideGuardError(
                f"stride_guard on {name}: cannot read its signature ({exc}); guard a Python function "
                "that calls it"
            ) from None
        params = list(sig.parameters)
        variadic = {
            p.name for p in sig.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        }
    for p in params:
        if p.startswith("_sg_"):
            raise StrideGuardError(f"stride_guard on {name}: parameter names starting with '_sg_' are reserved")
    if isinstance(writes, str):
        writes = (writes,)
    for w in writes:
        if w not in specs:
            raise StrideGuardError(f"stride_guard on {name}: writes names {w!r}, which has no spec")
    rules: list[ArgRule] = []
    for arg, spec in specs.items():
        where = f"stride_guard on {name}, {arg}"
        if arg not in params:
            raise StrideGuardError(f"stride_guard on {name}: no parameter named {arg!r} (parameters: {', '.join(params)})")
        if arg in variadic:
            # A spec reads one value; *args / **kwargs collect a tuple / dict, never a tensor.
            raise StrideGuardError(
                f"{where}: {arg!r} is a *args or **kwargs parameter (it collects a tuple or dict of "
                "arguments), which a spec cannot describe; give the tensor a parameter of its own"
            )
        pos = params.index(arg)
        if isinstance(spec, str):
            dims, ell = parse_dims(spec, where)
            kind = "auto" if len(dims) == 1 and not ell else "tensor"
            rules.append(ArgRule(arg, pos, kind, spec, dims, ell, writes=arg in writes))
        elif isinstance(spec, Tensor):
            dims, ell = parse_dims(spec.spec, where)
            rules.append(
                ArgRule(
                    arg,
                    pos,
                    "tensor",
                    spec.spec,
                    dims,
                    ell,
                    dtypes=_dtypes(spec.dtype, where),
                    inner_stride=spec.inner_stride,
                    writes=spec.writes or arg in writes,
                    required=spec.required,
                )
            )
        elif isinstance(spec, stride):
            if spec.tensor not in params or spec.tensor in variadic:
                raise StrideGuardError(f"{where}: stride({spec.tensor!r}, {spec.dim}) names no parameter of {name}")
            rules.append(ArgRule(arg, pos, "stride", repr(spec), stride_of=(spec.tensor, spec.dim), required=spec.required))
        else:
            raise StrideGuardError(
                f"{where}: a spec is a string like 'T V', a Tensor('T V', ...) or a stride('x', 0), got {spec!r}"
            )
    for r in rules:
        if r.name in writes and r.kind == "stride":
            raise StrideGuardError(f"stride_guard on {name}: writes names {r.name!r}, an integer stride argument, not a tensor")
    rules.sort(key=lambda r: r.position)
    by_name = {r.name: r for r in rules}
    for r in rules:
        if r.kind != "stride":
            continue
        tname, d = r.stride_of
        t = by_name.get(tname)
        if t is not None and t.kind == "tensor" and not t.ellipsis and not -len(t.dims) <= d < len(t.dims):
            raise StrideGuardError(
                f"stride_guard on {name}, {r.name}: stride({tname!r}, {d}) names a dim that {tname} "
                f"(spec {t.spec_text!r}, {len(t.dims)} dims) does not have"
            )
    bound = {d.name for r in rules for d in r.dims if d.kind == "name"}
    for r in rules:
        for d in r.dims:
            if d.kind == "min_name" and d.name not in bound:
                raise StrideGuardError(
                    f"stride_guard on {name}, {r.name}: {d.token!r} refers to {d.name}, which no argument binds; "
                    f"bind it with a plain {d.name!r} dim in another spec (or an integer argument spec)"
                )
    return Contract(name, params, rules)
