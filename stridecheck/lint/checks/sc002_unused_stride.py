"""SC002 unused-stride: a stride parameter that never reaches an address of a tensor the kernel
really loads or stores.

"Used" means reaching an address, a stored value, a ``tl.rand``/``tl.randint`` offset, a block
pointer or descriptor, or a call the analysis cannot follow (helpers are inlined). Silent when a
launch passes a constant or makes the owning tensor contiguous, when a check or allocation of the
launcher fixes the stride it passes (``assert x.stride(1) == 1``, ``assert_size_stride``), when a
check shows the owner's strides equal to those of the tensor whose strides step it
(``assert k.stride() == v.stride()``), and when the owner is only read
through a host-built descriptor. The default tier wants the owner stepped by another tensor's stride in
place of its own (the true cases on real code); addressed by sizes instead, it goes to the lower
tier (with SC003's "assumes packed"). An
unused stride of the *last* dimension (a launch passes ``.stride(-1)`` or the tensor's highest
dimension; without launches, the owner has another stride in use and is addressed with a unit
inner step), or of a dimension the kernel never indexes, goes to the preview tier.
"""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._kernel_side import (
    LaunchView,
    address_accesses,
    judged_kernels,
    stride_owner,
)
from stridecheck.lint.kernels import tensor_of
from stridecheck.lint.model import IndexSource, ParamKind, StepKind

CODE = "SC002"


def _unit_inner(accesses, owner) -> bool:
    return any(
        t.step.kind == StepKind.UNIT and IndexSource.ARANGE in t.index.sources
        for a in accesses if a.pointer == owner for t in a.terms
    )


def _foreign_strides(kernel, accesses, owner):
    """(stride parameter, the pointer it belongs to) for each stride of another pointer that
    steps ``owner``."""
    kinds = {p.name: p.kind for p in kernel.params}
    for a in accesses:
        if a.pointer != owner:
            continue
        for t in a.terms:
            for q in t.step.params:
                other = stride_owner(q, kernel) if kinds.get(q) == ParamKind.STRIDE else None
                if other is not None and other != owner:
                    yield q, other


def _stepped_by_another(kernel, accesses, owner) -> bool:
    return any(True for _ in _foreign_strides(kernel, accesses, owner))


def _strides_of(kernel, owner: str) -> list[str]:
    """The stride parameters of pointer ``owner``, in signature order (the order of their
    dimensions, outermost first, as launches pass them)."""
    return [q.name for q in kernel.params if q.kind == ParamKind.STRIDE and stride_owner(q.name, kernel) == owner]


def _replaced_by_equal_stride(kernel, accesses, view, owner: str, stride: str) -> bool:
    """``stride`` (the i-th stride of ``owner``) is unused because the kernel steps ``owner`` by
    the i-th stride of another pointer instead (V stepped by ``stride_kh`` in place of
    ``stride_vh``), and every launch shows the two tensors' strides equal in dimension i
    (``assert k.stride()[:2] == v.stride()[:2]``, through a function returning strides too)."""
    i = _strides_of(kernel, owner).index(stride)
    return any(_strides_of(kernel, other).index(q) == i and view.same_stride_dim(owner, other, i)
               for q, other in _foreign_strides(kernel, accesses, owner))


def check(tree, options):
    for model, kernel in judged_kernels(tree):
        accesses = address_accesses(kernel)
        if not accesses:
            continue
        view = None
        for p in kernel.params:
            if p.kind != ParamKind.STRIDE or p.name in kernel.used_params:
                continue
            owner = stride_owner(p.name, kernel)
            if owner is None or not any(a.pointer == owner for a in accesses):
                continue
            if view is None:
                view = LaunchView(tree, model, kernel)
            if view.constant(p.name) or view.contiguous(owner) or view.fixed(p.name, owner):
                continue
            if view.shares_strides(owner) and _stepped_by_another(kernel, accesses, owner):
                continue  # `assert k.stride() == v.stride()`, then `v` stepped by `k`'s strides
            if view.launches and _replaced_by_equal_stride(kernel, accesses, view, owner, p.name):
                continue
            owner_strides = [
                q.name for q in kernel.params
                if q.kind == ParamKind.STRIDE and q.name != p.name and stride_owner(q.name, kernel) == owner
            ]
            if view.launches:
                last = view.last_dim(p.name)
            else:
                last = any(q in kernel.used_params for q in owner_strides) and _unit_inner(accesses, owner)
            # The default tier wants the owner stepped by another tensor's stride in place of its
            # own (the true cases on real code). An owner addressed only by its own other strides
            # never indexes that dimension (a 1-D weight's row stride, a batch stride of a layout
            # without batch); one addressed by sizes assumes it packed (often a scratch buffer the
            # launcher allocates, out of sight): both go to the lower tier.
            # A tensor whose several strides are all unused, addressed wholesale with a sibling's
            # strides, shares that sibling's layout by design (flash-attention kernels reading V
            # with K's strides while the launcher asserts `k.stride() == v.stride()`; a buffer
            # made by `empty_like(sibling)`): the lower tier. A slip is a mix (the tensor's own
            # strides beside a sibling's) or the tensor's only stride replaced.
            wholesale = len(owner_strides) >= 1 and not any(q in kernel.used_params for q in owner_strides)
            lower = last or wholesale or not _stepped_by_another(kernel, accesses, owner)
            yield make_finding(
                CODE, model.path, p.span, preview=lower, group=f"{kernel.name}:{p.name}",
                stride=p.name, pointer=owner, tensor=tensor_of(owner),
            )
