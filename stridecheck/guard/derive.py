"""Contracts derived from a Triton kernel's own source (bare ``@stride_guard`` on a kernel).

The kernel's module is read once through the linter's access model (the kernel side,
:func:`stridecheck.lint.kernels.build_kernels`: every address split into ``index * step``
terms), and each pointer parameter gets a small plan. At each launch the plan is matched against
the tensor the launch passes, from metadata only.

Assigning an address's terms to the tensor's dimensions (per access, per launch):

1. **The unit term** (``+ offs``, no multiplier, whose index walks elements: an arange, a
   program id or a loop counter; a scalar argument or a loaded value is an offset and is not
   judged) steps the last dimension: that dimension must have stride 1 (unless its size is 0 or
   1). When that reading fails, another dimension of stride 1 (and size > 1) that makes every
   term of the address fit is accepted as the one the unit index walks (a K-major operand
   handed as ``w.t()``). A masked store (``mask = offs < n``, one bound) through an address that
   also has outer terms, where ``offs`` is the address's only vector (arange) index, must not
   run past that dimension: ``n <= shape[-1]`` (in a 2-D tile the mask may bound the rows).
2. **Stride-parameter terms** (``row * x_stride``) are matched by value: the argument must equal
   the stride of a dimension not yet taken; ties go to the outermost such dimension, terms are
   taken in the order written. A value that equals no free dimension's stride is a violation —
   unless a free dimension of size <= 1 is left for it (its index can only be 0, so the step
   never matters).
3. **Size terms** (``col * vocab_size``, ``i * heads * dim``: a product of integer arguments)
   take the leftover dimensions: first any whose stride equals the product, then the innermost
   leftover one, whose stride the product must equal. This is the founding bug's check: a cache
   row 301 wide stepped by a vocabulary of 300. A size term with no leftover dimension steps
   inside a flattened dimension (the tensor is addressed as 1-d) and is not judged.
4. A pointer that is stored through may not have overlapping elements (stride 0 or interleaved
   dimensions: programs would race); all tensors share one device.

An address with more stepping terms (judged, or stepping by a literal or constexpr) than the
tensor has dims views the tensor as having more dims than it has (a flat buffer addressed as rows, ``[B*M, N]`` as ``[B, M, N]``): a term may step by a
multiple of a stride, so its terms are matched where they can be and none is judged otherwise.

Terms with literal, constexpr or otherwise unreadable steps are not judged: they cannot be
compared with a stride without the launch's constexprs, and a constexpr record size is
deliberate in packed byte records. An address with such a term, or with a scalar offset, is not
held to the packing check of rule 1 either (the term may step that dim itself). A tensor with
no elements is not judged.

What this cannot see: a swap of two stride arguments that are both strides of the tensor
(``positional_stride_swap.py`` on a square matrix: the values are A's strides, in the other
order), and faults that depend on values, not layouts (32-bit offset overflow).
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
from dataclasses import dataclass, field

from stridecheck.guard.spec_check import Reporter, Violation, overlaps
from stridecheck.guard.spec import StrideGuardError
from stridecheck.lint.model import IndexSource

_WALKS = frozenset({IndexSource.ARANGE, IndexSource.PROGRAM_ID, IndexSource.LOOP})
_PRODUCT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\s*\*\s*[A-Za-z_][A-Za-z0-9_]*)*\Z")


@dataclass(frozen=True, slots=True)
class AccessPlan:
    """The terms of one address through one pointer, as the guard uses them."""

    text: str  # e.g. "tl.store(cache_ptr + ...)" for messages: the terms joined
    unit: str | None  # source of the unit term, if any
    stride_terms: tuple[tuple[str, str], ...]  # (stride parameter, term text)
    size_terms: tuple[tuple[tuple[str, ...], str], ...]  # (size parameters multiplied, term text)
    store_bound: str | None  # the one parameter bounding a store's mask
    line: int = 0
    opaque: tuple[str, ...] = ()  # terms whose step is not judged (literal, constexpr, other)
    offsets: tuple[str, ...] = ()  # unit-step terms that do not walk elements (`+ start`)


@dataclass(slots=True)
class PointerPlan:
    name: str
    written: bool = False
    accesses: list[AccessPlan] = field(default_factory=list)


@dataclass(slots=True)
class DerivedContract:
    """The contract of a kernel, derived from its source (see the module docstring)."""

    func_name: str
    params: list[str]
    pointers: list[PointerPlan]
    source_path: str = ""

    def describe(self) -> str:
        lines = [f"{self.func_name} (derived from {self.source_path}):"]
        for p in self.pointers:
            for a in p.accesses:
                parts = []
                if a.unit:
                    parts.append(f"unit `{a.unit}` -> last dim, stride 1")
                parts += [f"`{t}` -> the dim whose stride is {s}" for s, t in a.stride_terms]
                parts += [f"`{t}` -> a leftover dim of stride {'*'.join(ps)}" for ps, t in a.size_terms]
                if a.store_bound:
                    parts.append(f"store mask < {a.store_bound} <= shape[-1]")
                parts += [f"`{t}` not judged" for t in a.opaque]
                parts += [f"offset `{t}` not judged" for t in a.offsets]
                lines.append(f"  {p.name}{' (written)' if p.written else ''}: " + "; ".join(parts))
        return "\n".join(lines)


_CACHE: dict[tuple, DerivedContract] = {}


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


def plan_pointers(model, params: list[str]) -> list[PointerPlan]:
    """Per pointer parameter, the accesses the guard can judge (see the module docstring).

    ``model`` is a :class:`stridecheck.lint.model.Kernel`; ``params`` its parameter names.
    """
    pointers: dict[str, PointerPlan] = {}
    for acc in model.accesses:
        if acc.pointer is None or acc.pointer not in params or acc.op not in ("load", "store", "atomic"):
            continue
        if acc.byte_record:
            continue  # a constexpr record size is the step by design
        plan = pointers.setdefault(acc.pointer, PointerPlan(acc.pointer))
        if acc.writes and acc.op == "store":
            plan.written = True
        unit = None
        strides, sizes, opaque, offsets = [], [], [], []
        for term in acc.terms:
            kind = term.step.kind.value
            if kind == "unit":
                # Only an index that walks elements (an arange, a program id, a loop counter) steps
                # the last dim by one; a caller's scalar or a loaded value (`x_ptr + start`,
                # `x_ptr + tl.load(idx_ptr)`) is an offset into the buffer, which says nothing
                # about its inner stride.
                if term.index.sources & _WALKS:
                    unit = unit or term.text
                else:
                    offsets.append(term.text)  # an offset may land on any dim: not judged
            elif (
                kind == "stride"
                and len(term.step.params) == 1
                and term.step.text.strip() == term.step.params[0]
                and term.step.params[0] in params
            ):
                strides.append((term.step.params[0], term.text))
            elif (
                kind == "size"
                and term.step.params
                and _PRODUCT.match(term.step.text.strip())
                and all(p in params for p in term.step.params)
            ):
                sizes.append((tuple(term.step.params), term.text))
            elif kind != "unit":
                opaque.append(term.text)
        bound = None
        # The model does not say which index a mask bounds. Only when the unit index is the one
        # vector (arange) index of the address can `offs < n` be taken to bound the last dim; in
        # a 2-D tile (`offs_m[:, None] * stride_m + offs_n[None, :]`, mask `offs_m < M`) it may
        # bound the rows, and judging it against the last dim would refuse valid launches.
        vectors = [t for t in acc.terms if IndexSource.ARANGE in t.index.sources]
        if (
            acc.writes
            and acc.op == "store"
            and unit
            and len(vectors) == 1
            and vectors[0].step.kind.value == "unit"
            and len(acc.mask_bounds) == 1
            and acc.mask_bounds[0] in params
        ):
            bound = acc.mask_bounds[0]
        ap = AccessPlan(
            " + ".join(t.text for t in acc.terms),
            unit,
            tuple(strides),
            tuple(sizes),
            bound,
            acc.span.line,
            tuple(opaque),
            tuple(offsets),
        )
        if ap not in plan.accesses and (ap.unit or ap.stride_terms or ap.size_terms):
            plan.accesses.append(ap)
    return [p for p in pointers.values() if p.accesses]


_MODULES: dict[tuple[str, int], list] = {}  # (path, hash of source) -> access model of its kernels


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
    contract = DerivedContract(pyfn.__name__, params, pointers, path)
    _CACHE[key] = contract
    return contract


def _int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if type(v).__name__ in ("SymInt", "int64", "int32"):
        return int(v)
    return None


def check_derived(contract: DerivedContract, values: dict) -> list[Violation]:
    """Every violation of a derived contract by one launch's arguments (name -> value)."""
    fn = contract.func_name
    out: list[Violation] = []
    device = None
    for plan in contract.pointers:
        t = values.get(plan.name)
        if t is None or not hasattr(t, "stride"):
            continue
        p = plan.name
        shape = tuple(int(s) for s in t.shape)
        strides = tuple(int(s) for s in t.stride())
        if device is None:
            device = (t.device, p)
        elif t.device != device[0]:
            out.append(Violation((p, "device"), f"{fn}: {p} is on {t.device} but {device[1]} is on {device[0]}; move all tensors to one device"))
        if 0 in shape:
            continue
        nd = len(shape)
        if plan.written and overlaps(shape, strides):
            out.append(
                Violation(
                    (p, "overlap"),
                    f"{fn}: {p} is stored through but two of its elements share memory (shape {list(shape)}, strides "
                    f"{list(strides)}); programs would race on one address — pass a tensor that owns its memory "
                    f"({p}.clone() or torch.empty(...))",
                )
            )
        for acc in plan.accesses:
            found = _check_access(fn, p, acc, shape, strides, nd, values)
            if found and acc.unit is not None and nd >= 2:
                # The unit index may walk another dim of stride 1: a K-major operand handed as
                # `w.t()` ([K, N], strides [1, K]) to `b_ptr + offs_k[:, None] + offs_n[None, :] *
                # stride_bn`. Accept when some such dim makes every term of the address fit;
                # otherwise report the reading with the last dim (the usual layout). A size-1 dim
                # is not tried: its stride is arbitrary, and a unit index walking it would have
                # to be masked to one element, which the plan cannot see.
                for u in range(nd - 1):
                    if shape[u] > 1 and strides[u] == 1 and not _check_access(
                        fn, p, acc, shape, strides, nd, values, unit_dim=u
                    ):
                        found = []
                        break
            out.extend(found)
    return out


def _check_access(fn, p, acc: AccessPlan, shape, strides, nd, values, unit_dim: int | None = None) -> list[Violation]:
    """Violations of one access; ``unit_dim`` is a dim of stride 1 other than the last that the
    unit term is taken to walk (then the checks tied to the last dim are left out)."""
    out: list[Violation] = []
    free = list(range(nd))
    where = f"line {acc.line}" if acc.line else "an address"
    # More terms than dims: the kernel views the tensor as having more dims than it has (a flat
    # buffer addressed as rows, a [B*M, N] tensor as [B, M, N]), so a term may step by a multiple
    # of a stride (M * stride(0)). Terms are matched where they can be, never judged otherwise.
    # Unjudged stepping terms count too: `m * ROW` (a constexpr step) may step a dim of its own;
    # an offset (`+ start`) steps none.
    flattened = nd < (1 if acc.unit is not None else 0) + len(acc.stride_terms) + len(acc.size_terms) + len(acc.opaque)
    if unit_dim is not None:
        free.remove(unit_dim)
    elif acc.unit is not None and nd >= 1:
        free.remove(nd - 1)
        if shape[-1] > 1 and strides[-1] != 1:
            out.append(
                Violation(
                    (p, "inner_stride", acc.line),
                    f"{fn}: {p} is addressed as `... + {acc.unit}` ({where}), a unit step along its last dim, but "
                    f"{p}.stride({nd - 1}) is {strides[-1]}; pass {p}.contiguous() or a view with unit inner stride",
                )
            )
    for param, text in acc.stride_terms:
        v = _int(values.get(param))
        if v is None:
            continue
        match = next((d for d in free if strides[d] == v and shape[d] > 1), None)
        if match is None:
            match = next((d for d in free if strides[d] == v), None)
        if match is None:
            match = next((d for d in free if shape[d] <= 1), None)
            if match is None and flattened:
                continue
            if match is None:
                hint = next((d for d in free), None)
                fix = f"pass {p}.stride({hint}) = {strides[hint]}" if hint is not None else "pass the stride of the dim it steps"
                out.append(
                    Violation(
                        (p, "stride_arg", param, acc.line),
                        f"{fn}: {param} = {v} steps {p} in `{text}` ({where}), but no dim of {p} left for it has "
                        f"stride {v} (shape {list(shape)}, strides {list(strides)}); {fix}",
                    )
                )
                if hint is not None:
                    free.remove(hint)  # the dim it was meant for: judged once, not again below
                continue
        free.remove(match)
    for params, text in acc.size_terms:
        vals = [_int(values.get(q)) for q in params]
        if any(v is None for v in vals):
            continue
        v = 1
        for x in vals:
            v *= x
        left = [d for d in free if shape[d] > 1]
        if not left:
            continue  # steps inside a flattened dim, or a dim whose index is always 0
        match = next((d for d in left if strides[d] == v), None)
        if match is None and flattened:
            continue
        if match is None:
            # Report against the dim whose stride is nearest: the one the term most plausibly meant.
            d = min(left, key=lambda k: (abs(strides[k] - v), k))
            what = " * ".join(params)
            out.append(
                Violation(
                    (p, "size_as_stride", text, acc.line),
                    f"{fn}: `{text}` ({where}) steps {p} dim {d} by {what} = {v}, but {p}.stride({d}) is "
                    f"{strides[d]} (shape {list(shape)}): a logical size used as a stride — pass {p}.stride({d}) "
                    f"to the kernel and step by it, or pass a contiguous {p}",
                )
            )
            free.remove(d)
            continue
        free.remove(match)
    if acc.unit is not None and nd >= 1 and unit_dim is None:
        # Free dims right inside the last one are walked by the unit index too (a flattened
        # `offs` over [..., H, D]): they must be packed with it, and a masked store spans them all.
        inner = [nd - 1]
        d = nd - 2
        while d >= 0 and d in free:
            inner.insert(0, d)
            d -= 1
        packed_at = None
        want = 1  # the stride a packed dim needs: the number of elements inside it
        for k in reversed(inner[:-1]):
            want *= shape[k + 1]
            if shape[k] > 1 and strides[k] != want:
                packed_at = k
                break
        # A term whose step is not judged (`h * STRIDE_H`, a constexpr) may step a free dim by
        # its true stride: then that dim is not walked by the unit index and need not be packed.
        if packed_at is not None and (acc.stride_terms or acc.size_terms) and not flattened and not acc.opaque and not acc.offsets:
            out.append(
                Violation(
                    (p, "packed", acc.line),
                    f"{fn}: {p} dim {packed_at} has no term of its own in the address ({where}), so `{acc.unit}` "
                    f"walks it flattened with the dims inside it; that needs {p}.stride({packed_at}) == {want}, "
                    f"but it is {strides[packed_at]} (shape {list(shape)}, strides {list(strides)}); pass a "
                    f"tensor whose inner dims are packed (.contiguous())",
                )
            )
        if acc.store_bound is not None and (acc.stride_terms or acc.size_terms) and nd >= 2:
            n = _int(values.get(acc.store_bound))
            extent = 1
            for k in inner:
                extent *= shape[k]
            if n is not None and n > extent:
                dims = "its last dim" if len(inner) == 1 else f"dims {inner[0]}..{nd - 1} (flattened)"
                out.append(
                    Violation(
                        (p, "store_extent", acc.line),
                        f"{fn}: the store through {p} ({where}) is masked by `< {acc.store_bound}` = {n} along "
                        f"{dims}, which hold only {extent} elements (shape {list(shape)}); the store would run "
                        f"past them — allocate {p} at least {n} wide",
                    )
                )
    return out


def derived_reporter(contract: DerivedContract, mode: str) -> Reporter:
    """The failure path of a derived contract (see :class:`~stridecheck.guard.spec_check.Reporter`)."""
    return Reporter(contract, mode, explain=check_derived)


def _used_names(contract: DerivedContract) -> list[str]:
    names = {p.name for p in contract.pointers}
    for p in contract.pointers:
        for a in p.accesses:
            names.update(s for s, _ in a.stride_terms)
            names.update(x for ps, _ in a.size_terms for x in ps)
            if a.store_bound:
                names.add(a.store_bound)
    return sorted(names)


def _detector(contract: DerivedContract) -> list[str]:
    """Straight-line code that flags (raises _sg_Flag) every launch :func:`check_derived` would
    reject, and rarely a good one (then ``check_derived`` clears it). It reads each tensor's
    shape and strides once and tests membership of stride values instead of assigning dims:

    * a stride term's value must be among the strides left once the unit term took the last
      dim (``v in strides[:-1]``), and the stride terms' values pairwise distinct: then the
      matching of ``check_derived`` succeeds;
    * a size term's product must be a stride too (not the last dim's, not one a stride term
      took, and the tensor without size-1 dims, whose strides are arbitrary), whenever the
      tensor has more dims than the other terms of the address (else there is no leftover dim);
    * a tensor with unclaimed dims must be contiguous, and a masked store's bound must fit the
      last dim; written tensors must not overlap; one device.
    """
    lines: list[str] = []
    ind = "        "
    multi = len(contract.pointers) > 1
    if multi:
        lines.append(ind + "_sg_dev = None")
    for i, plan in enumerate(contract.pointers):
        p = plan.name
        s, t = f"_sg_s{i}", f"_sg_t{i}"
        lines.append(ind + f"if {p} is not None and {p}.__class__ is not _sg_int:")
        body = ind + "    "
        lines.append(body + f"{s} = {p}.shape")
        lines.append(body + f"{t} = {p}.stride()")
        if multi:
            lines.append(body + f"if _sg_dev is None: _sg_dev = {p}.device")
            lines.append(body + f"elif {p}.device != _sg_dev: raise _sg_Flag")
        if plan.written:
            lines.append(body + f"if not {p}.is_contiguous() and _sg_overlaps({s}, {t}): raise _sg_Flag")
        for acc in plan.accesses:
            avail = f"{t}[:-1]" if acc.unit else t
            claimed = (1 if acc.unit else 0) + len(acc.stride_terms) + len(acc.size_terms)
            if acc.unit:
                lines.append(body + f"if {s}[-1] > 1 and {t}[-1] != 1: raise _sg_Flag")
            values = [v for v, _ in acc.stride_terms]
            if values:
                lines.append(body + f"_sg_a = {avail}")
                for v in values:
                    # Fewer dims than terms: check_derived does not judge unmatched terms.
                    lines.append(body + f"if _sg_len({s}) >= {claimed} and {v} not in _sg_a: raise _sg_Flag")
                for a_i in range(len(values)):
                    for b_i in range(a_i + 1, len(values)):
                        lines.append(body + f"if {values[a_i]} == {values[b_i]}: raise _sg_Flag")
            products = []
            for params, _ in acc.size_terms:
                prod = " * ".join(params)
                products.append(f"({prod})")
                taken = "".join(f" or ({prod}) == {v}" for v in values)
                # A size-1 dim may carry any stride, so `in` could find the product there.
                lines.append(
                    body + f"if _sg_len({s}) > {claimed - len(acc.size_terms)} and (({prod}) not in {avail}{taken} "
                    f"or 1 in {s}): raise _sg_Flag"
                )
            for a_i in range(len(products)):
                for b_i in range(a_i + 1, len(products)):
                    lines.append(body + f"if {products[a_i]} == {products[b_i]}: raise _sg_Flag")
            if acc.unit and (acc.stride_terms or acc.size_terms):
                if not acc.opaque and not acc.offsets:  # check_derived judges packing only then
                    lines.append(body + f"if _sg_len({s}) > {claimed} and not {p}.is_contiguous(): raise _sg_Flag")
                if acc.store_bound:
                    lines.append(body + f"if _sg_len({s}) >= 2 and {acc.store_bound} > {s}[-1]: raise _sg_Flag")
    return lines


def generate_derived_check(pyfn, contract: DerivedContract, reporter: Reporter):
    """A function taking a launch's arguments that checks them against the derived contract:
    the fast detector, and ``check_derived`` (through ``reporter``) on a flag."""
    from stridecheck.guard.spec_check import BUILTINS, _compile, _Flag, _signature_text

    ns: dict = {**BUILTINS, "_sg_report": reporter, "_sg_Flag": _Flag, "_sg_overlaps": overlaps}
    params, _ = _signature_text(inspect.signature(pyfn), ns, kernel=True)
    body = _detector(contract) or ["        pass"]
    values = "{" + ", ".join(f"{n!r}: {n}" for n in _used_names(contract)) + "}"
    src = "\n".join(
        [
            f"def _sg_check({params}):",
            "    try:",
            *body,
            "    except Exception:",
            f"        _sg_report({values})",
            "",
        ]
    )
    return _compile(src, ns, "_sg_check", contract.func_name), src
