"""SC004 shape-as-stride: a launch passes a shape, a product of shapes, a numel or a literal other
than 0 into a stride parameter. Points at the offending argument; a safe fix when exactly one
stride of the pointer's own tensor is what the product stands for (see ``fixes.shape_fix``)."""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.fixes import shape_fix
from stridecheck.lint.model import OriginKind, ParamKind
from stridecheck.lint.stride_pairs import pair_strides

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


def check(tree, options):
    reported = set()
    for bl in tree.bound_launches():
        kernel = bl.kernel
        pairs = None
        for name, o in bl.bound.items():
            p = kernel.param(name)
            if p is None or p.kind is not ParamKind.STRIDE:
                continue
            what = _what(o)
            if what is None:
                continue
            key = (bl.module.path, o.span)
            if key in reported:
                continue
            reported.add(key)
            if pairs is None:
                pairs = pair_strides(kernel)
            pointer = pairs.get(name)
            fix = shape_fix(o, bl.bound.get(pointer) if pointer else None)
            yield make_finding(
                "SC004", bl.module.path, o.span, fix=fix,
                arg=o.text, what=what, param=name, kernel=kernel.name,
                suggestion=fix.edits[0].replacement if fix else "the tensor's `.stride(i)`",
            )
