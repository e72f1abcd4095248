"""Which pointer parameter each stride parameter belongs to, and which dimension a stride steps.

Pairing is by name first, by the conventions of real kernels: a pointer ``x_ptr`` / ``x`` / ``X``
(base name ``x``) owns ``stride_x``, ``stride_xm`` / ``stride_x_m`` / ``stride_x0``, ``x_stride``,
``x_stride_0``, ``x_row_stride``, ``sx0`` / ``sxm``. The longest base name that fits wins, so
``stride_x_scale`` belongs to ``x_scale_ptr`` rather than ``x_ptr``. Only a stride parameter whose
name fits no pointer is paired by use: with the one pointer whose addresses it steps (a stride
stepping several pointers, ``stride_row`` shared by input and output, belongs to none).

The dimension a stride steps is read from the kernel and the launch together, never from letters
in the name (``stride_bk`` in a matmul is often fed ``b.stride(1)`` on purpose): the index it
multiplies is bounded by a mask (``k < K``) or by a grid axis, and the launch shows which tensor
dimension that bound is (``K = a.shape[1]``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

from stridecheck.lint.model import Access, ArgOrigin, Index, IndexSource, Kernel, OriginKind, ParamKind, StepKind

_PTR_SUFFIX = re.compile(r"(_?ptrs?\d*|_pointer|_base_ptr)$")
_PTR_PREFIX = re.compile(r"^(ptr_|p_)")
_NAMED_PTR = re.compile(r"(_ptrs?\d*|_pointer)$")  # named as a pointer whatever its use shows
_SHORT_STRIDE = re.compile(r"^s([a-z]+?)(\d+|[a-z])?$")
_PID = re.compile(r"program_id\(\s*(?:axis\s*=\s*)?(\d)\s*\)")


def stride_named(name: str, extra: tuple[str, ...] = ()) -> bool:
    """Named as a stride: ``stride_x``, ``x_row_stride``, ``sx0`` (not merely used as one), or
    matching one of the configured ``stride-names`` regexes ``extra`` (whole-name match)."""
    s = name.lower()
    if "stride" in s or bool(_SHORT_STRIDE.match(s) and len(s) <= 4 and s[-1].isdigit()):
        return True
    return any(pattern.fullmatch(name) for pattern in _compiled(extra))


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p) for p in patterns)


def pointer_base(name: str) -> str:
    """``x_ptr`` -> ``x``, ``X`` -> ``x``, ``in_ptr0`` -> ``in``, ``ptr_q`` -> ``q``."""
    s = name.lower()
    base = _PTR_SUFFIX.sub("", s)
    base = _PTR_PREFIX.sub("", base) if base == s else base
    return base.strip("_") or s


# Words that name a dimension in stride names (`stride_k_head`, `x_row_stride`, `stride_v_seqlen`).
_DIM_WORDS = frozenset(
    {
        "row", "rows", "col", "cols", "column", "batch", "head", "heads", "seq", "seqlen", "token", "tok",
        "dim", "hdim", "headsize", "headdim", "group", "groups", "expert", "block", "blk", "page", "slot",
        "step", "chunk", "channel", "feat", "inner", "outer", "req", "b", "h", "m", "n", "k", "d", "t",
        "s", "e", "g", "c", "l", "z", "w", "x", "y", "r", "0", "1", "2", "3", "4", "5",
    }
)


def _dims_only(tokens: list[str]) -> bool:
    return all(t in _DIM_WORDS or t.isdigit() for t in tokens)


def owner_candidates(stride_name: str) -> list[str]:
    """Base names a stride parameter may belong to, the most specific first.

    ``stride_am`` -> am, a; ``stride_k_head`` -> k_head, k; ``x_row_stride`` -> x_row, x;
    ``sx0`` -> x0, x. A shorter prefix is a candidate only when what it drops names dimensions
    (``stride_w_mx_e`` is not a stride of ``w``), and at most one trailing letter or digit is
    dropped from a word (``stride_bsn`` is not a stride of ``b``).
    """
    s = stride_name.lower()
    out: list[str] = []
    at = s.find("stride")
    if at >= 0:
        left = s[:at].strip("_")
        right = s[at + len("stride"):]
        if right.startswith("s_") or right == "s":
            right = right[1:]
        right = right.strip("_")
        for part in (left, right):
            if not part:
                continue
            tokens = part.split("_")
            for k in range(len(tokens), 0, -1):
                if k < len(tokens) and not _dims_only(tokens[k:]):
                    break
                c = "_".join(tokens[:k])
                out.append(c)
                if len(tokens) == 1 and len(c) > 1 and part is right:
                    out.append(c[:-1])  # stride_am / stride_x0 / stride_qh: a trailing dimension letter
    else:
        m = _SHORT_STRIDE.match(s)
        if m and len(s) <= 5:
            body = s[1:]
            out.extend(body[: len(body) - cut] for cut in (0, 1) if len(body) > cut)
    seen = set()
    return [c for c in out if c and not c.isdigit() and not (c in seen or seen.add(c))]


def _initials(base: str) -> str | None:
    tokens = [t for t in base.split("_") if t]
    return "".join(t[0] for t in tokens) if len(tokens) > 1 else None


def pair_by_name(kernel: Kernel) -> dict[str, str]:
    """Stride parameter -> pointer parameter, by naming convention.

    Bases match exactly first, then by initials (``stride_bsn`` -> ``b_scale_ptr``). A name is
    trusted only when the kernel's use agrees with it at least once (the stride steps that pointer)
    or the stride steps no pointer at all: ``stride_d`` stepping Q, K and V is a head-dimension
    stride, not a stride of the pointer ``D``.
    """
    bases: dict[str, list[str]] = defaultdict(list)
    initials: dict[str, list[str]] = defaultdict(list)
    for p in kernel.params:
        if p.kind is ParamKind.POINTER or (p.kind is not ParamKind.CONSTEXPR and _NAMED_PTR.search(p.name.lower())):
            base = pointer_base(p.name)
            bases[base].append(p.name)
            ini = _initials(base)
            if ini:
                initials[ini].append(p.name)
    unique = {b: names[0] for b, names in bases.items() if len(names) == 1}
    unique_ini = {b: names[0] for b, names in initials.items() if len(names) == 1 and b not in bases}
    steps = stepped_pointers(kernel)
    out = {}
    for p in kernel.params:
        if p.kind is not ParamKind.STRIDE:
            continue
        cands = owner_candidates(p.name)
        owner = next((unique[c] for c in cands if c in unique), None)
        if owner is None:
            owner = next((unique_ini[c] for c in cands if c in unique_ini), None)
        if owner is None:
            continue
        used = steps.get(p.name)
        if used and owner not in used:
            continue
        out[p.name] = owner
    return out


def stepped_pointers(kernel: Kernel) -> dict[str, set[str]]:
    """Stride parameter -> pointers whose addresses it steps."""
    out: dict[str, set[str]] = defaultdict(set)
    for acc in kernel.accesses:
        if acc.pointer is None:
            continue
        for term in acc.terms:
            if term.step.kind is StepKind.STRIDE:
                for name in term.step.params:
                    out[name].add(acc.pointer)
    return out


def pair_strides(kernel: Kernel) -> dict[str, str]:
    """Stride parameter -> owning pointer: by name, else by use when exactly one pointer uses it."""
    named = pair_by_name(kernel)
    out = dict(named)
    for stride, pointers in stepped_pointers(kernel).items():
        if stride in named:
            continue
        p = kernel.param(stride)
        if p is None or p.kind is not ParamKind.STRIDE:
            continue
        if len(pointers) == 1:
            out[stride] = next(iter(pointers))
    return out


def own_strides(kernel: Kernel, pairs: dict[str, str]) -> dict[str, list[str]]:
    """Pointer -> the stride parameters paired with it."""
    out: dict[str, list[str]] = defaultdict(list)
    for stride, pointer in pairs.items():
        out[pointer].append(stride)
    return out


def pid_axes(index: Index) -> set[int]:
    """Grid axes whose program id the index is (for ``m = tl.program_id(0)``: {0})."""
    axes = getattr(index, "pid_axes", None)
    if axes:
        return set(axes)
    if IndexSource.PROGRAM_ID not in index.sources:
        return set()
    return {int(a) for a in _PID.findall(index.text)}


def normalise_dim(o: ArgOrigin) -> int | None:
    if o.dim is None:
        return None
    if o.dim < 0 and o.ndim is not None:
        return o.dim + o.ndim
    return o.dim


def same_dim(a: ArgOrigin, b: ArgOrigin) -> bool | None:
    """Do two origins name the same dimension? None when it cannot be told (-1 vs 1 without ndim)."""
    da, db = normalise_dim(a), normalise_dim(b)
    if da is None or db is None:
        return None
    if (da < 0) != (db < 0):
        ndim = a.ndim or b.ndim
        if ndim is None:
            return None
        da, db = da % ndim, db % ndim
    return da == db


def expected_dims(
    kernel: Kernel, stride: str, bound: dict[str, ArgOrigin], grid: list[ArgOrigin], tensor: str | None
) -> list[ArgOrigin]:
    """Shape origins of the very tensor (variable) whose stride it receives, bounding the indices
    that ``stride`` steps (a view under another name has other dimensions: not compared)."""
    out = []
    for acc in kernel.accesses:
        for term in acc.terms:
            if term.step.kind is not StepKind.STRIDE or term.step.params != (stride,):
                continue
            for size in bounds_of(acc, term):
                o = bound.get(size)
                if o is not None and o.kind is OriginKind.SHAPE and o.tensor == tensor:
                    out.append(o)
            if not bounds_of(acc, term):
                for axis in pid_axes(term.index):
                    if axis < len(grid):
                        g = grid[axis]
                        if g.kind is OriginKind.SHAPE and g.tensor == tensor:
                            out.append(g)
    return out


_FLAT_SOURCES = frozenset({IndexSource.PROGRAM_ID, IndexSource.ARANGE, IndexSource.CONSTEXPR})


def flattened_dims(
    kernel: Kernel, stride: str, bound: dict[str, ArgOrigin], grid: list[ArgOrigin], tensor: str | None
) -> list[tuple[ArgOrigin, tuple[int, ...]]]:
    """Products of several extents of the very tensor whose stride ``stride`` receives, bounding an
    index that ``stride`` alone steps (`row < b * s`, or a grid axis of `b * s` with `row` its
    program id): the index walks those dimensions flattened. Per product: (origin, the dimensions,
    non-negative, sorted). An index rebuilt from a program id by `//` or `%` walks one dimension
    of them (`pid_b = pid - pid_c * batch` too: an index mixing in a runtime value), and is not
    counted."""
    out = []
    for acc in kernel.accesses:
        for term in acc.terms:
            if term.step.kind is not StepKind.STRIDE or term.step.params != (stride,):
                continue
            if any(op in term.index.text for op in ("//", "%")) or term.index.sources - _FLAT_SOURCES:
                continue
            sizes = [bound.get(size) for size in bounds_of(acc, term)]
            if not bounds_of(acc, term):
                sizes = [grid[a] for a in pid_axes(term.index) if 0 <= a < len(grid)]
            for o in sizes:
                dims = _extent_dims(o, tensor) if o is not None else None
                if dims is not None and len(dims) > 1:
                    out.append((o, dims))
    return out


def _extent_dims(o: ArgOrigin, tensor: str | None) -> tuple[int, ...] | None:
    """The dimensions of ``tensor`` whose extents multiply to ``o`` (None: anything else in it)."""
    if o.kind is not OriginKind.PRODUCT or not o.factors or tensor is None:
        return None
    dims = []
    for f in o.factors:
        if f.kind is OriginKind.PRODUCT:
            inner = _extent_dims(f, tensor)
            if inner is None:
                return None
            dims.extend(inner)
            continue
        if f.kind is not OriginKind.SHAPE or f.tensor != tensor or f.dim is None:
            return None
        d = normalise_dim(f)
        if d is None or d < 0:
            return None
        dims.append(d)
    return tuple(sorted(dims)) if len(set(dims)) == len(dims) else None


def bounds_of(acc: Access, term) -> tuple[str, ...]:
    """Sizes bounding a term's index: its own bounds, or the access's single mask bound when the
    term is the only one whose index walks a ``tl.arange`` (the mask can bound nothing else)."""
    if term.index.bounds:
        return tuple(term.index.bounds)
    if len(acc.mask_bounds) != 1 or IndexSource.ARANGE not in term.index.sources:
        return ()
    if any(op in term.index.text for op in ("//", "%", "minimum", "maximum", "where")):
        return ()  # a mask `x < n` bounds x, not `x // r` or `min(x, c)`
    walking = [t for t in acc.terms if IndexSource.ARANGE in t.index.sources]
    if len(walking) != 1:
        return ()
    # The mask must bound this very index: `s < S` in `x + s * stride_s + d * stride_d` bounds s,
    # however d (the one walking an arange) is made.
    reached = acc.reached_terms(acc.mask_bounds[0])
    mine = next((i for i, t in enumerate(acc.terms) if t is term), None)
    if reached is not None and mine is not None and mine not in reached:
        return ()
    return tuple(acc.mask_bounds)


def _fam(o: ArgOrigin) -> str | None:
    return o.family or o.tensor


def accesses_of(kernel: Kernel, pointer: str) -> list[Access]:
    return [a for a in kernel.accesses if a.pointer == pointer]
