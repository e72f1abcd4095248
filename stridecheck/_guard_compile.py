"""Hand ``torch.compile`` a traceable stand-in for each guarded function.

Dynamo inlines a guarded launcher called from compiled code; the eager checks take Python
``bool``s of sizes, which stops tracing when a size is data-dependent (``x.nonzero()``). So each
wrapper gets a stand-in that checks the same contract through ``torch._check``
(:func:`stridecheck._guard_plan.generate_traced`), registered with
``torch.compiler.substitute_in_graph``. That costs nothing per eager call.

Registering needs ``torch._dynamo``, whose import takes seconds; a process that never compiles
should not pay it. So a wrapper is registered at decoration when dynamo is already imported,
and otherwise queued, and the queue is registered right after ``torch._dynamo`` is first
imported (a one-shot post-import hook on ``sys.meta_path``). A function compiled at the top
level (``torch.compile(launcher)``) is traced from its own code: its arguments are never
data-dependent, so the eager checks trace fine there.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading

_pending: list = []
_lock = threading.Lock()
_hook = None


def _register(wrapper, contract, reporter) -> None:
    import torch

    from stridecheck._guard_plan import generate_traced

    if reporter.mode == "warn":
        return  # warnings cannot be logged from inside a graph: dynamo traces the eager checks
    traced, src = generate_traced(wrapper.__wrapped__, contract)
    wrapper.__stride_guard_traced_source__ = src
    torch.compiler.substitute_in_graph(wrapper, skip_signature_check=True)(traced)


def _register_quietly(*item) -> None:
    # The stand-in is an optimisation for tracing; failing to build or register it must never
    # break an import of torch._dynamo or the decoration itself (eager checks still run).
    try:
        _register(*item)
    except Exception as exc:  # noqa: BLE001
        from stridecheck._guard_plan import log

        log.warning("stride_guard: no torch.compile stand-in for %s: %s", item[1].func_name, exc)


def _drain() -> None:
    with _lock:
        items = list(_pending)
        _pending.clear()
    for item in items:
        _register_quietly(*item)


class _DynamoImportHook(importlib.abc.MetaPathFinder):
    """Runs the queued registrations once ``torch._dynamo`` has finished importing."""

    def find_spec(self, name, path, target=None):
        if name != "torch._dynamo":
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None:
                loader = spec.loader
                original = loader.exec_module

                def exec_module(module, _original=original):
                    _original(module)
                    _remove_hook()
                    _drain()

                loader.exec_module = exec_module
                return spec
        return None


def _remove_hook() -> None:
    global _hook
    if _hook is not None and _hook in sys.meta_path:
        sys.meta_path.remove(_hook)
    _hook = None


def provide_traced(wrapper, contract, reporter) -> None:
    """Register ``wrapper``'s torch.compile stand-in now, or as soon as dynamo is imported."""
    global _hook
    if "torch._dynamo" in sys.modules:
        _register_quietly(wrapper, contract, reporter)
        return
    with _lock:
        _pending.append((wrapper, contract, reporter))
        if _hook is None:
            _hook = _DynamoImportHook()
            sys.meta_path.insert(0, _hook)
