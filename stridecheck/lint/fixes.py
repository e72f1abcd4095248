"""Fixes for the launch-site rules: replacement text for launch arguments, exact or nothing.

* SC004 (safe): a shape product handed to a stride parameter, ``heads * dim`` for a pool of shape
  ``[n_slots, heads, dim]``, is what the stride of dimension 0 would be *if the pool were packed*;
  the right argument is ``pool.stride(0)``. The fix is offered only when the product is exactly the
  shapes of the trailing dimensions ``k+1 ..`` of the very tensor whose pointer the stride belongs
  to (so exactly one ``stride(k)`` is right), with that tensor passed by a plain name. On a packed
  tensor the value does not change; on any other it becomes right: safe.
* SC005 (unsafe): two strides of one tensor handed in swapped order (``a.stride(1), a.stride(0)``
  where the kernel's indices show dimension 0 then 1) are put back in order. Unsafe, because a
  launcher may swap them on purpose to read a tensor transposed, and the fix changes what the
  kernel computes.

Each fix is a :class:`~stridecheck.lint.model.Fix` whose edits replace argument spans; the engine
(``fix_apply``) applies them.
"""

from __future__ import annotations

from stridecheck.lint.model import ArgOrigin, Edit, Fix, OriginKind


def _leaves(o: ArgOrigin) -> list[ArgOrigin]:
    if o.kind is OriginKind.PRODUCT:
        out = []
        for f in o.factors:
            out.extend(_leaves(f))
        return out
    return [o]


def trailing_dims(o: ArgOrigin, tensor: str) -> list[int] | None:
    """The dimensions of ``tensor`` whose sizes multiply to ``o``, as negative indices; None when
    ``o`` is not such a product (another tensor, a literal, a dimension of unknown rank)."""
    leaves = _leaves(o)
    if any(l.kind is not OriginKind.SHAPE or l.tensor != tensor or l.dim is None for l in leaves):
        return None
    ndims = {l.ndim for l in leaves if l.ndim is not None}
    if len(ndims) > 1:
        return None
    ndim = ndims.pop() if ndims else None
    dims = []
    for l in leaves:
        d = l.dim
        if d >= 0:
            if ndim is None:
                return None
            d -= ndim
        dims.append(d)
    return dims if len(set(dims)) == len(dims) else None


def outer_dim(dims: list[int]) -> int | None:
    """The dimension just outside ``dims`` when they are exactly the trailing ones (-1, -2, ...)."""
    m = len(dims)
    if not m or sorted(dims) != list(range(-m, 0)):
        return None
    return -(m + 1)


def shape_fix(arg: ArgOrigin, pointer_arg: ArgOrigin | None, expected: int | None) -> Fix | None:
    """``heads * dim`` -> ``pool.stride(0)`` when exactly one stride of the pointer's tensor is meant.

    ``expected`` is the (negative) dimension the kernel steps with this stride, as its address
    shows (the dimension just outside what the unit-step index covers); the rewrite is offered only
    when the product names that same dimension.
    """
    if expected is None or pointer_arg is None or pointer_arg.kind is not OriginKind.TENSOR:
        return None
    tensor = pointer_arg.tensor
    if not tensor or pointer_arg.text != tensor or arg.kind not in (OriginKind.SHAPE, OriginKind.PRODUCT):
        return None
    dims = trailing_dims(arg, tensor)
    if dims is None or outer_dim(dims) != expected:
        return None
    k = expected
    ndims = {l.ndim for l in _leaves(arg) if l.ndim is not None}
    if ndims:
        k += ndims.pop()
        if k < 0:
            return None
    replacement = f"{tensor}.stride({k})"
    return Fix((Edit(arg.span, replacement),), "safe", f"pass `{replacement}`")


def swap_fix(first: ArgOrigin, second: ArgOrigin) -> Fix:
    """Exchange two launch arguments (strides handed in the wrong order)."""
    return Fix(
        (Edit(first.span, second.text), Edit(second.span, first.text)),
        "unsafe",
        f"swap `{first.text}` and `{second.text}`",
    )
