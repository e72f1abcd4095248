"""Guarded Triton kernels: :class:`GuardedKernel`, and the per-launch check of a derived contract.

The per-launch check is Python source written once per kernel (``_sg_check``, with the
kernel's own signature), in three steps:

1. **The signature.** It reads, for every tensor the contract judges, ``.shape``, its strides
   (``True`` for a contiguous tensor: no check reads what sets such a tensor apart from another
   of its shape, the strides of its size-1 dims), its device when there are two or more (the
   index, an int; the device itself where the index is -1, off CUDA-like devices), and the value
   of every other parameter a check reads (steps, store bounds, branch conditions; constexprs
   included; a ``@triton.heuristics`` value as Triton computes it at the launch), into one tuple.
2. **The table.** That tuple keys a dict of verdicts (a verdict is a tuple of violations, empty
   for a valid launch). A repeated signature costs the reads and one dict lookup. A layout found
   there is also kept for a comparison in C++ (torch's ``TensorGuards``, see
   :func:`_tensor_guards`) under the launch's other values; from then on the check starts with
   that comparison and skips the reads (:func:`generate_derived_check`).
3. **A new signature** first runs a straight-line test that can only accept: each step of each
   access equals the stride of a distinct dim (the unit step the last dim's, 1), dims no item
   steps are packed (the tensor is contiguous), a masked store fits the last dim, written tensors
   do not overlap, one device. When it cannot accept, the verdict is
   :func:`stridecheck.guard.check.check_launch`'s, which also reads the autotuner's configs and
   the heuristics' values. Either way the verdict goes into the table.

So a verdict in the table is always the one :func:`check_launch` gives (the straight-line test
accepts only launches it accepts: ``tests/guard/test_derived_table.py`` checks that on random
layouts), and a refusal's message is built when the launch is first seen.
"""

from __future__ import annotations

import functools
import inspect
import os

from stridecheck.guard.check import MISSING, DerivedReporter, check_launch
from stridecheck.guard.spec import StrideGuardError
from stridecheck.guard.spec_check import BUILTINS, _compile, _Flag, overlaps

# Verdicts kept per kernel; past it the table starts over (a process that keeps making new
# layouts pays the straight-line test again, never unbounded memory).
TABLE_SIZE = 4096
# Layouts compared in C++ per set of the launch's other values (see generate_derived_check).
FAST_PER_KEY = 4


def is_triton_kernel(obj) -> bool:
    # No triton import: a JITFunction / Autotuner / Heuristics is a triton object that launches
    # through `obj[grid](...)` and has `run`.
    mod = type(obj).__module__ or ""
    return mod.startswith("triton") and hasattr(obj, "run") and hasattr(type(obj), "__getitem__")


def python_function(kernel):
    """The plain Python function under a (possibly autotuned) Triton kernel."""
    fn = kernel
    for _ in range(16):
        inner = getattr(fn, "fn", None)
        if inner is None:
            break
        fn = inner
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise StrideGuardError(f"stride_guard: cannot find the Python function under {kernel!r}")
    return fn


class GuardedKernel:
    """A Triton kernel whose launches are checked first; launches like the kernel.

    ``k[grid](*args, **kwargs)`` runs the contract's checks on the launch arguments, then
    ``kernel[grid](*args, **kwargs)``. ``k.run(*args, grid=..., **kwargs)`` is checked too.
    Every other attribute (``fn``, ``cache``, ``arg_names``, ``warmup``...) is the kernel's.
    ``k.contract`` is the contract checked, ``k.kernel`` the wrapped kernel (a guarded kernel,
    when guards are stacked). It pickles and deep-copies by reference (module and name), as a
    function does.
    """

    def __init__(self, kernel, contract, check, source: str) -> None:
        self.kernel = kernel
        self.contract = contract
        self._check = check
        self._source = source
        functools.update_wrapper(self, python_function(kernel), updated=())

    def __getitem__(self, grid):
        check, kernel = self._check, self.kernel

        # What triton's own `kernel[grid]` returns, with the check in front (a closure: the
        # cheapest callable to build and to call, once per launch; one kept per grid would cost
        # less in eager calls, but under torch.compile a dict keyed by the grid makes dynamo guard
        # on, or specialise, the grid's symbolic sizes). The launch itself stays spelled
        # `kernel[grid](...)`: that is the form torch.compile recognises as a Triton launch
        # (calling `kernel.run` would make dynamo trace into Triton's launcher).
        def launch(*args, **kwargs):
            check(*args, **kwargs)
            return kernel[grid](*args, **kwargs)

        return launch

    def run(self, *args, **kwargs):
        self._check(*args, **{k: v for k, v in kwargs.items() if k not in ("grid", "warmup")})
        return self.kernel.run(*args, **kwargs)

    def __getattr__(self, name):
        # Only reached for attributes not found on the wrapper: forward to the kernel. Read
        # through __dict__ so that a half-built object (copy, unpickling) fails cleanly.
        kernel = self.__dict__.get("kernel")
        if kernel is None:
            raise AttributeError(name)
        return getattr(kernel, name)

    def __repr__(self) -> str:
        return f"<stride_guard of {self.kernel!r}>"

    def __reduce__(self):
        # Pickled (and deep-copied) by reference, as a function is: the guard of a module-level
        # kernel is found again under its module and name. Its parts (the generated check, a
        # Triton kernel) do not pickle by value.
        return self.__qualname__


# ----------------------------------------------------------------------------- launch values


def _launch_sources(kernel):
    """The autotuner configs (list of dicts) and heuristics (name -> function of the arguments)
    wrapped around ``kernel``, outermost first."""
    configs, heuristics = [], {}
    obj = kernel
    for _ in range(16):
        if obj is None or not hasattr(obj, "fn"):
            break
        cfgs = getattr(obj, "configs", None)
        if isinstance(cfgs, (list, tuple)) and cfgs and not configs:
            configs = [dict(getattr(c, "kwargs", {}) or {}) for c in cfgs]
        values = getattr(obj, "values", None)
        if isinstance(values, dict) and all(callable(f) for f in values.values()):
            heuristics.update(values)
        obj = obj.fn
    return configs, heuristics


def _full_check(contract, configs, heuristics):
    """The launch path that runs :func:`check_launch` on the launch's values (all parameters)."""
    reads = set(contract.reads())

    def full(values: dict):
        if heuristics:
            # As Triton runs them at each launch: in order, each seeing the arguments the launch
            # passed and the values before it, its value replacing any passed.
            args = {k: v for k, v in values.items() if v is not MISSING}
            for name, f in heuristics.items():
                try:
                    args[name] = values[name] = f(args)
                except Exception:  # noqa: BLE001 - a heuristic that needs more than it gets: unknown
                    args.pop(name, None)
                    values[name] = MISSING
        missing = {n for n in reads if values.get(n, MISSING) is MISSING}
        alternatives = ()
        if missing and configs:
            seen, alts = set(), []
            for cfg in configs:
                alt = {n: cfg[n] for n in missing if n in cfg}
                key = tuple(sorted((k, repr(v)) for k, v in alt.items()))
                if alt and key not in seen:
                    seen.add(key)
                    alts.append(alt)
            alternatives = tuple(alts)
        return check_launch(contract, values, alternatives)

    return full


# ----------------------------------------------------------------------------- generated code


@functools.cache
def _tensor_guards():
    """``build(*tensors)``: a function that tells, in one C++ call, whether the tensors it is
    given have the type, dispatch keys, dtype, device, ``requires_grad``, sizes and strides of
    ``tensors`` (torch's ``torch._C._dynamo.guards.TensorGuards``, with which torch.compile checks
    the inputs of a compiled graph; it keeps no reference to the tensors). Such tensors have the
    layout the verdict was given for (None, missing and repeated arguments included). None where
    this torch lacks it, where it does not answer as expected on a probe, or where
    ``STRIDECHECK_GUARD_TENSOR_GUARDS=0``: then the key read in Python serves alone."""
    if os.environ.get("STRIDECHECK_GUARD_TENSOR_GUARDS", "1") == "0":
        return None
    try:
        import torch
        from torch._C._dynamo.guards import TensorGuards

        if not hasattr(torch.compiler, "substitute_in_graph"):
            # Without it torch.compile traces the check itself (no stand-in, see _provide_standin),
            # and it cannot trace a call of this C++ comparison.
            return None

        # What the comparison cannot take as itself (a None or missing argument; a tensor passed
        # again, in an in-place launch: it expects distinct inputs) stands in as an empty `meta`
        # tensor (no launch passes one) of its own position, and the kept check tests first, by
        # identity, that the launch has the same None, missing and repeated arguments.
        def build(*args):
            tests, tensors, seen, subs = [], list(args), {}, {}
            for i, x in enumerate(args):
                if x is None or x is MISSING:
                    tests.append(f"a{i} is {'None' if x is None else '_M'}")
                else:
                    j = seen.setdefault(id(x), i)
                    if j == i:
                        if not isinstance(x, torch.Tensor):
                            raise TypeError("not a tensor")
                        continue
                    tests.append(f"a{i} is a{j}")
                tensors[i] = subs[f"_s{i}"] = torch.empty((len(tests), i + 1), device="meta")
            check = TensorGuards(
                *tensors,
                dynamic_dims_sizes=[list(t.shape) for t in tensors],
                dynamic_dims_strides=[list(t.stride()) for t in tensors],
            ).check
            if not tests:
                return check
            params = ", ".join(f"a{i}" for i in range(len(args)))
            passed = ", ".join(f"_s{i}" if f"_s{i}" in subs else f"a{i}" for i in range(len(args)))
            src = f"lambda {params}: {' and '.join(tests)} and _g({passed})"
            return eval(src, {"_g": check, "_M": MISSING, **subs})  # noqa: S307 - names and `is` tests only

        a, b = torch.zeros(2, 3), torch.zeros(2, 3)
        same = build(a, b)
        probes = (
            same(a, torch.zeros(2, 3)) is True,
            same(a, torch.zeros(3, 2).t()) is False,  # the strides
            same(a, torch.zeros(2, 4)[:, :3]) is False,  # one stride, the same shape
            same(a, torch.zeros(2, 3, dtype=torch.float64)) is False,
            same(a, torch.zeros(2, 3, device="meta")) is False,
            same(a, None) is False,
            build(a, b, a)(b, a, b) is True,
            build(a, b, a)(a, b, b) is False,
            build(a, None, None)(b, None, None) is True,
            build(a, None)(a, MISSING) is False,
        )
        return build if all(probes) else None
    except Exception:  # noqa: BLE001 - a torch without it, or with another constructor
        return None


def _signature(pyfn, ns: dict) -> str:
    """The kernel's parameter list, every parameter optional (a launch may leave constexprs to
    the autotuner): a missing one is :data:`MISSING`."""
    out = []
    ns["_sg_M"] = MISSING
    for p in inspect.signature(pyfn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise StrideGuardError(f"stride_guard on {pyfn.__name__}: a Triton kernel has no *args / **kwargs")
        if p.default is not p.empty:
            ns[f"_sg_d_{p.name}"] = p.default
            out.append(f"{p.name}=_sg_d_{p.name}")
        else:
            out.append(f"{p.name}=_sg_M")
    out.append("**_sg_launch_options")  # num_warps=, num_stages=, grid options of a launch
    return ", ".join(out)


def _key_parts(contract) -> tuple[list[str], list[str], list[str], list[str]]:
    """(statements reading the tensors when every one is there, the same allowing for ``None``
    or missing ones, elements of the key tuple, those of them that read no tensor)."""
    reads = contract.reads()
    pointers = {p.name: p for p in contract.pointers}
    multi = len(pointers) > 1
    fast, guarded, parts = [], [], []
    devices = []
    for i, name in enumerate(n for n in reads if n in pointers):
        plan = pointers[name]
        s, t, d = f"_sg_s{i}", f"_sg_t{i}", f"_sg_v{i}"
        if plan.descriptor:
            b = f"_sg_b{i}"
            body = [
                f"{b} = {name}.base",
                f"{s} = {b}.shape",
                f"{t} = {b}.stride()",
                f"_sg_ds{i} = tuple({name}.shape)",
                f"_sg_dt{i} = tuple({name}.strides)",
                f"{d} = {b}.get_device()",
                f"if {d} < 0: {d} = {b}.device",
            ]
            none = f"{b} = {s} = {t} = {d} = _sg_ds{i} = _sg_dt{i} = None"
            parts += [s, t, f"_sg_ds{i}", f"_sg_dt{i}"]
        else:
            # A contiguous tensor's strides follow from its shape (but for size-1 dims, whose
            # strides no check reads): `is_contiguous()` is a flag read, `stride()` builds a tuple.
            body = [f"{s} = {name}.shape", f"{t} = {name}.is_contiguous() or {name}.stride()"]
            if multi:
                # A device index is an int (cheaper to read than a torch.device, and to hash); off
                # CUDA-like devices (index -1) the device itself, so that the CPU and `meta` differ.
                body.append(f"{d} = {name}.get_device()")
                body.append(f"if {d} < 0: {d} = {name}.device")
            none = f"{s} = {t} = {d} = None"
            parts += [s, t]
        fast += body
        guarded += [f"if {name} is None or {name} is _sg_M: {none}", "else:", *("    " + x for x in body)]
        devices.append(d)
    if multi and len(devices) > 1:
        # Which devices, as read above: keying on them costs less than comparing them.
        parts += devices
    others = []
    for name in reads:
        if name in pointers:
            continue
        conds = [c for p in contract.pointers for a in p.accesses for c in a.conditions if c.param == name]
        used_otherwise = any(
            name in t.names or t.bound == name for p in contract.pointers for a in p.accesses for t in a.terms
        )
        if conds and not used_otherwise and all(c.test == "none" for c in conds):
            others.append(f"{name} is None")  # a tensor whose presence decides a branch
        else:
            others.append(name)
    return fast, guarded, parts + others, others


def _quick_lines(contract, ns: dict) -> list[str]:
    """Straight-line statements that raise _sg_Flag unless the launch is surely valid (see the
    module docstring); they run on the locals the key's reads left."""
    reads = contract.reads()
    pointers = {p.name: p for p in contract.pointers}
    order = [n for n in reads if n in pointers]
    multi = len(pointers) > 1
    lines = []
    if multi:
        lines.append("_sg_dev = None")
    nc = 0
    for i, name in enumerate(order):
        plan = pointers[name]
        s, t, d = f"_sg_s{i}", f"_sg_t{i}", f"_sg_v{i}"
        lines.append(f"if {s} is not None:")
        body = [] if plan.descriptor else [f"{t} = {name}.stride()"]
        if multi:
            body.append(f"if _sg_dev is None: _sg_dev = {d}")
            body.append(f"elif {d} != _sg_dev: raise _sg_Flag")
        if plan.descriptor:
            body.append(f"if _sg_ds{i} != _sg_tuple({s}) or _sg_dt{i} != _sg_tuple({t}): raise _sg_Flag")
            if plan.descriptor_writes:
                body.append(f"if not _sg_b{i}.is_contiguous() and _sg_overlaps({s}, {t}): raise _sg_Flag")
            lines += ["    " + x for x in body]
            continue
        if any(a.writes for a in plan.accesses):
            body.append(f"if not {name}.is_contiguous() and _sg_overlaps({s}, {t}): raise _sg_Flag")
        for acc in plan.accesses:
            if not acc.terms:
                continue
            inner = []
            unit = [tm for tm in acc.terms if tm.expr == "1" and tm.vector]
            others = [tm for tm in acc.terms if not (tm.expr == "1" and tm.vector)]
            avail = f"{t}[:-1]" if unit else t
            if unit:
                inner.append(f"if {s}[-1] > 1 and {t}[-1] != 1: raise _sg_Flag")
            vals = []
            for k, tm in enumerate(others):
                v = f"_sg_x{k}"
                inner.append(f"{v} = {tm.expr}")
                inner.append(f"if {v} not in {avail}: raise _sg_Flag")
                if unit:
                    inner.append(f"if {v} == 1: raise _sg_Flag")
                vals.append(v)
            for a in range(len(vals)):
                for b in range(a + 1, len(vals)):
                    inner.append(f"if {vals[a]} == {vals[b]}: raise _sg_Flag")
            if others and not acc.opaque and not acc.offsets:
                inner.append(f"if _sg_len({s}) > {len(acc.terms)} and not {name}.is_contiguous(): raise _sg_Flag")
            for tm in unit:
                if tm.bound:
                    inner.append(f"if {tm.bound} > {s}[-1]: raise _sg_Flag")
            if acc.conditions:
                tests = []
                for c in acc.conditions:
                    ns[f"_sg_c{nc}"] = c
                    tests.append(f"_sg_c{nc}.holds({c.param}) is True")
                    body.append(f"if {c.param} is _sg_M: raise _sg_Flag")
                    nc += 1
                body.append("if " + " and ".join(tests) + ":")
                body += ["    " + x for x in inner]
            else:
                body += inner
        lines += ["    " + x for x in (body or ["pass"])]
    return lines


def generate_derived_check(kernel, pyfn, contract, reporter):
    """The per-launch check of a derived contract (see the module docstring): a function taking
    a launch's arguments (and launch options) that returns None or raises / warns."""
    configs, heuristics = _launch_sources(kernel)
    reporter.full = _full_check(contract, configs, heuristics)
    ns: dict = {
        **BUILTINS,
        "_sg_Flag": _Flag,
        "_sg_overlaps": overlaps,
        "_sg_tuple": tuple,
        "_sg_report": reporter,
        "_sg_full": reporter.full,
        "_sg_table": {},
        "_sg_size": TABLE_SIZE,
    }
    sig = _signature(pyfn, ns)
    every = "{" + ", ".join(f"{n!r}: {n}" for n in contract.params) + "}"
    if not contract.pointers:
        src = f"def _sg_check({sig}):\n    return None\n"
        return _compile(src, ns, "_sg_check", contract.func_name), src
    fast, guarded, parts, others = _key_parts(contract)
    # A heuristic's value is a function of any of the arguments, which the key may not hold: the
    # key holds the values themselves, computed as Triton does at each launch (from the arguments
    # the launch passes, by name), in the heuristics' order.
    read = set(contract.reads())
    used = [(n, f) for n, f in heuristics.items() if n in read]
    quick = _quick_lines(contract, ns)
    body = []
    # A layout seen twice is compared from then on in one C++ call (see _tensor_guards) against
    # the layouts kept for the launch's other values, skipping the Python reads of the key. Kept
    # at its second sighting (building the comparison costs more than the key: a layout seen
    # once pays nothing for it), at most FAST_PER_KEY per values and never replaced, so layouts
    # that take turns never rebuild. Not for descriptors (their shape and strides are Python
    # lists) nor heuristics (their values may read anything).
    pointer_names = {p.name for p in contract.pointers}
    tensors = [n for n in contract.reads() if n in pointer_names]
    tg = _tensor_guards() if tensors and not used and not any(p.descriptor for p in contract.pointers) else None
    if tg is not None:
        ns["_sg_tg"] = tg
        ns["_sg_fast"] = {}
        other_key = "(" + "".join(f"{x}, " for x in others) + ")"
        listed = ", ".join(tensors)
        ns["_sg_per_key"] = FAST_PER_KEY
        body += [
            "    _sg_e = _sg_M",
            "    try:",
            f"        _sg_l = _sg_fast.get({other_key}, ())",
            "        for _sg_g, _sg_w in _sg_l:",
            f"            if _sg_g({listed}):",
            "                _sg_e = _sg_w",
            "                break",
            "    except Exception:",
            "        pass",
            "    if _sg_e is not _sg_M:",
            f"        if _sg_e: _sg_report(_sg_e, {every})",
            "        return None",
        ]
    body += ["    try:", "        try:"]
    body += ["            " + x for x in fast]
    body += ["        except Exception:"]  # a None (or missing) tensor: read what is there
    body += ["            " + x for x in guarded]
    if used:
        ns["_sg_names"] = tuple(contract.params)
        ns["_sg_zip"] = zip
        values = "(" + ", ".join(contract.params) + ",)"
        body.append(f"        _sg_a = {{_sg_n: _sg_x for _sg_n, _sg_x in _sg_zip(_sg_names, {values}) if _sg_x is not _sg_M}}")
        for i, (name, f) in enumerate(heuristics.items()):
            ns[f"_sg_h{i}"] = f
            body.append(f"        _sg_a[{name!r}] = _sg_h{i}(_sg_a)")
        # The launch's values from here on (the key, the straight-line test, the full check).
        body += [f"        {name} = _sg_a[{name!r}]" for name in heuristics if name in contract.params]
    body.append("        _sg_k = (" + ", ".join(parts) + ",)")
    body.append("        _sg_v = _sg_table.get(_sg_k, _sg_M)")
    body += [
        "    except Exception:",
        "        _sg_k = None",
        "        _sg_v = _sg_M",
        "    if _sg_v is _sg_M:",
        "        try:",
        "            if _sg_k is None: raise _sg_Flag",
        *("            " + x for x in quick),
        "            _sg_v = ()",
        "        except Exception:",
        f"            _sg_v = _sg_full({every})",
        "        if _sg_k is not None:",
        "            if _sg_len(_sg_table) >= _sg_size: _sg_table.clear()",
        "            _sg_table[_sg_k] = _sg_v",
    ]
    if tg is not None:
        # A launch whose comparison cannot be built (an argument that is no torch.Tensor) marks
        # its values so: raising and catching at every launch would cost more than the key.
        ns["_sg_never"] = ()
        body += [
            "    else:",
            f"        _sg_l = _sg_fast.get({other_key})",
            "        if _sg_l is None:",
            "            if _sg_len(_sg_fast) >= _sg_size: _sg_fast.clear()",
            f"            _sg_l = _sg_fast[{other_key}] = []",
            "        if _sg_l is not _sg_never and _sg_len(_sg_l) < _sg_per_key:",
            "            try:",
            f"                _sg_l.append((_sg_tg({listed}), _sg_v))",
            "            except Exception:",
            f"                _sg_fast[{other_key}] = _sg_never",
        ]
    body += ["    if _sg_v:", f"        _sg_report(_sg_v, {every})"]
    src = "\n".join([f"def _sg_check({sig}):", *body, ""])
    check = _compile(src, ns, "_sg_check", contract.func_name)
    check.__stride_guard_table__ = ns["_sg_table"]
    check.__stride_guard_fast__ = ns.get("_sg_fast")
    check.__stride_guard_full__ = ns["_sg_full"]
    _provide_standin(check, contract, reporter, ns)
    return check, src


def derived_guard(kernel, mode: str):
    """``(contract, check, source)`` of bare ``@stride_guard`` on ``kernel``."""
    from stridecheck.guard.derive import derive_contract

    pyfn = python_function(kernel)
    contract = derive_contract(kernel, pyfn)
    reporter = DerivedReporter(contract, mode)
    check, src = generate_derived_check(kernel, pyfn, contract, reporter)
    return contract, check, src


# ----------------------------------------------------------------------------- torch.compile


def _provide_standin(check, contract, reporter, ns) -> None:
    """Under torch.compile, dynamo traces a stand-in for ``check``: it turns the launch's sizes
    into Python ints (``guard_scalar``: a guard per size, so a new size recompiles) and asks for
    the verdict through a function dynamo runs at trace time (``assume_constant_result``); a
    refusal raises while tracing. Registered once ``torch._dynamo`` is imported."""
    from stridecheck.guard.traced import provide_traced

    def build():
        import torch
        from torch.fx.experimental.symbolic_shapes import guard_scalar

        pointers = {p.name: p for p in contract.pointers}
        reads = contract.reads()
        full = ns["_sg_full"]

        @torch._dynamo.assume_constant_result
        def verdict(key):
            values = dict(key)
            for name, plan in pointers.items():
                v = values.get(name)
                if isinstance(v, tuple):
                    values[name] = _Meta(*v[:3]) if not plan.descriptor else _DescMeta(_Meta(*v[:3]), v[3], v[4])
            found = full({**{n: MISSING for n in contract.params}, **values})
            if found and reporter.mode == "warn":
                reporter(found)
                return ""
            return found[0].message if found else ""

        def ints(xs):
            return tuple([guard_scalar(x) for x in xs])

        # Plain data only: dynamo wraps what the stand-in's closure holds.
        params = tuple(contract.params)
        names = tuple(reads)
        kinds = {name: plan.descriptor for name, plan in pointers.items()}

        def standin(*args, **kwargs):
            bound = dict(zip(params, args))
            bound.update(kwargs)
            key = []
            for name in names:
                v = bound.get(name)
                if name in kinds and v is not None:
                    if kinds[name]:
                        b = v.base
                        v = (ints(b.shape), ints(b.stride()), b.device, ints(v.shape), ints(v.strides))
                    else:
                        v = (ints(v.shape), ints(v.stride()), v.device)
                elif isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool):
                    v = guard_scalar(v)  # a traced int is symbolic under dynamic=True
                key.append((name, v))
            message = verdict(tuple(key))
            if message:
                raise StrideGuardError(message)

        return standin

    provide_traced(check, build, contract.func_name)


class _Meta:
    """A tensor's layout, as the check reads it (``shape``, ``stride()``, ``device``)."""

    __slots__ = ("shape", "_strides", "device")

    def __init__(self, shape, strides, device) -> None:
        self.shape, self._strides, self.device = shape, strides, device

    def stride(self):
        return self._strides


class _DescMeta:
    __slots__ = ("base", "shape", "strides")

    def __init__(self, base, shape, strides) -> None:
        self.base, self.shape, self.strides = base, shape, strides
