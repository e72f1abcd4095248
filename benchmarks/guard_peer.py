"""Bare ``@stride_guard`` on a real library's test suite: does it refuse a valid launch, does it
still refuse a bad one, and what does it add to a launch?

The library's op tests run three ways through ``guard_peer_plugin`` (the guard on every Triton
kernel the library launches): guard off (the baseline), ``raise`` and ``warn`` (a sample). A test
that passes in the baseline and fails in raise mode with a ``StrideGuardError`` is a valid launch
refused; warn mode must log nothing for those tests. A planted bad launch (a library kernel handed
a row-padded tensor with another tensor's row stride) must be refused, and its valid twin
launched. The cost is timed on the library's own launches (repeated layout), plain
``kernel[grid](...)`` against ``stride_guard(kernel)[grid](...)``, in one process.

    python benchmarks/guard_peer.py all --library liger --root .peer/liger \\
        --tests test/transformers --workers 14 --cap "default=40" --record
    python benchmarks/guard_peer.py all --library attorch --root .peer/attorch --cap "default=60" --record

``--record`` writes ``benchmarks/results/guard_peer.{json,md}`` (a run of another library already
recorded there is kept) and appends a line to ``benchmarks/results/history.jsonl``.
Libraries: ``liger`` (Liger-Kernel, its ``test/transformers`` op tests) and ``attorch`` (PyTorch
layers in Triton, its ``tests/`` with ``--subset``); ``--prefix`` names another package's kernels.
"Tests compared" are those the baseline passed that raise mode ran; "with launches" those of them
that launched a guarded kernel; warn mode runs every ``--warn-every``'th of them.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
LIBRARIES = {
    "liger": {"prefix": "liger_kernel", "name": "Liger-Kernel", "src": "src", "tests": "test/transformers", "args": []},
    # attorch's tests take --subset: its small set of shapes (the others return at once).
    "attorch": {"prefix": "attorch", "name": "attorch", "src": ".", "tests": "tests", "args": ["--subset"]},
}


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _env(args, mode: str, out: Path, allow: Path | None = None) -> dict:
    lib = LIBRARIES.get(args.library, {})
    root = Path(args.root).resolve()
    paths = [str(HERE), str(REPO), str(root / lib.get("src", "src")), str(root)]
    # A pytest of its own: nothing of a pytest this runs under (an xdist worker's name) leaks in.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GUARD_PEER_"))}
    env.update(
        PYTHONPATH=os.pathsep.join(paths + [env.get("PYTHONPATH", "")]),
        GUARD_PEER_MODE=mode,
        GUARD_PEER_OUT=str(out),
        GUARD_PEER_PREFIX=args.prefix or lib.get("prefix", ""),
        GUARD_PEER_CAP=args.cap or "",
        PYTHONUNBUFFERED="1",
    )
    if allow is not None:
        env["GUARD_PEER_ALLOW"] = str(allow)
    if args.interpret:
        env["TRITON_INTERPRET"] = "1"
        env["GUARD_PEER_CPU"] = "1"
    return env


def _pytest(args, mode: str, out: Path, workers: int, allow: Path | None = None) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:stridecheck", "-p", "guard_peer_plugin",
        "-o", "addopts=", *(["--timeout", str(args.timeout)] if importlib.util.find_spec("pytest_timeout") else []),
        *(["-n", str(workers)] if workers > 1 else []),
        *LIBRARIES.get(args.library, {}).get("args", []), *args.test_paths,
    ]
    log = open(out / "pytest.log", "w")
    # A session of its own, so that a run past its budget is stopped with its xdist workers.
    return subprocess.Popen(cmd, cwd=args.root, env=_env(args, mode, out, allow), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait(proc: subprocess.Popen, deadline: float | None) -> bool:
    """Wait for ``proc`` until ``deadline`` (time.time()); past it, stop its session. True if it
    finished on its own (the outcomes it wrote so far are compared either way)."""
    try:
        proc.wait(timeout=None if deadline is None else max(1.0, deadline - time.time()))
        return True
    except subprocess.TimeoutExpired:
        import signal

        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return False


def run_suites(args, work: Path) -> dict:
    """Baseline first (it also fills Triton's compile cache), then raise and warn side by side on
    the tests the baseline passed."""
    t0 = time.time()
    budget = args.budget or None
    base = _pytest(args, "off", work / "off", args.workers)
    # The baseline gets 45% of the budget; the guarded runs (fewer tests: the passing ones) the rest.
    finished = {"baseline": _wait(base, t0 + 0.45 * budget if budget else None)}
    passed = [r["test"] for r in _read(work / "off" / "outcomes.jsonl") if r["outcome"] == "passed"]
    allow = work / "allow.txt"
    allow.write_text("\n".join(passed) + "\n")
    # Warn mode runs every --warn-every'th of them (it must log nothing where raise refuses
    # nothing; its own point is that a warned launch still runs), on a share of the workers.
    sample = work / "allow-warn.txt"
    sample.write_text("\n".join(passed[:: args.warn_every]) + "\n")
    t1 = time.time()
    warn_workers = max(1, round(args.workers / (args.warn_every + 1)))
    procs = [
        _pytest(args, "raise", work / "raise", max(1, args.workers - warn_workers), allow),
        _pytest(args, "warn", work / "warn", warn_workers, sample),
    ]
    for name, p in zip(("raise", "warn"), procs):
        finished[name] = _wait(p, t0 + budget if budget else None)
    return {"baseline_s": round(t1 - t0, 1), "guarded_s": round(time.time() - t1, 1), "baseline_passed": len(passed),
            "finished_within_budget": finished}


def compare(work: Path) -> dict:
    """Tests compared, valid launches refused (raise mode) and warnings logged (warn mode)."""
    base = {r["test"]: r for r in _read(work / "off" / "outcomes.jsonl")}
    passed = {t for t, r in base.items() if r["outcome"] == "passed"}
    modes = {m: {r["test"]: r for r in _read(work / m / "outcomes.jsonl")} for m in ("raise", "warn")}
    compared = passed & set(modes["raise"])
    refusals = {m: [r for p in sorted((work / m).glob("refusals-*.jsonl")) for r in _read(p)] for m in ("raise", "warn")}
    refused_tests = sorted({r["test"] for r in refusals["raise"] if r.get("refused")} & compared)
    launched = {r["test"] for p in sorted((work / "raise").glob("launched-*.jsonl")) for r in _read(p) if r["launches"]}
    crashed = sorted({r["test"] for m in refusals for r in refusals[m] if not r.get("refused")})
    other_failures = sorted(
        t for t in compared for m in ("raise", "warn")
        if t in modes[m] and modes[m][t]["outcome"] != "passed" and t not in refused_tests
    )
    kernels: dict[str, dict] = {}
    for m in ("raise", "warn"):
        for p in sorted((work / m).glob("kernels-*.json")):
            for k in json.loads(p.read_text()):
                e = kernels.setdefault(k["kernel"], {"kernel": k["kernel"], "launches": 0})
                e["launches"] += k.get("launches", 0)
                for f in ("pointers", "accesses", "error"):
                    if f in k:
                        e[f] = k[f]
    return {
        "tests_compared": len(compared),
        "tests_with_launches": len(compared & launched),
        "valid_refused": len(refused_tests),
        "refused_tests": refused_tests,
        "refusal_messages": sorted({r["message"][:400] for r in refusals["raise"] if r.get("refused")}),
        "warnings_logged": len([r for r in refusals["warn"] if r.get("refused")]),
        "warn_tests": len(passed & set(modes["warn"])),
        "guard_crashes": crashed,
        "other_differences": other_failures,
        "baseline_outcomes": {o: sum(1 for r in base.values() if r["outcome"] == o) for o in sorted({r["outcome"] for r in base.values()})},
        "kernels_launched": len(kernels),
        "kernels_with_empty_contract": sorted(k for k, e in kernels.items() if e.get("pointers") == 0),
        "derivation_errors": {k: e["error"] for k, e in kernels.items() if "error" in e},
    }


# ----------------------------------------------------------------------------- planted bad launch


def planted(args) -> dict:
    """A library kernel launched directly, through the same patch, with a valid layout and with a
    row-padded input stepped by the output's row stride: the first must launch, the second be
    refused before launching."""
    os.environ["GUARD_PEER_MODE"] = "raise"
    os.environ["GUARD_PEER_PREFIX"] = args.prefix or LIBRARIES[args.library]["prefix"]
    import guard_peer_plugin  # noqa: F401 - installs the patch
    import torch

    from stridecheck import StrideGuardError

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    res = {"device": dev}
    kernel, launch = _planted_kernel(args.library)
    a = torch.randn(8, 256, device=dev)
    b = torch.randn(8, 256, device=dev)
    c = torch.empty(8, 256, device=dev)
    try:
        launch(kernel, a, b, c, c.stride(0))
        res["valid_launch"] = "launched"
    except Exception as e:  # noqa: BLE001 - recorded: the run says what broke
        res["valid_launch"] = f"{type(e).__name__}: {e}"[:400]
    padded = torch.randn(8, 300, device=dev)[:, :256]
    c.fill_(0)
    try:
        launch(kernel, padded, b, c, c.stride(0))
        res["planted"] = "launched"
    except StrideGuardError as e:
        res["planted"] = "refused"
        res["message"] = str(e)
    res["planted_untouched_output"] = bool(torch.count_nonzero(c).item() == 0)
    return res


def _planted_kernel(library: str):
    if library == "liger":
        from liger_kernel.ops.swiglu import _swiglu_forward_kernel

        def launch(k, a, b, c, stride):
            k[(a.shape[0],)](a, b, c, stride, 1.0, n_cols=256, BLOCK_SIZE=256)

        return _swiglu_forward_kernel, launch
    if library == "attorch":
        import triton
        from attorch.softmax_kernels import softmax_forward_kernel

        def launch(k, a, b, c, stride):
            grid = lambda meta: (triton.cdiv(a.shape[0], meta["BLOCK_SIZE_BATCH"]),)  # noqa: E731 - triton's grid form
            k[grid](a, c, a.shape[0], a.shape[1], stride, 1, c.stride(0), 1, neg=False, log=False)

        return softmax_forward_kernel, launch
    raise SystemExit(f"no planted launch for {library}")


# ----------------------------------------------------------------------------- cost


def bench(args) -> dict:
    """Per-launch time of the library's own launches, plain against guarded (repeated layout),
    alternating blocks of ``--number`` launches, median of ``--repeat`` rounds; the check alone;
    and the check of a new layout (the table emptied before each call)."""
    import torch

    import guard_peer_plugin  # noqa: F401 - off: patches nothing
    from stridecheck import stride_guard

    os.environ["STRIDECHECK_GUARD"] = "raise"
    cuda = torch.cuda.is_available()
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    number, repeat = (args.number, args.repeat) if cuda else (5, 3)
    rows = []
    for name, launches in _captured(args.library).items():
        seen = set()
        for jit, a, kw in launches:
            if jit.fn.__name__ in seen:
                continue
            seen.add(jit.fn.__name__)
            kw = dict(kw)
            grid = kw.pop("grid")
            kw.pop("warmup", None)
            guarded = stride_guard(jit)

            # As the library's launch sites spell it: subscripted with the grid at every launch.
            # (Closures over this iteration's kernel: both are timed before the next one.)
            def plain_launch(*a, **kw):
                return jit[grid](*a, **kw)  # noqa: B023

            def guarded_launch(*a, **kw):
                return guarded[grid](*a, **kw)  # noqa: B023

            table = guarded._check.__stride_guard_table__
            fast = getattr(guarded._check, "__stride_guard_fast__", None)
            try:
                for _ in range(3):
                    plain_launch(*a, **kw)
                    guarded_launch(*a, **kw)
                sync()
            except Exception as e:  # noqa: BLE001 - recorded, not timed
                rows.append({"op": name, "kernel": jit.fn.__name__, "error": f"{type(e).__name__}: {e}"[:300]})
                continue

            def block(f):
                sync()
                t = time.perf_counter()
                for _ in range(number):
                    f(*a, **kw)
                sync()
                return (time.perf_counter() - t) / number * 1e6

            def checks(new: bool):
                t = time.perf_counter()
                for _ in range(number):
                    if new:
                        table.clear()
                        if fast is not None:
                            fast.clear()
                    guarded._check(*a, **kw)
                return (time.perf_counter() - t) / number * 1e6

            p, g, c, n = [], [], [], []
            for _ in range(repeat):
                p.append(block(plain_launch))
                g.append(block(guarded_launch))
                c.append(checks(False))
                n.append(checks(True))
            rows.append(
                {
                    "op": name,
                    "kernel": jit.fn.__name__,
                    "tensors": sum(1 for x in list(a) + list(kw.values()) if hasattr(x, "stride")),
                    "plain_us": round(statistics.median(p), 2),
                    "guarded_us": round(statistics.median(g), 2),
                    "added_us": round(statistics.median(g) - statistics.median(p), 2),
                    "check_us": round(statistics.median(c), 2),
                    "new_layout_check_us": round(statistics.median(n), 2),
                }
            )
    timed = [r["added_us"] for r in rows if "added_us" in r]
    return {
        "device": torch.cuda.get_device_name() if cuda else "cpu (interpreter launches: the added time is noise there)",
        "number": number,
        "repeat": repeat,
        "median_added_us": round(statistics.median(timed), 2) if timed else None,
        "median_check_us": round(statistics.median([r["check_us"] for r in rows if "check_us" in r]), 2) if timed else None,
        "median_new_layout_check_us": round(statistics.median([r["new_layout_check_us"] for r in rows if "check_us" in r]), 2)
        if timed
        else None,
        "launches": rows,
    }


def _captured(library: str) -> dict:
    """op -> the (jit, args, kwargs) of each Triton launch one call of the op makes."""
    import torch
    import triton.runtime.jit as tjit

    classes = [tjit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    out = {}
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for name, op in _ops(library, dev).items():
        seen = []
        originals = {cls: cls.run for cls in classes}

        def make(orig):
            def run(self, *a, **kw):
                seen.append((self, a, dict(kw)))
                return orig(self, *a, **kw)

            return run

        for cls in classes:
            cls.run = make(originals[cls])
        try:
            op()
        except Exception as e:  # noqa: BLE001 - an op this machine cannot run: left out, said so
            print(f"bench: {name} skipped: {type(e).__name__}: {e}"[:200], file=sys.stderr)
            seen = []
        finally:
            for cls in classes:
                cls.run = originals[cls]
        out[name] = seen
    return out


def _ops(library: str, dev: str) -> dict:
    import torch

    if library == "liger":
        def rms_norm():
            from liger_kernel.ops.rms_norm import LigerRMSNormFunction

            x = torch.randn(16, 1024, device=dev, requires_grad=True)
            w = torch.ones(1024, device=dev, requires_grad=True)
            LigerRMSNormFunction.apply(x, w, 1e-6).sum().backward()

        def swiglu():
            from liger_kernel.ops.swiglu import LigerSiLUMulFunction

            a = torch.randn(16, 1024, device=dev, requires_grad=True)
            b = torch.randn(16, 1024, device=dev, requires_grad=True)
            LigerSiLUMulFunction.apply(a, b).sum().backward()

        def geglu():
            from liger_kernel.ops.geglu import LigerGELUMulFunction

            a = torch.randn(16, 1024, device=dev, requires_grad=True)
            b = torch.randn(16, 1024, device=dev, requires_grad=True)
            LigerGELUMulFunction.apply(a, b).sum().backward()

        def layer_norm():
            from liger_kernel.ops.layer_norm import LigerLayerNormFunction

            x = torch.randn(16, 1024, device=dev, requires_grad=True)
            w = torch.ones(1024, device=dev, requires_grad=True)
            b = torch.zeros(1024, device=dev, requires_grad=True)
            LigerLayerNormFunction.apply(x, w, b, 1e-6).sum().backward()

        def cross_entropy():
            from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

            x = torch.randn(16, 4096, device=dev, requires_grad=True)
            y = torch.randint(0, 4096, (16,), device=dev)
            out = LigerCrossEntropyFunction.apply(x, y, None)
            (out[0] if isinstance(out, tuple) else out).backward()

        def kl_div():
            from liger_kernel.ops.kl_div import LigerKLDivLossFunction

            x = torch.randn(16, 4096, device=dev).log_softmax(-1).requires_grad_()
            y = torch.randn(16, 4096, device=dev).softmax(-1)
            LigerKLDivLossFunction.apply(x, y, "batchmean", False, 1e-10).backward()

        def rope():
            from liger_kernel.ops.rope import LigerRopeFunction

            q = torch.randn(2, 8, 64, 128, device=dev, requires_grad=True)
            k = torch.randn(2, 4, 64, 128, device=dev, requires_grad=True)
            cos = torch.randn(1, 64, 128, device=dev)
            sin = torch.randn(1, 64, 128, device=dev)
            q2, k2 = LigerRopeFunction.apply(q, k, cos, sin)
            (q2.sum() + k2.sum()).backward()

        def group_norm():
            from liger_kernel.ops.group_norm import LigerGroupNormFunction

            x = torch.randn(4, 32, 64, device=dev, requires_grad=True)
            w = torch.ones(32, device=dev, requires_grad=True)
            b = torch.zeros(32, device=dev, requires_grad=True)
            LigerGroupNormFunction.apply(x, w, b, 32, 4, 1e-6).sum().backward()

        return {f.__name__: f for f in (rms_norm, swiglu, geglu, layer_norm, cross_entropy, kl_div, rope, group_norm)}
    if library == "attorch":
        def attorch_ops():
            import attorch

            x = torch.randn(16, 1024, device=dev, requires_grad=True)
            attorch.Softmax()(x).sum().backward()
            attorch.LayerNorm(1024).to(dev)(x).sum().backward()
            attorch.GELU()(x).sum().backward()

        return {"attorch_ops": attorch_ops}
    return {}


# ----------------------------------------------------------------------------- contracts


def contracts(args) -> dict:
    """The derived contract of every ``@triton.jit`` function of the library's package (imported
    module by module; helpers included): how many have none, and of those with strides passed as
    ``tl.constexpr`` or host tensor descriptors, how many have one."""
    import importlib
    import inspect
    import pkgutil

    from stridecheck import stride_guard

    prefix = args.prefix or LIBRARIES[args.library]["prefix"]
    package = importlib.import_module(prefix)
    errors, rows = {}, []
    for m in pkgutil.walk_packages(package.__path__, prefix + "."):
        try:
            module = importlib.import_module(m.name)
        except Exception as e:  # noqa: BLE001 - a module this machine cannot import (another backend)
            errors[m.name] = f"{type(e).__name__}: {e}"[:200]
            continue
        for name, obj in vars(module).items():
            # The JIT function under any autotuner / heuristics (an InterpretedFunction under
            # TRITON_INTERPRET=1): the triton object whose .fn is the Python function.
            jit = obj if (type(obj).__module__ or "").startswith("triton") else None
            while jit is not None and not hasattr(getattr(jit, "fn", None), "__code__"):
                jit = getattr(jit, "fn", None)
            if jit is None or getattr(jit.fn, "__module__", None) != m.name:
                continue
            params = inspect.signature(jit.fn).parameters.values()
            constexpr_strides = [p.name for p in params if "stride" in p.name.lower() and "constexpr" in str(p.annotation)]
            source = inspect.getsource(jit.fn)
            row = {"kernel": f"{m.name}.{name}", "constexpr_strides": bool(constexpr_strides),
                   "descriptors": ".load(" in source.replace("tl.load(", "") or "TensorDescriptor" in source}
            try:
                guarded = stride_guard(jit)
                row["pointers"] = len(guarded.contract.pointers)
            except Exception as e:  # noqa: BLE001 - recorded: a kernel the guard cannot derive
                row["error"] = f"{type(e).__name__}: {e}"[:200]
            rows.append(row)
    special = [r for r in rows if r["constexpr_strides"] or r["descriptors"]]
    return {
        "kernels": len(rows),
        "empty": sorted(r["kernel"] for r in rows if r.get("pointers") == 0),
        "errors": {r["kernel"]: r["error"] for r in rows if "error" in r},
        "constexpr_stride_or_descriptor_kernels": len(special),
        "of_those_empty": sorted(r["kernel"] for r in special if r.get("pointers") == 0),
        "import_errors": errors,
    }


# ----------------------------------------------------------------------------- record


def versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("torch", "triton", "transformers"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - absent here: recorded as such
            out[mod] = None
    return out


def record(entry: dict, costs: dict | None, meta: dict) -> None:
    path = RESULTS / "guard_peer.json"
    old = json.loads(path.read_text()) if path.exists() else {}
    runs = [r for r in old.get("runs", []) if r.get("library") != entry["library"]]
    runs.append(entry)
    out = {
        "runs": sorted(runs, key=lambda r: r["library"]),
        "median_added_us": costs["median_added_us"] if costs and costs.get("median_added_us") is not None else old.get("median_added_us"),
        "cost": costs if costs and costs.get("median_added_us") is not None else old.get("cost"),
    }
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    (RESULTS / "guard_peer.md").write_text(markdown(out))
    with open(RESULTS / "history.jsonl", "a") as f:
        f.write(json.dumps({"benchmark": "guard_peer", "date": meta["date"], "commit": meta["stridecheck_commit"],
                            "device": meta["device"], "library": entry["library"],
                            "tests_compared": entry["tests_compared"], "valid_refused": entry["valid_refused"],
                            "planted_refused": entry["planted_refused"],
                            "median_added_us": out["median_added_us"]}) + "\n")


def markdown(out: dict) -> str:
    lines = [
        "# The bare guard on real libraries' test suites",
        "",
        "Every Triton kernel the library launches is guarded by bare `@stride_guard` (contract derived from its "
        "source); its op tests run with the guard off, in raise mode and in warn mode "
        "(`benchmarks/guard_peer.py`). A valid launch refused is a test that passes unguarded and fails in raise "
        "mode with a `StrideGuardError`.",
        "",
        "| library | commit | where | date | versions | tests compared | with guarded launches | valid refused | warnings (tests in warn mode) | planted bad launch |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out["runs"]:
        v = r.get("versions", {})
        lines.append(
            f"| {r['library']} | {r['commit']} | {r.get('device', '?')} | {r.get('date', '?')} | torch {v.get('torch')}, "
            f"triton {v.get('triton')} | {r['tests_compared']} | {r.get('tests_with_launches', '?')} | {r['valid_refused']} | "
            f"{r.get('warnings_logged', '?')} ({r.get('warn_tests', '?')}) | "
            f"{'refused' if r['planted_refused'] else 'NOT refused'} |"
        )
    cost = out.get("cost")
    if cost:
        lines += [
            "",
            f"Cost on {cost['device']}: median added time per launch (repeated layout) **{out['median_added_us']} µs**; "
            f"the check alone {cost['median_check_us']} µs, for a new layout {cost['median_new_layout_check_us']} µs "
            f"(median over the kernels below; {cost['number']} launches x {cost['repeat']} rounds, synchronised per block).",
            "",
            "| op | kernel | tensors | plain µs | guarded µs | added µs | check µs | new-layout check µs |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in cost["launches"]:
            if "added_us" in r:
                lines.append(
                    f"| {r['op']} | {r['kernel']} | {r['tensors']} | {r['plain_us']} | {r['guarded_us']} | {r['added_us']} | "
                    f"{r['check_us']} | {r['new_layout_check_us']} |"
                )
    for r in out["runs"]:
        if r.get("notes"):
            lines += ["", f"{r['library']}: " + " ".join(r["notes"])]
    return "\n".join(lines) + "\n"


def _commit() -> str:
    """This checkout's commit, if git can tell (the GPU machine's copy may have no history)."""
    if os.environ.get("STRIDECHECK_COMMIT"):
        return os.environ["STRIDECHECK_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["all", "suites", "compare", "planted", "bench", "contracts"])
    ap.add_argument("--library", required=True, choices=sorted(LIBRARIES))
    ap.add_argument("--root", required=True, help="the library's checkout (its tests import from there)")
    ap.add_argument("--commit", default="", help="the library's commit, for the record")
    ap.add_argument("--tests", dest="test_paths", nargs="+", default=None, help="test files or folders, relative to --root")
    ap.add_argument("--prefix", default="", help="module prefix of the kernels to guard (default: the library's package)")
    ap.add_argument("--workers", type=int, default=14)
    ap.add_argument("--cap", default="", help='at most N tests per file: "default=40;test_x.py=8"')
    ap.add_argument("--timeout", type=int, default=300, help="seconds per test")
    ap.add_argument("--warn-every", type=int, default=3, help="warn mode runs every Nth test the baseline passed")
    ap.add_argument("--budget", type=float, default=0, help="seconds for the three suites; a run past it is stopped "
                    "and the tests it finished are compared (0: no limit)")
    ap.add_argument("--interpret", action="store_true", help="TRITON_INTERPRET=1 (a CPU machine)")
    ap.add_argument("--work", default="", help="folder for the records (default: a fresh one under /tmp)")
    ap.add_argument("--number", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--record", action="store_true", help="write benchmarks/results/guard_peer.{json,md}")
    ap.add_argument("--note", action="append", default=[], help="a sentence for the record (repeatable)")
    args = ap.parse_args(argv)
    args.test_paths = args.test_paths or [LIBRARIES[args.library]["tests"]]
    work = Path(args.work or f"/tmp/guard_peer_{args.library}_{int(time.time())}")
    work.mkdir(parents=True, exist_ok=True)
    if args.what == "planted":
        print(json.dumps(planted(args)))
        return 0
    if args.what == "bench":
        print(json.dumps(bench(args), indent=1))
        return 0
    if args.what == "contracts":
        print(json.dumps(contracts(args), indent=1))
        return 0
    timing = run_suites(args, work) if args.what in ("all", "suites") else {}
    if args.what == "suites":
        print(json.dumps(timing))
        return 0
    result = compare(work)
    result.update(timing)
    sub_env = _env(args, "off", work / "aux")
    if args.what == "all":
        got = subprocess.run([sys.executable, __file__, "planted", "--library", args.library, "--root", args.root],
                             cwd=args.root, env=sub_env, capture_output=True, text=True)
        result["planted"] = json.loads(got.stdout.strip().splitlines()[-1]) if got.returncode == 0 and got.stdout.strip() else {"error": got.stderr[-800:]}
        got = subprocess.run([sys.executable, __file__, "bench", "--library", args.library, "--root", args.root,
                              "--number", str(args.number), "--repeat", str(args.repeat)],
                             cwd=args.root, env=sub_env, capture_output=True, text=True)
        costs = json.loads(got.stdout) if got.returncode == 0 and got.stdout.strip() else {"error": got.stderr[-800:]}
        result["cost"] = costs
    (work / "result.json").write_text(json.dumps(result, indent=1))
    import torch

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() and not args.interpret else
        f"CPU ({platform.processor() or platform.machine()}), TRITON_INTERPRET=1",
        "stridecheck_commit": _commit(),
    }
    planted_res = result.get("planted", {})
    entry = {
        "library": LIBRARIES[args.library]["name"],
        "commit": args.commit,
        "tests_compared": result["tests_compared"],
        "tests_with_launches": result["tests_with_launches"],
        "valid_refused": result["valid_refused"],
        "planted_refused": planted_res.get("planted") == "refused" and planted_res.get("valid_launch") == "launched",
        "warnings_logged": result["warnings_logged"],
        "warn_tests": result["warn_tests"],
        "device": meta["device"],
        "date": meta["date"][:10],
        "versions": versions(),
        "cap": args.cap,
        "suite_seconds": {"baseline": timing.get("baseline_s"), "raise_and_warn": timing.get("guarded_s")},
        "finished_within_budget": timing.get("finished_within_budget"),
        "notes": args.note,
    }
    summary = {k: result[k] for k in ("tests_compared", "tests_with_launches", "valid_refused", "warnings_logged", "warn_tests", "guard_crashes", "other_differences",
                                      "baseline_outcomes", "kernels_launched", "kernels_with_empty_contract", "derivation_errors")}
    summary["planted"] = planted_res
    summary["median_added_us"] = (result.get("cost") or {}).get("median_added_us")
    summary.update(timing)
    print(json.dumps(summary, indent=1))
    if result["refused_tests"]:
        print("REFUSED:", json.dumps(result["refused_tests"][:20], indent=1), json.dumps(result["refusal_messages"][:10], indent=1))
    if args.record:
        cost = result.get("cost") if not args.interpret else None
        record(entry, cost, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
