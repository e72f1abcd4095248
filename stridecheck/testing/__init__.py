"""Layout tests: does a function give the same answers for the same values in another layout?

>>> from stridecheck.testing import assert_layout_invariant
>>> assert_layout_invariant(store_step, logits, cache, step)   # LayoutError for the founding bug

The package holds four modules:

* :mod:`stridecheck.testing.invariant` — :func:`assert_layout_invariant`, :class:`LayoutError`,
  :class:`LayoutReport`, :class:`Variant`: the assertion and its report;
* :mod:`stridecheck.testing.layouts` — the physical layouts, the poison in their gaps and the
  bookkeeping of stray writes;
* :mod:`stridecheck.testing.strategies` — :func:`strided_tensors`, a hypothesis strategy
  (also importable as :mod:`stridecheck.strategies`);
* :mod:`stridecheck.testing.pytest_plugin` — the ``layout_check`` fixture and the ``layouts``
  marker (loaded by pytest through the ``pytest11`` entry point).

Importing this package imports neither torch, triton nor hypothesis: every name below is
loaded from its module when it is first used.
"""

from __future__ import annotations

import importlib

# Public name -> the module that defines it.
_PUBLIC = {
    "assert_layout_invariant": "stridecheck.testing.invariant",
    "LayoutError": "stridecheck.testing.invariant",
    "LayoutReport": "stridecheck.testing.invariant",
    "Variant": "stridecheck.testing.invariant",
    "DEFAULT_LAYOUTS": "stridecheck.testing.invariant",
    "EXTRA_LAYOUTS": "stridecheck.testing.invariant",
    "ALL_LAYOUTS": "stridecheck.testing.invariant",
    "strided_tensors": "stridecheck.testing.strategies",
}

__all__ = list(_PUBLIC)


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'stridecheck.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
