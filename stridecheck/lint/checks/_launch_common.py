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
