"""Shared helpers of the launch-side rules (SC003, SC004, SC005, SC007)."""

from __future__ import annotations

from stridecheck.lint.model import Kernel, ModuleModel


def helper_names(models) -> set[tuple[str, str]]:
    """(path, name) of every @triton.jit function called from another one: judged through its callers."""
    called = set()
    for model in models:
        names = {k.name for k in model.kernels}
        for k in model.kernels:
            for call in k.helper_calls:
                if call.callee in names:
                    called.add((model.path, call.callee))
    return called


def tensor_word(pointer: str) -> str:
    """``cache_ptr`` -> ``cache``: the tensor name a message talks about."""
    from stridecheck.lint.stride_pairs import pointer_base

    return pointer_base(pointer) or pointer


def is_launched_kernel(model: ModuleModel, kernel: Kernel, helpers: set[tuple[str, str]]) -> bool:
    return (model.path, kernel.name) not in helpers


def shares_stride(po, so, other=None) -> bool:
    """Whether the launcher shows that tensor ``po`` (a TENSOR origin) has the stride ``so`` stands
    for (``t.stride(d)`` of another tensor t; ``other``: t's own origin at the launch, if passed):
    a check or allocation makes their strides equal throughout (``assert po.stride() ==
    t.stride()``, ``ArgOrigin.same_strides``), or equates some stride of po with ``t.stride(d)``
    (``if po.stride(0) != t.stride(0): raise``), or pins both to one value (``assert po.stride(0) == H`` and ``assert t.stride(0) == H``)."""
    if po is None or so is None or not so.tensor:
        return False
    if so.tensor in po.same_strides or (other is not None and po.tensor in other.same_strides):
        return True
    if so.dim is None or so.factors:
        return False
    # A check equating a stride of ``po`` (any dimension: ``scaling.stride(0) == x.stride(2)`` for
    # a 1-D ``scaling``) with the very stride passed says that value is one of ``po``'s strides.
    if any(k == f"stride:{so.tensor}:{so.dim}" for _, k in po.known_strides):
        return True
    if other is None:
        return False
    theirs = {k for d, k in other.known_strides if d == so.dim}
    if any(k.startswith(f"stride:{po.tensor}:") for k in theirs):
        return True
    mine = {k for d, k in po.known_strides if d == so.dim}
    return bool(mine & theirs)


def known_stride_value(po, key: str | None) -> bool:
    """Whether a check or allocation of the launcher fixes some stride of tensor ``po`` to the value
    named ``key`` (see ``model.value_key``): a size passed for a stride is then that stride."""
    return key is not None and po is not None and any(k == key for _, k in po.known_strides)


def stride_fixed(po, dim: int | None) -> bool:
    """Whether a check or allocation fixes stride ``dim`` of tensor ``po`` (to 1 or to a named value)."""
    if po is None or dim is None:
        return False
    return dim in po.unit_strides or any(d == dim for d, _ in po.known_strides)
