"""Compile a contract into a per-call check, and explain failures.

Two halves with one meaning:

* ``explain(contract, values)`` walks the contract slowly and returns every violation with its
  message. It is the ground truth.
* ``generate(...)`` writes, once per decorated function, Python source whose checks are a
  *conservative detector*: straight-line attribute reads and integer comparisons that flag
  every call ``explain`` would reject (and, rarely, a harmless one, e.g. an inner stride of a
  tensor with no elements). A flag hands the call to ``explain``, which raises or warns. So the
  common, valid call pays only for the reads; messages are built only on the failure path.

Nothing here imports torch: tensors are read through ``.shape``, ``.stride()``, ``.dtype``,
``.device`` and ``.is_contiguous()``, all of which are metadata (no device sync, no
allocation of tensors; safe during CUDA-graph capture and traceable by ``torch.compile``).
"""

from __future__ import annotations

import inspect
import linecache
import logging
import numbers
import threading
from dataclasses import dataclass

from stridecheck.guard.spec import ArgRule, Contract, StrideGuardError

log = logging.getLogger("stridecheck.guard")


@dataclass(frozen=True, slots=True)
class Violation:
    key: tuple  # stable identity of the failing check, for warn-once
    message: str


# The builtins generated code calls, under names no parameter can take (``_sg_`` is reserved):
# a launcher may well have a parameter named ``min`` or ``len``, which would shadow them.
BUILTINS = {"_sg_len": len, "_sg_min": min, "_sg_isinstance": isinstance, "_sg_int": int}


class _Flag(Exception):
    """Raised by generated code on a suspect call; never escapes the wrapper."""


def overlaps(shape, strides) -> bool:
    """True if two elements of a view may share memory (cheap sufficient test).

    Dims of size > 1 sorted by stride; each stride must be at least the extent (max offset + 1)
    of the dims inside it. This is the test behind PyTorch's "non-overlapping and dense" layout
    check (``TensorImpl::compute_non_overlapping_and_dense`` sorts dims by stride and requires
    each stride to *equal* the inner extent), relaxed to ``>=`` so that gaps (padding, slices)
    are allowed. Exact for every layout that ``torch.empty(...).permute(...)[slices]`` can make;
    it may call an exotic non-overlapping interleaving overlapping (then the fix is a copy).
    Exact overlap detection is NP-hard in general (NumPy's ``may_share_memory`` solves a bounded
    integer program). A view with no elements never overlaps.

    Args:
        shape, strides: sequences of ints (or symbolic sizes), in elements.
    """
    dims = []
    for sz, st in zip(shape, strides):
        if sz == 0:
            return False
        if sz > 1:
            dims.append((st, sz))
    # Selection order instead of sorted(): torch.compile cannot sort symbolic sizes, and there
    # are only a handful of dims.
    extent = 1
    while dims:
        k = 0
        for j in range(1, len(dims)):
            if dims[j][0] < dims[k][0]:
                k = j
        st, sz = dims.pop(k)
        if st < extent:
            return True
        extent += st * (sz - 1)
    return False


# ----------------------------------------------------------------------------- explain


def _shape(x):
    return tuple(int(s) for s in x.shape)


def _strides(x):
    return tuple(int(s) for s in x.stride())


def _dt(d) -> str:
    return str(d).replace("torch.", "")


def _is_int(x) -> bool:
    # numbers.Integral: Python and NumPy integers (and bool, an int, as the fast detector's
    # isinstance(x, int) reads it); SymInt: a size traced by torch.compile.
    return isinstance(x, numbers.Integral) or type(x).__name__ == "SymInt"


def _describe(x) -> str:
    """One line naming a value for a message: type and shape where it has one, else a short repr."""
    shape = getattr(x, "shape", None)
    if shape is not None:
        try:
            return f"{type(x).__name__} of shape {list(int(s) for s in shape)}"
        except Exception:  # noqa: BLE001 - a foreign object's shape: fall back to the repr
            pass
    text = " ".join(repr(x).split())
    return f"{type(x).__name__} {text[:60]}"


def _want_shape(rule: ArgRule, shape: tuple) -> list:
    """``shape`` with the spec's fixed sizes put in: what the message asks for."""
    want = list(shape)
    first = len(shape) - len(rule.dims)
    for k, dim in enumerate(rule.dims):
        if dim.kind == "fixed":
            want[first + k] = dim.value
    return want


def explain(contract: Contract, values: dict) -> list[Violation]:
    """Every violation of ``contract`` by the call's argument ``values`` (name -> value)."""
    fn = contract.func_name
    out: list[Violation] = []
    bound: dict[str, tuple[int, str]] = {}  # name -> (size, "logits dim 1")
    deferred: list[tuple[ArgRule, int, object, int]] = []  # (rule, dim index, Dim, actual)
    device = None  # (device, arg name)
    metas: dict[str, tuple[tuple, tuple]] = {}

    def bind(name: str, size: int, where: str, rule: ArgRule, d: int | None) -> None:
        if name not in bound:
            bound[name] = (size, where)
            return
        want, src = bound[name]
        if size != want:
            what = f"{rule.name} dim {d}" if d is not None else rule.name
            out.append(
                Violation(
                    (rule.name, "size", d),
                    f"{fn}: {what} is {size} but must be {name} = {want} ({name} bound by {src}); "
                    f"pass arguments whose sizes agree, as the spec {rule.spec_text!r} says",
                )
            )

    for rule in contract.rules:
        x = values.get(rule.name)
        if x is None:
            if rule.required:
                out.append(Violation((rule.name, "required"), f"{fn}: {rule.name} is None but is required by the guard; pass it"))
            continue
        if rule.kind == "stride":
            continue  # checked below, once every tensor has been read
        if rule.kind == "auto" and _is_int(x):
            dim = rule.dims[0]
            size = int(x)
            if dim.kind == "name":
                bind(dim.name, size, f"the integer argument {rule.name}", rule, None)
            elif dim.kind == "fixed" and size != dim.value:
                out.append(
                    Violation(
                        (rule.name, "fixed", None),
                        f"{fn}: {rule.name} is {size} but must be {dim.value}, as the spec {rule.spec_text!r} says; pass {dim.value}",
                    )
                )
            elif dim.kind == "min_fixed" and size < dim.value:
                out.append(
                    Violation(
                        (rule.name, "min", None),
                        f"{fn}: {rule.name} is {size} but must be >= {dim.value}, as the spec {rule.spec_text!r} says; "
                        f"pass at least {dim.value}",
                    )
                )
            elif dim.kind == "min_name":
                deferred.append((rule, None, dim, size))
            continue
        try:
            shape, strides = _shape(x), _strides(x)
        except Exception:
            out.append(
                Violation(
                    (rule.name, "type"),
                    f"{fn}: {rule.name} must be a tensor of dims {rule.spec_text!r}, got {_describe(x)}; "
                    "pass a torch.Tensor",
                )
            )
            continue
        metas[rule.name] = (shape, strides)
        nd, n = len(shape), len(rule.dims)
        if (nd != n and not rule.ellipsis) or nd < n:
            need = f"at least {n}" if rule.ellipsis else f"{n}"
            out.append(
                Violation(
                    (rule.name, "ndim"),
                    f"{fn}: {rule.name} has {nd} dims (shape {list(shape)}) but the spec {rule.spec_text!r} needs {need}; "
                    f"pass a {need}-dim tensor",
                )
            )
            continue
        first = nd - n
        for k, dim in enumerate(rule.dims):
            d = first + k
            size = shape[d]
            if dim.kind == "name":
                bind(dim.name, size, f"{rule.name} dim {d}", rule, d)
            elif dim.kind == "fixed" and size != dim.value:
                out.append(
                    Violation(
                        (rule.name, "fixed", d),
                        f"{fn}: {rule.name} dim {d} is {size} but must be {dim.value}, as the spec {rule.spec_text!r} "
                        f"says; pass a tensor of shape {_want_shape(rule, shape)}",
                    )
                )
            elif dim.kind == "min_fixed" and size < dim.value:
                out.append(
                    Violation(
                        (rule.name, "min", d),
                        f"{fn}: {rule.name} dim {d} is {size} but must be >= {dim.value}, as the spec "
                        f"{rule.spec_text!r} says; allocate {rule.name} at least {dim.value} wide along dim {d}",
                    )
                )
            elif dim.kind == "min_name":
                deferred.append((rule, d, dim, size))
        empty = 0 in shape  # no element: strides are irrelevant
        # A written view whose elements share memory first: its fix (a tensor of its own) also
        # mends an expanded last dim, where the inner-stride fix (inner_stride=None) would not.
        if rule.writes and overlaps(shape, strides):
            bad = next(((d, sz, st) for d, (sz, st) in enumerate(zip(shape, strides)) if st == 0 and sz > 1), None)
            why = (
                f"dim {bad[0]} has stride 0 and size {bad[1]} (an expanded view)"
                if bad
                else f"its strides {list(strides)} make dims of shape {list(shape)} overlap"
            )
            out.append(
                Violation(
                    (rule.name, "overlap"),
                    f"{fn}: {rule.name} is written but two of its elements share memory: {why}; concurrent programs "
                    f"would race on the same address — allocate {rule.name} with torch.empty(...) so that each element "
                    f"has memory of its own",
                )
            )
        if not empty and rule.inner_stride is not None and nd >= 1 and shape[-1] > 1 and strides[-1] != rule.inner_stride:
            # A written tensor's copy would take the kernel's writes: never advise one for it.
            fix = (
                f"allocate {rule.name} with unit inner stride (torch.empty(...)) and copy the result where it belongs "
                f"after the launch"
                if rule.writes
                else f"pass {rule.name}.contiguous() (or a view with unit inner stride)"
            )
            out.append(
                Violation(
                    (rule.name, "inner_stride"),
                    f"{fn}: {rule.name} dim {nd - 1} (the last) has stride {strides[-1]} but must have stride "
                    f"{rule.inner_stride}: the kernel addresses it as `ptr + offs`; {fix}, or declare "
                    f"Tensor(..., inner_stride=None) if the kernel steps that dim by its stride",
                )
            )
        for d, (sz, st) in enumerate(zip(shape, strides)):
            if st < 0 and sz > 1 and not empty:
                out.append(
                    Violation(
                        (rule.name, "negative_stride", d),
                        f"{fn}: {rule.name} dim {d} has negative stride {st}; pass a copy with non-negative strides",
                    )
                )
        if rule.dtypes is not None and x.dtype not in rule.dtypes:
            want = " or ".join(_dt(d) for d in rule.dtypes)
            out.append(
                Violation((rule.name, "dtype"), f"{fn}: {rule.name} has dtype {_dt(x.dtype)} but must be {want}; cast it (.to(...))")
            )
        if device is None:
            device = (x.device, rule.name)
        elif x.device != device[0]:
            out.append(
                Violation(
                    (rule.name, "device"),
                    f"{fn}: {rule.name} is on {x.device} but {device[1]} is on {device[0]}; move all tensors to one device",
                )
            )
    for rule, d, dim, size in deferred:
        if dim.name not in bound:
            continue  # no argument of this call bound it (all its binders were None)
        want, src = bound[dim.name]
        if size < want:
            what = f"{rule.name} dim {d}" if d is not None else rule.name
            out.append(
                Violation(
                    (rule.name, "min", d),
                    f"{fn}: {what} is {size} but must be >= {dim.name} = {want} ({dim.name} bound by {src}); "
                    f"the {rule.name} would be truncated — allocate it at least as wide as {src}",
                )
            )
    for rule in contract.rules:
        if rule.kind != "stride":
            continue
        x = values.get(rule.name)
        tname, d = rule.stride_of
        t = values.get(tname)
        if x is None or t is None:
            continue
        try:
            shape, strides = metas.get(tname) or (_shape(t), _strides(t))
            actual, size = strides[d], shape[d]
        except Exception:
            out.append(
                Violation(
                    (rule.name, "stride_of"),
                    f"{fn}: {rule.name} claims {tname}.stride({d}), which {tname} does not have "
                    f"({_describe(t)}); pass a tensor with that dim as {tname}",
                )
            )
            continue
        if x != actual and size > 1:
            out.append(
                Violation(
                    (rule.name, "stride_arg"),
                    f"{fn}: {rule.name} is {x} but {tname}.stride({d}) is {actual}; pass {tname}.stride({d})",
                )
            )
    return out


class Reporter:
    """The failure path: raise the first violation, or (warn mode) log each once.

    ``explain(contract, values) -> list[Violation]`` is the slow checker that words the messages:
    :func:`explain` for spec contracts, :func:`stridecheck.guard.layout.check_launch` for derived ones."""

    def __init__(self, contract, mode: str, explain=explain) -> None:
        self.contract = contract
        self.mode = mode
        self.explain = explain
        self.warned: set = set()
        self._lock = threading.Lock()

    def __call__(self, values: dict) -> None:
        violations = self.explain(self.contract, values)
        if not violations:
            return
        if self.mode == "warn":
            warn_once(self, violations)
            return
        raise StrideGuardError(violations[0].message) from None


def warn_once(reporter, violations: list[Violation]) -> None:
    """Log each violation whose key ``reporter`` has not logged yet, once even under threads.

    The test and the insertion are one step under the reporter's lock (launchers are called
    from several threads: data loaders, serving workers); the logging runs outside it.
    """
    new = []
    with reporter._lock:
        for v in violations:
            if v.key not in reporter.warned:
                reporter.warned.add(v.key)
                new.append(v)
    for v in new:
        log.warning("%s", v.message)


# ----------------------------------------------------------------------------- generate


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)


def _names_used_twice(contract: Contract) -> list[str]:
    """The dimension names the generated checks must track: a name used once constrains nothing."""
    uses: dict[str, int] = {}
    for r in contract.rules:
        for d in r.dims:
            if d.name is not None:
                uses[d.name] = uses.get(d.name, 0) + 1
    return sorted(n for n, c in uses.items() if c > 1)


def _start_body(contract: Contract, depth: int) -> tuple[_Writer, list[str], int]:
    """A writer at ``depth`` holding the locals both generated bodies start with: one
    ``_sg_n_<name>`` per tracked dimension name, and ``_sg_dev`` when more than one tensor must
    share a device. Returns the writer, the tracked names and the number of tensor rules."""
    w = _Writer()
    w.depth = depth
    names = _names_used_twice(contract)
    for n in names:
        w(f"_sg_n_{n} = None")
    n_tensors = sum(1 for r in contract.rules if r.kind in ("tensor", "auto"))
    if n_tensors > 1:
        w("_sg_dev = None")
    return w, names, n_tensors


def _check_body(contract: Contract, ns: dict) -> list[str]:
    """Source lines (indented for a function body) of the fast detector; raise _sg_Flag on a suspect.

    Names are tracked statically through the signature order: "bound" (every path that reaches
    here bound it), "maybe" (some path did: test for None first), absent (never: bind now).
    The common device is tracked the same way under the key "<device>".
    """
    w, names, n_tensors = _start_body(contract, depth=2)
    state: dict[str, str] = {}
    deferred: list[str] = []
    tensor_vars: dict[str, str] = {}  # arg -> its strides variable (only for kind "tensor")

    def bind(key: str, var: str, expr: str) -> None:
        st = state.get(key)
        if st is None:
            w(f"{var} = {expr}")
        elif st == "bound":
            w(f"if {expr} != {var}: raise _sg_Flag")
        else:
            w(f"if {var} is None: {var} = {expr}")
            w(f"elif {expr} != {var}: raise _sg_Flag")
        state[key] = "bound"

    def size_check(dim, expr: str, guard: str) -> None:
        if dim.kind == "name":
            if dim.name in names:
                bind(dim.name, f"_sg_n_{dim.name}", expr)
        elif dim.kind == "fixed":
            w(f"if {expr} != {dim.value}: raise _sg_Flag")
        elif dim.kind == "min_fixed":
            w(f"if {expr} < {dim.value}: raise _sg_Flag")
        elif dim.kind == "min_name":
            v = f"_sg_n_{dim.name}"
            if state.get(dim.name) == "bound":
                w(f"if {expr} < {v}: raise _sg_Flag")
            else:
                deferred.append(f"if {guard} and {v} is not None and {expr} < {v}: raise _sg_Flag")

    def merge(*branches: dict) -> dict:
        keys = set().union(*branches)
        out = {}
        for k in keys:
            vals = [b.get(k) for b in branches]
            out[k] = "bound" if all(v == "bound" for v in vals) else "maybe"
        return out

    def tensor_checks(i: int, rule: ArgRule, guard: str) -> None:
        a = rule.name
        s, t = f"_sg_s{i}", f"_sg_t{i}"
        w(f"{s} = {a}.shape")
        w(f"{t} = {a}.stride()")
        n = len(rule.dims)
        if rule.ellipsis:
            w(f"if _sg_len({s}) < {n}: raise _sg_Flag")
            idx = [f"{k - n}" for k in range(n)]
        else:
            w(f"if _sg_len({s}) != {n}: raise _sg_Flag")
            idx = [f"{k}" for k in range(n)]
        for k, dim in enumerate(rule.dims):
            size_check(dim, f"{s}[{idx[k]}]", guard)
        if rule.inner_stride is not None and (n >= 1 or rule.ellipsis):
            if n == 0:  # only '...': ndim may be 0
                w(f"if _sg_len({s}) and {s}[-1] > 1 and {t}[-1] != {rule.inner_stride}: raise _sg_Flag")
            else:
                w(f"if {s}[-1] > 1 and {t}[-1] != {rule.inner_stride}: raise _sg_Flag")
        if rule.ellipsis:
            w(f"if {t} and _sg_min({t}) < 0: raise _sg_Flag")
        elif n:
            w("if " + " or ".join(f"{t}[{k}] < 0" for k in range(n)) + ": raise _sg_Flag")
        if rule.writes:
            if n == 1 and not rule.ellipsis:
                w(f"if {s}[0] > 1 and {t}[0] == 0: raise _sg_Flag")
            else:
                w(f"if not {a}.is_contiguous() and _sg_overlaps({s}, {t}): raise _sg_Flag")
        if rule.dtypes is not None:
            ns[f"_sg_dt{i}"] = rule.dtypes if len(rule.dtypes) > 1 else rule.dtypes[0]
            op = "not in" if len(rule.dtypes) > 1 else "is not"
            w(f"if {a}.dtype {op} _sg_dt{i}: raise _sg_Flag")
        if n_tensors > 1:
            bind("<device>", "_sg_dev", f"{a}.device")  # not an identifier: no dim name can collide

    for i, rule in enumerate(contract.rules):
        a = rule.name
        if rule.kind == "stride":
            continue
        before = dict(state)
        if rule.required:
            w(f"if {a} is None: raise _sg_Flag")
        else:
            w(f"if {a} is not None:")
            w.depth += 1
        if rule.kind == "auto":
            w(f"if _sg_isinstance({a}, _sg_int):")
            w.depth += 1
            mark = len(w.lines)
            size_check(rule.dims[0], a, f"{a} is not None and _sg_isinstance({a}, _sg_int)")
            if len(w.lines) == mark:
                w("pass")
            int_state = state
            state = dict(before)
            w.depth -= 1
            w("else:")
            w.depth += 1
            tensor_checks(i, rule, f"{a} is not None and not _sg_isinstance({a}, _sg_int)")
            w.depth -= 1
            state = merge(int_state, state)
        else:
            tensor_checks(i, rule, f"{a} is not None")
            tensor_vars[a] = f"_sg_t{i}"
        if not rule.required:
            w.depth -= 1
            state = merge(before, state) if before else {k: "maybe" for k in state}
            for k in before:
                if before[k] == "bound":
                    state[k] = "bound"
    for line in deferred:
        w(line)
    for rule in contract.rules:
        if rule.kind != "stride":
            continue
        tname, d = rule.stride_of
        read = f"{tensor_vars[tname]}[{d}]" if tname in tensor_vars else f"{tname}.stride({d})"
        if rule.required:
            w(f"if {rule.name} is None: raise _sg_Flag")
        w(f"if {rule.name} is not None and {tname} is not None and {rule.name} != {read}: raise _sg_Flag")
    return w.lines


def _signature_text(sig: inspect.Signature, ns: dict, *, kernel: bool) -> tuple[str, str]:
    """(parameter list, call argument list) re-creating ``sig``; defaults go into ``ns``."""
    params, call = [], []
    seen_star = False
    posonly_done = False
    P = inspect.Parameter
    for p in sig.parameters.values():
        if p.kind is P.POSITIONAL_ONLY:
            pass
        elif not posonly_done and any(q.kind is P.POSITIONAL_ONLY for q in sig.parameters.values()):
            params.append("/")
            posonly_done = True
        if p.kind is P.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            call.append(f"*{p.name}")
            seen_star = True
            continue
        if p.kind is P.VAR_KEYWORD:
            params.append(f"**{p.name}")
            call.append(f"**{p.name}")
            continue
        if p.kind is P.KEYWORD_ONLY and not seen_star:
            params.append("*")
            seen_star = True
        text = p.name
        if p.default is not P.empty:
            ns[f"_sg_d_{p.name}"] = p.default
            text += f"=_sg_d_{p.name}"
        elif kernel:
            text += "=None"
        params.append(text)
        call.append(f"{p.name}={p.name}" if p.kind is P.KEYWORD_ONLY else p.name)
    if posonly_done is False and any(q.kind is P.POSITIONAL_ONLY for q in sig.parameters.values()):
        params.append("/")
    if kernel and not any(p.kind is P.VAR_KEYWORD for p in sig.parameters.values()):
        params.append("**_sg_launch_options")  # num_warps=, num_stages=, grid options of a launch
    return ", ".join(params), ", ".join(call)


_counter = [0]


def _compile(src: str, ns: dict, name: str, fname: str):
    _counter[0] += 1
    filename = f"<stride_guard {fname} #{_counter[0]}>"
    # Keep the source for tracebacks and for torch.compile's frame inspection.
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)
    return ns[name]


def _values_text(contract: Contract) -> str:
    names = [r.name for r in contract.rules]
    for r in contract.rules:
        if r.stride_of and r.stride_of[0] not in names:
            names.append(r.stride_of[0])
    return "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"


def generate_wrapper(fn, contract: Contract, reporter: Reporter):
    """A function with ``fn``'s signature that checks, then returns ``fn(...)``.

    For a coroutine function the wrapper is one too (``async def``, awaiting ``fn``), so that
    ``inspect.iscoroutinefunction`` and the frameworks that ask it still see a coroutine
    function; its checks run when the coroutine starts, before ``fn``'s body, as ``fn``'s own
    would.
    """
    sig = inspect.signature(fn)
    ns: dict = {**BUILTINS, "_sg_fn": fn, "_sg_Flag": _Flag, "_sg_report": reporter, "_sg_overlaps": overlaps}
    params, call = _signature_text(sig, ns, kernel=False)
    body = _check_body(contract, ns)
    coroutine = inspect.iscoroutinefunction(fn)
    src = "\n".join(
        [
            f"{'async ' if coroutine else ''}def _sg_wrapper({params}):",
            "    try:",
            *(body or ["        pass"]),
            "    except Exception:",
            f"        _sg_report({_values_text(contract)})",
            f"    return {'await ' if coroutine else ''}_sg_fn({call})",
            "",
        ]
    )
    return _compile(src, ns, "_sg_wrapper", contract.func_name), src


def generate_kernel_check(pyfn, contract: Contract, reporter: Reporter):
    """A function taking a kernel launch's arguments (and launch options) that only checks."""
    sig = inspect.signature(pyfn)
    ns: dict = {**BUILTINS, "_sg_Flag": _Flag, "_sg_report": reporter, "_sg_overlaps": overlaps}
    params, _ = _signature_text(sig, ns, kernel=True)
    body = _check_body(contract, ns)
    src = "\n".join(
        [
            f"def _sg_check({params}):",
            "    try:",
            *(body or ["        pass"]),
            "    except Exception:",
            f"        _sg_report({_values_text(contract)})",
            "",
        ]
    )
    return _compile(src, ns, "_sg_check", contract.func_name), src
