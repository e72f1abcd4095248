"""stridecheck: stops silent stride bugs in Triton GPU kernels.

Three defences share one package:

* ``stridecheck lint`` (:mod:`stridecheck.lint`): a libcst linter for offsets stepped by a
  logical size where the tensor's stride belongs, and for launch-site mistakes.
* :func:`stride_guard` (:mod:`stridecheck.guard`): checks tensor shapes and strides before a
  launch, from metadata only.
* :mod:`stridecheck.testing`: layout tests that re-run a kernel on padded and strided copies of
  the same values with poisoned gaps.

Importing this package imports neither torch nor triton; the guard and the layout tests import
torch only when they are used.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "stride_guard", "StrideGuardError", "Tensor", "stride"]


_LAZY = ("stride_guard", "StrideGuardError", "Tensor", "stride")


def __getattr__(name: str):
    # Lazy: `import stridecheck` must stay cheap for the linter and pre-commit hooks.
    if name in _LAZY:
        from stridecheck import guard

        value = getattr(guard, name)
        if name == "StrideGuardError":
            # The public name: tracebacks and reprs say stridecheck.StrideGuardError, not the
            # private module that defines it.
            value.__module__ = __name__
        return value
    raise AttributeError(f"module 'stridecheck' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The lazy names are listed too, without importing the guard (and torch) to find them.
    return sorted((set(globals()) - {"annotations"}) | set(__all__))
