"""pytest plugin: bare ``@stride_guard`` on every Triton kernel a library launches, under its own tests.

Loaded with ``-p guard_peer_plugin`` (``benchmarks/`` on ``PYTHONPATH``) before the library is
imported. ``GUARD_PEER_MODE``:

* ``off`` — patches nothing; records each test's outcome (the baseline);
* ``raise`` / ``warn`` — every launch of a ``@triton.jit`` function whose module starts with
  ``GUARD_PEER_PREFIX`` first runs the check of ``stride_guard(kernel)``, exactly what a
  ``GuardedKernel`` runs before ``kernel[grid](...)``. ``STRIDECHECK_GUARD`` is set to the mode.

Where the check sits: ``JITFunction.run`` (``InterpretedFunction.run`` under
``TRITON_INTERPRET=1``), the method ``kernel[grid](...)`` ends in, and what ``Autotuner.run`` /
``Heuristics.run`` call with the chosen config's constexprs: the place ``@stride_guard`` right
above ``@triton.jit`` takes, seeing what it would see. Device helpers are never ``run``.

Records, JSON lines under ``GUARD_PEER_OUT``: ``outcomes.jsonl`` (one line per test, from the
xdist controller or the only process), ``refusals-<worker>.jsonl`` (each refusal or warning:
test, kernel, message, the launch's tensor layouts), ``launched-<worker>.jsonl`` (per test, the
guarded launches it made), ``kernels-<worker>.json`` (per kernel: launches, contract size,
derivation errors). ``GUARD_PEER_ALLOW`` (a file of test ids) and
``GUARD_PEER_CAP`` (``"default=60;test_x.py=8"``: at most that many tests per file, taken evenly
through its collection order) select the tests.
"""

from __future__ import annotations

import json
import logging
import os
import threading

MODE = os.environ.get("GUARD_PEER_MODE", "off")
OUT = os.environ.get("GUARD_PEER_OUT", "")
PREFIX = os.environ.get("GUARD_PEER_PREFIX", "liger_kernel")
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
_LOCK = threading.Lock()
KERNELS: dict[str, dict] = {}
LAUNCHES: dict[str, int] = {}  # test -> guarded launches it made (this process)
_UNSET = object()


def _write(name: str, record: dict) -> None:
    if not OUT:
        return
    os.makedirs(OUT, exist_ok=True)
    with _LOCK, open(os.path.join(OUT, name), "a") as f:
        f.write(json.dumps(record, default=str) + "\n")


def _test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" (", 1)[0]


def _layout(v):
    if hasattr(v, "stride") and hasattr(v, "shape"):
        try:
            return {"shape": list(v.shape), "stride": list(v.stride()), "dtype": str(v.dtype)}
        except Exception:  # noqa: BLE001 - a foreign object: its type is enough
            return type(v).__name__
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    return type(v).__name__


def _name(jit) -> str:
    fn = getattr(jit, "fn", None)
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"


def _guard_of(jit):
    """The check ``stride_guard(jit)`` runs per launch, built once per kernel (None: not guarded)."""
    check = jit.__dict__.get("_guard_peer_check", _UNSET)
    if check is not _UNSET:
        return check
    from stridecheck import stride_guard

    name = _name(jit)
    check = None
    rec = KERNELS.setdefault(name, {"kernel": name, "launches": 0})
    if (getattr(jit.fn, "__module__", "") or "").startswith(PREFIX):
        try:
            guarded = stride_guard(jit)
            check = guarded._check
            rec["pointers"] = len(guarded.contract.pointers)
            rec["accesses"] = sum(len(p.accesses) for p in guarded.contract.pointers)
        except Exception as exc:  # noqa: BLE001 - a kernel the guard cannot derive: recorded, launched unguarded
            rec["error"] = f"{type(exc).__name__}: {exc}"
    else:
        KERNELS.pop(name, None)
    jit.__dict__["_guard_peer_check"] = check
    return check


def _patched(run):
    def guarded_run(self, *args, **kwargs):
        check = _guard_of(self)
        if check is not None:
            KERNELS[_name(self)]["launches"] += 1
            test = _test()
            LAUNCHES[test] = LAUNCHES.get(test, 0) + 1
            launch = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
            try:
                check(*args, **launch)
            except Exception as exc:
                from stridecheck import StrideGuardError

                values = dict(zip(self.arg_names, args))
                values.update(launch)
                _write(
                    f"refusals-{WORKER}.jsonl",
                    {
                        "mode": MODE,
                        "test": _test(),
                        "kernel": _name(self),
                        "refused": isinstance(exc, StrideGuardError),
                        "message": f"{type(exc).__name__}: {exc}",
                        "values": {k: _layout(v) for k, v in values.items()},
                    },
                )
                raise
        return run(self, *args, **kwargs)

    guarded_run.__wrapped__ = run
    return guarded_run


class _Warnings(logging.Handler):
    def emit(self, record):
        _write(f"refusals-{WORKER}.jsonl", {"mode": MODE, "test": _test(), "kernel": None, "refused": True,
                                             "message": record.getMessage()})


def install() -> None:
    if MODE == "off":
        return
    os.environ["STRIDECHECK_GUARD"] = MODE
    import triton.runtime.jit as jit

    classes = [jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        if "run" in cls.__dict__ and not hasattr(cls.__dict__["run"], "__wrapped__"):
            cls.run = _patched(cls.__dict__["run"])
    logging.getLogger("stridecheck.guard").addHandler(_Warnings())


def dump() -> None:
    if OUT and MODE != "off":
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, f"kernels-{WORKER}.json"), "w") as f:
            json.dump(list(KERNELS.values()), f)


def cpu_shims() -> None:
    """On a machine without CUDA (``GUARD_PEER_CPU=1``, running through TRITON_INTERPRET=1):
    libraries that ask the device's compute capability while importing (attorch sizes its
    pipeline stages by it) get an Ampere answer. Nothing the guard checks depends on it.
    The interpreter has no timer for the autotuner: every config times the same, so the first
    one is kept."""
    import torch
    import triton.runtime.autotuner as autotuner

    if not torch.cuda.is_available():
        torch.cuda.get_device_capability = lambda *a, **k: (8, 0)
        autotuner.Autotuner._bench = lambda self, *a, **k: [1.0, 1.0, 1.0]


if os.environ.get("GUARD_PEER_CPU") == "1":
    cpu_shims()
if __name__ != "__main__":
    install()


# ----------------------------------------------------------------------------- pytest hooks


def _caps() -> dict[str, int]:
    caps = {}
    for part in os.environ.get("GUARD_PEER_CAP", "").split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            caps[k.strip()] = int(v)
    return caps


def pytest_collection_modifyitems(session, config, items):
    if os.environ.get("GUARD_PEER_CPU") == "1":
        # Test helpers that default to device="cuda" make their tensors on the CPU instead.
        import sys

        for mod in list(sys.modules.values()):
            for fn in vars(mod).values() if mod is not None and (getattr(mod, "__name__", "") or "").startswith("tests") else ():
                d = getattr(fn, "__defaults__", None)
                if d and "cuda" in d:
                    fn.__defaults__ = tuple("cpu" if x == "cuda" else x for x in d)
    keep = list(items)
    allow = os.environ.get("GUARD_PEER_ALLOW")
    if allow and os.path.exists(allow):
        with open(allow) as f:
            ids = {line.strip() for line in f if line.strip()}
        keep = [i for i in keep if i.nodeid in ids]
    caps = _caps()
    if caps:
        by_file: dict[str, list] = {}
        for it in keep:
            by_file.setdefault(it.nodeid.split("::", 1)[0], []).append(it)
        keep = []
        for path, its in by_file.items():
            cap = caps.get(os.path.basename(path), caps.get("default"))
            if cap is None or len(its) <= cap:
                keep += its
            else:
                keep += [its[(k * len(its)) // cap] for k in range(cap)]
    chosen = {id(i) for i in keep}
    dropped = [i for i in items if id(i) not in chosen]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if id(i) in chosen]


_STATE: dict[str, dict] = {}


def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller writes the outcomes
    st = _STATE.setdefault(report.nodeid, {"outcome": "passed", "message": "", "duration": 0.0})
    st["duration"] += report.duration
    if report.failed:
        st["outcome"] = "failed" if report.when == "call" else "error"
        crash = getattr(report.longrepr, "reprcrash", None)
        st["message"] = str(crash.message if crash is not None else report.longrepr)[-500:]
    elif report.skipped and st["outcome"] == "passed":
        st["outcome"] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    if report.when == "teardown":
        _write("outcomes.jsonl", {"mode": MODE, "test": report.nodeid, **_STATE.pop(report.nodeid)})


def pytest_runtest_teardown(item, nextitem):
    if MODE != "off":
        n = sum(v for k, v in LAUNCHES.items() if k.startswith(item.nodeid))
        _write(f"launched-{WORKER}.jsonl", {"test": item.nodeid, "launches": n})
        LAUNCHES.clear()
    if nextitem is None:
        dump()


def pytest_sessionfinish(session, exitstatus):
    dump()
