"""Hand ``torch.compile`` a traceable stand-in for each guarded function.

Dynamo inlines a guarded launcher called from compiled code; the eager checks take Python
``bool``s of sizes, which stops tracing when a size is data-dependent (``x.nonzero()``). So each
wrapper gets a stand-in that checks the same contract through ``torch._check``
(:func:`generate_traced`), registered with
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
import inspect
import sys
import threading

from stridecheck.guard.spec import ArgRule, Contract, StrideGuardError
from stridecheck.guard.spec_check import BUILTINS, _compile, _signature_text, _start_body

_pending: list = []
_lock = threading.Lock()
_hook = None


def spec_standin(wrapper, contract, reporter):
    """The stand-in of a spec-guarded function (None in warn mode: warnings cannot be logged
    from inside a graph, so dynamo traces the eager checks)."""
    if reporter.mode == "warn":
        return None
    traced, src = generate_traced(wrapper.__wrapped__, contract)
    wrapper.__stride_guard_traced_source__ = src
    return traced


def _register(target, build, name: str) -> None:
    import torch

    standin = build()
    if standin is not None:
        torch.compiler.substitute_in_graph(target, skip_signature_check=True)(standin)


def _register_quietly(target, build, name: str) -> None:
    # The stand-in is an optimisation for tracing; failing to build or register it must never
    # break an import of torch._dynamo or the decoration itself (eager checks still run).
    try:
        _register(target, build, name)
    except Exception as exc:  # noqa: BLE001
        from stridecheck.guard.spec_check import log

        log.warning("stride_guard: no torch.compile stand-in for %s: %s", name, exc)


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


def provide_traced(target, build, name: str) -> None:
    """Register ``build()`` (a function, or None for none) as what dynamo traces in place of
    ``target``: now, or as soon as dynamo is imported."""
    global _hook
    if "torch._dynamo" in sys.modules:
        _register_quietly(target, build, name)
        return
    with _lock:
        _pending.append((target, build, name))
        if _hook is None:
            _hook = _DynamoImportHook()
            sys.meta_path.insert(0, _hook)


# ----------------------------------------------------------------------------- the stand-in's source


def _traced_body(contract: Contract, ns: dict) -> list[str]:
    """Source lines of the variant ``torch.compile`` traces in place of the wrapper.

    The same contract, but every comparison of sizes or strides goes through ``_sg_expect``: a
    comparison dynamo can decide (static or backed sizes) is decided while tracing, and a false
    one raises ``StrideGuardError``; one it cannot decide (a data-dependent, unbacked size, where
    a Python ``bool`` would stop tracing) becomes a ``torch._check``, a runtime assertion of the
    compiled graph. None-ness, number of dims, dtype and device are static under tracing: plain
    ``if``. Messages are fixed at decoration (argument, dim and relation, not the values): the
    explaining checker's value-by-value report cannot run on data-dependent sizes.
    """
    fn = contract.func_name
    w, names, n_tensors = _start_body(contract, depth=1)

    def check(cond: str, msg: str) -> None:
        w(f"_sg_expect({cond}, {msg!r})")

    def fail(cond: str, msg: str) -> None:
        w(f"if {cond}: raise _sg_Error({msg!r})")

    def size_check(rule: ArgRule, dim, expr: str, what: str, deferred: list, guard: str) -> None:
        if dim.kind == "name" and dim.name in names:
            v = f"_sg_n_{dim.name}"
            w(f"if {v} is None: {v} = {expr}")
            w("else:")
            w.depth += 1
            check(f"{expr} == {v}", f"{fn}: {what} must equal {dim.name}, as bound by an earlier argument")
            w.depth -= 1
        elif dim.kind == "fixed":
            check(f"{expr} == {dim.value}", f"{fn}: {what} must be {dim.value}")
        elif dim.kind == "min_fixed":
            check(f"{expr} >= {dim.value}", f"{fn}: {what} must be >= {dim.value}")
        elif dim.kind == "min_name":
            deferred.append((guard, expr, dim.name, f"{fn}: {what} must be >= {dim.name}; it would be truncated"))

    deferred: list = []
    tvars: dict[str, tuple[str, str]] = {}
    for i, rule in enumerate(contract.rules):
        a = rule.name
        if rule.kind == "stride":
            continue
        if rule.required:
            fail(f"{a} is None", f"{fn}: {a} is None but is required by the guard; pass it")
        w(f"if {a} is not None:")
        w.depth += 1
        if rule.kind == "auto":
            w(f"if _sg_isinstance({a}, (_sg_int, _sg_SymInt)):")
            w.depth += 1
            w("pass")
            size_check(rule, rule.dims[0], a, a, deferred, f"_sg_isinstance({a}, (_sg_int, _sg_SymInt))")
            w.depth -= 1
            w("else:")
            w.depth += 1
        s, t = f"_sg_s{i}", f"_sg_t{i}"
        tvars[a] = (s, t)
        w(f"{s} = {a}.shape")
        w(f"{t} = {a}.stride()")
        n = len(rule.dims)
        if rule.ellipsis:
            fail(f"_sg_len({s}) < {n}", f"{fn}: {a} needs at least {n} dims ({rule.spec_text!r})")
        else:
            fail(f"_sg_len({s}) != {n}", f"{fn}: {a} needs {n} dims ({rule.spec_text!r})")
        guard = f"{a} is not None" + (f" and not _sg_isinstance({a}, (_sg_int, _sg_SymInt))" if rule.kind == "auto" else "")
        for k, dim in enumerate(rule.dims):
            idx = k - n if rule.ellipsis else k
            size_check(rule, dim, f"{s}[{idx}]", f"{a} dim {idx}", deferred, guard)
        w(f"_sg_empty{i} = {a}.numel() == 0")
        if rule.inner_stride is not None and (n >= 1 or rule.ellipsis):
            cond = f"({s}[-1] <= 1) | ({t}[-1] == {rule.inner_stride}) | _sg_empty{i}"
            if n == 0:
                cond = f"(_sg_len({s}) == 0) or {cond}"
            check(cond, f"{fn}: {a} must have stride {rule.inner_stride} on its last dim")
        w(f"for _sg_x in {t}:")
        w(f"    _sg_expect(_sg_x >= 0, {f'{fn}: {a} has a negative stride'!r})")
        if rule.writes:
            fail(f"_sg_overlaps_traced({s}, {t})", f"{fn}: {a} is written but two of its elements share memory")
        if rule.dtypes is not None:
            ns[f"_sg_dt{i}"] = rule.dtypes
            fail(f"{a}.dtype not in _sg_dt{i}", f"{fn}: {a} has a dtype the guard does not allow")
        if n_tensors > 1:
            w(f"if _sg_dev is None: _sg_dev = {a}.device")
            fail(f"{a}.device != _sg_dev", f"{fn}: {a} is on another device than the other tensors")
        if rule.kind == "auto":
            w.depth -= 1
        w.depth -= 1
    for guard, expr, name, msg in deferred:
        w(f"if {guard} and _sg_n_{name} is not None:")
        w(f"    _sg_expect({expr} >= _sg_n_{name}, {msg!r})")
    for rule in contract.rules:
        if rule.kind != "stride":
            continue
        tname, d = rule.stride_of
        if rule.required:
            fail(f"{rule.name} is None", f"{fn}: {rule.name} is None but is required by the guard")
        if tname in tvars and contract.rule(tname).kind == "tensor":
            s, t = tvars[tname]
            read_s, read_t = f"{s}[{d}]", f"{t}[{d}]"
        else:
            read_s, read_t = f"{tname}.shape[{d}]", f"{tname}.stride({d})"
        w(f"if {rule.name} is not None and {tname} is not None:")
        w(f"    _sg_expect(({rule.name} == {read_t}) | ({read_s} <= 1), {f'{fn}: {rule.name} must equal {tname}.stride({d})'!r})")
    return w.lines


def overlaps_traced(shape, strides) -> bool:
    """:func:`overlaps` for symbolic sizes: True only where an overlap is provable.

    Each comparison is decided when the sizes are known (or backed by a hint, adding a guard);
    a data-dependent one is taken as "no overlap" rather than stopping the trace.
    """
    from torch.fx.experimental.symbolic_shapes import guard_or_false, guard_or_true

    dims = []
    for sz, st in zip(shape, strides):
        if guard_or_false(sz == 0):
            return False
        if guard_or_true(sz > 1):
            dims.append((st, sz))
    extent = 1
    while dims:
        k = 0
        for j in range(1, len(dims)):
            if guard_or_false(dims[j][0] < dims[k][0]):
                k = j
        st, sz = dims.pop(k)
        if guard_or_false(st < extent):
            return True
        extent = extent + st * (sz - 1)
    return False


def expect(cond, message: str) -> None:
    """Under tracing: decide ``cond`` where it can be decided (False raises StrideGuardError),
    else record it as a runtime assertion of the graph (``torch._check``)."""
    import torch
    from torch.fx.experimental.symbolic_shapes import guard_or_true

    if not guard_or_true(cond):
        raise StrideGuardError(message)
    torch._check(cond, lambda: message)


def generate_traced(fn, contract: Contract):
    """The wrapper's stand-in under ``torch.compile``: same signature and contract, checks that
    survive data-dependent sizes (see :func:`_traced_body`)."""
    import torch

    sig = inspect.signature(fn)
    ns: dict = {
        **BUILTINS,
        "_sg_fn": fn,
        "_sg_expect": expect,
        "_sg_SymInt": torch.SymInt,
        "_sg_Error": StrideGuardError,
        "_sg_overlaps_traced": overlaps_traced,
    }
    params, call = _signature_text(sig, ns, kernel=False)
    body = _traced_body(contract, ns)
    src = "\n".join([f"def _sg_traced({params}):", *body, f"    return _sg_fn({call})", ""])
    return _compile(src, ns, "_sg_traced", contract.func_name + " traced"), src
