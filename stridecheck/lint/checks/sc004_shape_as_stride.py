"""SC004 shape-as-stride: a launch passes a shape, a product of shapes, a numel or a literal other
than 0 into a stride parameter. Points at the offending argument; a safe fix when exactly one
stride of the pointer's own tensor is what the product stands for (see ``fixes.shape_fix``)."""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.fixes import outer_dim, shape_fix, trailing_dims
from stridecheck.lint.model import OriginKind, ParamKind, StepKind, value_key
from stridecheck.lint.provenance import PACKED, combine, layout_of
from stridecheck.lint.stride_pairs import bounds_of, pair_strides, stepped_pointers, stride_named

_SHAPES = (OriginKind.SHAPE, OriginKind.NUMEL, OriginKind.PRODUCT)


def _what(o) -> str | None:
    if o.kind is OriginKind.SHAPE:
        return "a shape"
    if o.kind is OriginKind.NUMEL:
        return "an element count"
    if o.kind is OriginKind.PRODUCT:
        return "a product of shapes"
    if o.kind is OriginKind.LITERAL and o.literal not in (None, 0):
        return "the literal"
    return None


def _expected_dim(kernel, stride, pointer, pointer_arg, bound) -> int | None:
    """The dimension ``stride`` steps, when the kernel's address of ``pointer`` shows it exactly:
    ``p + i * stride + offs`` with ``offs`` bounded by a size the launch builds from the trailing
    dimensions of the tensor ``p`` receives (``n_inner = heads * dim``): the next one out."""
    if pointer is None or pointer_arg is None or not pointer_arg.tensor:
        return None
    found = set()
    for acc in kernel.accesses:
        if acc.pointer != pointer or not any(t.step.params == (stride,) for t in acc.terms):
            continue
        units = [t for t in acc.terms if t.step.kind is StepKind.UNIT]
        if len(acc.terms) != 2 or len(units) != 1:
            return None
        sizes = bounds_of(acc, units[0])
        if len(sizes) != 1 or sizes[0] not in bound:
            return None
        dims = trailing_dims(bound[sizes[0]], pointer_arg.tensor)
        if dims is None:
            return None
        found.add(outer_dim(dims))
    return found.pop() if len(found) == 1 else None


def _pinned_unit(bl, pairs, stride, pointer_arg) -> bool:
    """The launcher pins a stride of the tensor the pointer receives to 1 (``assert t.stride(-1) ==
    1``, ``ArgOrigin.unit_strides``) and passes that stride, as ``t.stride(k)``, to no other stride
    of the same pointer: a literal 1 in ``stride`` is that stride."""
    if pointer_arg is None or not pointer_arg.unit_strides or stride not in pairs:
        return False
    for other, pointer in pairs.items():
        if other == stride or pointer != pairs[stride]:
            continue
        a = bl.bound.get(other)
        if a is not None and a.kind is OriginKind.STRIDE and a.tensor == pointer_arg.tensor \
                and a.dim in pointer_arg.unit_strides:
            return False
    return True


def _known_value(bl, pairs, stride, pointer_arg, key) -> bool:
    """A check or allocation of the launcher fixes a stride of the tensor the pointer receives to
    the value ``stride`` receives (``ArgOrigin.known_strides``), in a dimension whose stride, as
    ``t.stride(k)``, goes to no other stride of the same pointer: the size is that stride."""
    if key is None or pointer_arg is None or not pointer_arg.known_strides:
        return False
    # An allocation fixes every dimension, counted both ways (0..n-1 and -n..-1): one dimension each.
    written = {d for d, _ in pointer_arg.known_strides}
    rank = max(written) + 1 if written and min(written) == -(max(written) + 1) \
        and len(written) == 2 * (max(written) + 1) else None

    def norm(d):
        return d % rank if rank and d is not None else d

    dims = {norm(d) for d, k in pointer_arg.known_strides if k == key}
    if not dims:
        return False
    pointer = pairs.get(stride)
    for other, owner in pairs.items():
        if other == stride or pointer is None or owner != pointer:
            continue
        a = bl.bound.get(other)
        if a is not None and a.kind is OriginKind.STRIDE and a.tensor == pointer_arg.tensor:
            dims.discard(norm(a.dim))
    return bool(dims)


def _descriptor_findings(bl, reported, tree):
    """``TensorDescriptor(t, shape, strides=[n_cols, 1])`` handed to the kernel: a size among the
    strides (the last entry 1 is what TMA requires, and 0 broadcasts)."""
    for name, o in bl.bound.items():
        if not o.descriptor_strides or o.contiguous:
            continue
        layout = layout_of(o, bl, tree)
        if layout.kind == PACKED:
            continue
        last = len(o.descriptor_strides) - 1
        for i, s in enumerate(o.descriptor_strides):
            what = _what(s)
            if what is None or (i == last and s.kind is OriginKind.LITERAL and s.literal == 1):
                continue
            key = (bl.module.path, s.span)
            if key in reported:
                continue
            reported.add(key)
            yield make_finding(
                "SC004", bl.module.path, s.span, preview=not layout.default_tier,
                evidence=f" ({layout.why})" if layout.why else "",
                arg=s.text, what=what, param=f"strides[{i}]` of the descriptor for `{name}", kernel=bl.kernel.name,
                suggestion=f"`{o.tensor}.stride({i})`" if o.tensor else "the tensor's `.stride(i)`",
            )


def check(tree, options):
    reported = set()
    for bl in tree.bound_launches():
        kernel = bl.kernel
        yield from _descriptor_findings(bl, reported, tree)
        pairs = None
        for name, o in bl.bound.items():
            p = kernel.param(name)
            if p is None or p.kind is not ParamKind.STRIDE:
                continue
            what = _what(o)
            if what is None or not stride_named(name, options.extra_stride_names):
                continue  # a parameter only *used* as a stride and fed a size is a size (SC003's)
            if pairs is None:
                pairs = pair_strides(kernel)
                steps = stepped_pointers(kernel)
            if name not in steps:
                continue  # the stride steps no address: whatever it receives misplaces nothing
            pointer = pairs.get(name)
            pointer_arg = bl.bound.get(pointer) if pointer else None
            owners = [pointer] if pointer else sorted(steps.get(name, ())) or [
                p.name for p in kernel.params if p.kind is ParamKind.POINTER
            ]
            if owners and all(
                (a := bl.bound.get(q)) is not None and a.kind is OriginKind.TENSOR
                and (a.contiguous or a.contiguous_in_module)
                for q in owners
            ):
                # The launcher (or every caller of it in the module) made the tensor(s) this stride
                # can belong to contiguous or allocated them: the packed stride is exact.
                continue
            if o.kind is OriginKind.LITERAL and o.literal == 1 and _pinned_unit(bl, pairs, name, pointer_arg):
                continue  # `assert t.stride(-1) == 1`: the literal is that stride
            if _known_value(bl, pairs, name, pointer_arg, value_key(o)):
                continue  # `assert t.stride(0) == H * D`, `empty_strided((n, k), (k, 1))`: the size is that stride
            # Where the owner's layout is settled on every path (callers allocate it, a decorator
            # makes it contiguous), the product is its stride; the default tier wants a layout
            # shown to reach the launch (a strided view, an unchecked entry point's argument).
            layout = combine([layout_of(bl.bound.get(q), bl, tree) for q in owners])
            if layout.kind == PACKED:
                continue
            key = (bl.module.path, o.span)
            if key in reported:
                continue
            reported.add(key)
            fix = shape_fix(o, pointer_arg, _expected_dim(kernel, name, pointer, pointer_arg, bl.bound))
            yield make_finding(
                "SC004", bl.module.path, o.span, fix=fix, group=f"{bl.launch.launcher}:{kernel.name}:{name}",
                preview=not layout.default_tier,
                evidence=f" ({layout.why})" if layout.why else "",
                arg=o.text, what=what, param=name, kernel=kernel.name,
                suggestion=f"`{fix.edits[0].replacement}`" if fix else "the tensor's `.stride(i)`",
            )
