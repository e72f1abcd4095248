"""SC001 size-as-stride: an address steps an outer dimension by a logical size, not a stride.

Fires on a term ``j * SIZE`` of a pointer that is also stepped by a stride parameter, when either
(a) ``j`` selects an outer slice (every factor of it is a value loaded from memory or a scalar
argument, never a program id, an arange or a loop counter), or (b) one tiled index is stepped
partly by a size and partly by a stride (``pid * BLOCK_M * head_size`` beside
``tl.arange(0, BLOCK_M) * out_row_stride``). Silent when every resolved launch makes the tensor
contiguous or allocates it, and when a launch builds the "size" from ``.stride(``. The reasons
are in ``../shared/PRECISION.md`` (the literal reading of this rule is 7% precise on real code).
"""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._kernel_side import (
    LaunchView,
    address_accesses,
    judged_kernels,
    stride_owner,
    term_dimension,
)
from stridecheck.lint.kernels import tensor_of
from stridecheck.lint.model import IndexSource, OriginKind, ParamKind, StepKind
from stridecheck.lint.linker import dead_for
from stridecheck.lint.provenance import PACKED, step_layout

CODE = "SC001"
_SLICE_SOURCES = frozenset({IndexSource.LOADED, IndexSource.SCALAR_ARG})
_TILING_SOURCES = frozenset({IndexSource.PROGRAM_ID, IndexSource.ARANGE, IndexSource.LOOP, IndexSource.OTHER})


def _selects_outer_slice(term) -> bool:
    src = term.index.sources
    return bool(src & _SLICE_SOURCES) and not (src & _TILING_SOURCES)


def _tiles(term, access, stride: str) -> bool:
    """``pid * BLOCK * s`` beside ``tl.arange(0, BLOCK) * s``: the block's start in the dimension
    that ``s`` steps (a tile), not an outer dimension rebuilt from sizes."""
    blocks = set(term.index.pid_blocks) | {f.text for f in term.factors if f.literal}
    step_factors = set(term.step.text.replace(" ", "").split("*"))
    return any(
        t is not term and stride in t.step.params and (set(t.index.arange_blocks) & (blocks | step_factors))
        for t in access.terms
    )


def _rebuilt_outer_stride(term, access, kinds) -> str | None:
    """``block * BLOCK_SIZE * slot_stride`` where ``slot_stride`` alone steps another term of the
    same pointer: an outer dimension stepped by a size times an inner stride. Returns the stride."""
    strides = [p for p in term.step.params if kinds.get(p) == ParamKind.STRIDE]
    others = [f for f in term.factors if f.param not in strides and not f.literal
              and f.param is not None and kinds.get(f.param) in (ParamKind.SIZE, ParamKind.CONSTEXPR)]
    if len(strides) != 1 or not others:
        return None
    s = strides[0]
    if not any(t is not term and t.step.params == (s,) for t in access.terms):
        return None
    # A loaded block id (`tl.load(block_table + i)`) selects a block of a cache whose blocks are a
    # dimension of their own; a program id times a chunk size (`pid_c * chunk_size * stride_seq`)
    # starts a chunk of the very dimension the stride steps.
    if not _selects_outer_slice(term) or _tiles(term, access, s):
        return None
    return s


def _outer_stride_kept(kernel, view, accesses, pointer: str, stride: str) -> bool:
    """Whether ``j * SIZE * stride`` is a position along the very dimension ``stride`` steps (a
    tile or chunk start, a K-loop advance ``ptr += BLOCK * SPLIT_K * stride_k``) rather than an
    outer stride rebuilt from an inner one.

    Kept when every dimension of ``pointer``'s tensor outside the one ``stride`` steps has a
    stride of its own that the kernel receives and uses: the launch binds ``stride`` to
    ``t.stride(0)`` (nothing is outside it), or to ``t.stride(d)`` with ``t.stride(e)`` for every
    ``e < d`` passed and reaching an address. Lost when a launch passes no stride for some outer
    dimension, binds one to the literal 0 (a paged cache whose page stride the kernel rebuilds as
    ``block * BLOCK * stride_n``), or the outer stride never reaches an address. With no launch
    that resolves ``stride``, a stride of the same tensor (one stepping the same pointer in an
    address, one the launch binds to the same tensor, else one named for it) declared
    before ``stride`` must be used: the strides' order in the signature stands for their
    dimensions' order, and a kernel with no outer stride at all is reported."""
    kinds = {q.name: q.kind for q in kernel.params}
    owners = {p for a in accesses if a.pointer == pointer for t in a.terms for p in t.step.params
              if kinds.get(p) == ParamKind.STRIDE and p != stride}
    owners |= {q.name for q in kernel.params
               if q.kind == ParamKind.STRIDE and q.name != stride and stride_owner(q.name, kernel) == pointer}
    outer: set[str] = set()
    resolved = False
    for bl in view.launches:
        t = bl.bound.get(pointer)
        o = bl.bound.get(stride)
        tensor = t.tensor if t is not None and t.kind == OriginKind.TENSOR else None
        if tensor is None or o is None or o.kind != OriginKind.STRIDE or o.tensor != tensor or o.dim is None:
            continue
        resolved = True
        rank = t.ndim

        def dim(e: int) -> int:
            return e + rank if e < 0 and rank else e

        passed: dict[int, str] = {}
        for name, a in bl.bound.items():
            if a.kind == OriginKind.STRIDE and a.tensor == tensor and a.dim is not None and name != stride:
                passed[dim(a.dim)] = name
                owners.add(name)
        d = dim(o.dim)
        if d > 0:
            if any(e not in passed for e in range(d)):
                return False
            outer.update(passed[e] for e in range(d))
        elif d < 0:
            # Without the rank, a more negative dimension lies outside ``d``, and one counted
            # from the front is taken to (launches pass strides outermost first); one of them
            # must be passed.
            out = [n for e, n in passed.items() if e >= 0 or e < d]
            if not out:
                return False
            outer.update(out)
        for name in owners:
            a = bl.bound.get(name)
            if a is not None and a.kind == OriginKind.LITERAL and a.literal == 0:
                return False
    if not resolved:
        order = [q.name for q in kernel.params]
        outer = {q for q in owners if order.index(q) < order.index(stride)}
        if not outer:
            return False
    return all(q in kernel.used_params for q in outer)


def _kernel_page_format(term, access, accesses, is_stride_term) -> bool:
    """``slot % E * RECORD`` inside a page the kernel lays out itself: the same address starts the
    page at ``slot // E`` times a passed stride, and some address of the same pointer places a
    region at ``E * RECORD_SIZE`` (no index of its own: the scales after ``E`` token records). The
    page is then a format of the kernel's own (``[E x record][E x scale]``), its interior no
    dimensions of the tensor, and both the slot position times the record size and the region's
    start are offsets in that format."""
    if term.step.kind != StepKind.SIZE:
        return False
    extents = {p for t in access.terms if t is not term and is_stride_term(t) and "//" in t.index.text
               for p in t.index.params}
    if not extents:
        return False

    def region(t) -> bool:
        if t.step.kind not in (StepKind.SIZE, StepKind.STRIDE):
            return False
        if t.index.text == "1":
            return len(t.step.params) >= 2 and bool(extents & set(t.step.params))
        return (t.index.sources <= {IndexSource.SCALAR_ARG, IndexSource.CONSTEXPR}
                and bool(t.index.params) and set(t.index.params) <= extents)

    if region(term):
        return True
    if "%" not in term.index.text or not extents & set(term.index.params):
        return False
    return any(region(t) for a in accesses if a.pointer == access.pointer for t in a.terms)


def _split_tile(term, access) -> bool:
    blocks = set(term.index.pid_blocks)
    if not blocks:
        return False
    return any(
        t.step.kind == StepKind.STRIDE and blocks & set(t.index.arange_blocks) and t is not term
        for t in access.terms
    )


def _atoms(t) -> frozenset:
    return frozenset().union(*(f.leaves for f in t.factors)) if t.factors else frozenset()


def _block_position(term, access, accesses) -> bool:
    """``blk * BLOCK``, a block index times the extent of a ``tl.arange(0, BLOCK)``, where an
    address of the same pointer walks its innermost dimension with ``blk * BLOCK + tl.arange(0,
    BLOCK)`` (one unit-step term made of the same index atoms plus that arange, or the product
    beside that arange): the kernel uses the product as a position in elements along the
    dimension of the implicit unit step (the block's start), not as an outer dimension stepped by
    a size. Here it must stand where such a position goes: alone as the innermost index, or beside
    that very arange."""
    if term.step.kind != StepKind.SIZE or len(term.step.params) != 1 or not term.factors:
        return False
    atoms = _atoms(term)
    if not atoms or any(a[0] in ("opaque", "arange") for a in atoms):
        return False
    lane = frozenset({("arange", f"0,{term.step.params[0]}")})

    def lanes(a) -> list:
        return [_atoms(t) for t in a.terms if t.step.kind == StepKind.UNIT]

    if any(u != lane for u in lanes(access)):
        return False
    for a in accesses:
        if a.pointer != access.pointer:
            continue
        units = lanes(a)
        if atoms | lane in units:
            return True
        if lane in units and any(t.step.params == term.step.params and _atoms(t) == atoms for t in a.terms):
            return True
    return False


def check(tree, options):
    seen = set()
    for model, kernel in judged_kernels(tree):
        view = LaunchView(tree, model, kernel)
        accesses = address_accesses(kernel)

        def is_stride_term(t) -> bool:
            if t.step.kind == StepKind.STRIDE:
                strides = [p for p in t.step.params if kinds.get(p) == ParamKind.STRIDE]
                return not all(view.is_size(p) for p in strides)
            return t.step.kind == StepKind.SIZE and any(view.is_stride(p) for p in t.step.params)

        kinds = {p.name: p.kind for p in kernel.params}

        strided = {a.pointer for a in accesses for t in a.terms if is_stride_term(t)}
        for access in accesses:
            if access.byte_record or access.pointer not in strided:
                continue
            for term in access.terms:
                rebuilt = _rebuilt_outer_stride(term, access, kinds) if term.step.kind == StepKind.STRIDE else None
                if rebuilt is not None and _outer_stride_kept(kernel, view, accesses, access.pointer, rebuilt):
                    continue
                if rebuilt is None:
                    if term.step.kind != StepKind.SIZE or is_stride_term(term):
                        continue
                    if not (_selects_outer_slice(term) or _split_tile(term, access)):
                        continue
                    if _kernel_page_format(term, access, accesses, is_stride_term):
                        continue
                    if _block_position(term, access, accesses):
                        continue
                sizes = [p for p in term.step.params if p != rebuilt]
                # Only the launches that compile this access in (a branch on a constexpr they set
                # otherwise does not exist for them) say where its tensor comes from.
                alive = [bl for bl in view.launches if not dead_for(access, kernel, [bl])] or view.launches
                layout = step_layout(tree, alive, access.pointer, sizes)
                if layout.kind == PACKED:
                    continue
                key = (model.path, term.span)
                if key in seen:
                    continue
                seen.add(key)
                # The tier follows the tensor's layout where it reaches the launches: a view or a
                # foreign extent that the callers do not settle, or an entry point's argument,
                # is the default's; a layout the analysis cannot see (a pool's buffer, a helper's
                # return, callers out of view), preview. A kernel no code in view launches is
                # launched by its users: a stride for one dimension and a size for another is
                # then the evidence itself.
                yield make_finding(
                    CODE, model.path, term.span, group=f"{kernel.name}:{access.pointer}:{term.text}",
                    preview=bool(view.launches) and not layout.default_tier,
                    product=term.text, pointer=access.pointer, size=term.step.text,
                    tensor=tensor_of(access.pointer), dim=term_dimension(access, term),
                    evidence=f" ({layout.why})" if layout.why and view.launches else "",
                )
