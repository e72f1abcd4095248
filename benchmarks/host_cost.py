"""Host cost of eager ``gumbel_sample`` / ``resample`` calls, measured on a CPU without a GPU.

At small batch an eager call is bound by the host (issue 21): our Python (the launch guard, the
argument checks, the plan, the workspaces, the launch arguments) and Triton's Python launch path
(``JITFunction.run``: binding and specialising every argument, the cache key), and then the C
launcher. This script runs all of it but the C launcher on this machine's CPU, with a stand-in for
the GPU:

* input tensors that report ``device cuda:0`` (CPU memory underneath), torch's CUDA queries
  answered by stubs (an H200: 132 SMs, compute capability 9.0), so the code takes its GPU branches
  and the H200's launch plans;
* a Triton driver whose compiled-kernel launcher launches nothing. The kernels really compile, for
  sm_90 with Triton's own ptxas, once per specialisation (cached in ``~/.triton``).

What it leaves out: the C launcher itself (argument packing and ``cuLaunchKernelEx``; its cost
grows with the runtime arguments, counted per launch below), the real cost of torch's CUDA
queries (each a stub here: the older code's ``torch.cuda.current_stream``, which builds a Stream
object per call on a GPU, costs nothing here, so its figure is a lower bound), and CUDA
allocation (the older ``resample`` allocates its statistics per call; CPU memory here).

Compared in one process, interleaved: this checkout's package with its direct launch of the kept
compiled kernel (``guarded_kernels``), the same with Triton's own launch path
(``guarded_kernels[jit]``: ``GUARDED_KERNELS_DIRECT_LAUNCH=0``), the same without the launch guard
(``[unguarded]``: the undecorated function) and an older checkout's package
(``guarded_kernels@old``; ``--old DIR``, default a ``git archive`` of ``OLD_REV``). Per call the
minimum over interleaved repetitions of the mean of ``--calls`` back-to-back calls (noise on a
shared machine only adds).

    python benchmarks/host_cost.py [--old DIR] [--out benchmarks/results] [--calls 1000] [--reps 21]

Writes ``OUT/host_cost.json``, ``OUT/host_cost.md`` and appends one line to
``OUT/history.jsonl``.
"""

from __future__ import annotations

import os

if __name__ == "__main__":
    # The compiled kernels' launch path, not the interpreter's: before triton is first imported.
    os.environ.pop("TRITON_INTERPRET", None)

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.driver import driver as triton_driver  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OLD_REV = "55710b7"
CUDA = torch.device("cuda", 0)
TS = (1, 8, 64)
V = 151_936
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

# Every launch's runtime arguments (those reaching the C launcher) while RECORD is a list.
RECORD: list | None = None


class _NoLaunch:
    """The compiled kernel's launcher, minus the launch: notes its runtime arguments."""

    def __init__(self, src, metadata):
        self.runtime_args = sum(1 for v in src.signature.values() if v != "constexpr")
        self.params = len(src.signature)

    def __call__(self, *args):
        if RECORD is not None:
            RECORD.append((self.params, self.runtime_args))


class _Utils:
    def load_binary(self, name, kernel, shared, device):
        return 1, 1, 64, 0, 1024  # module, function, registers, spills, max threads

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536, "warpSize": 32}

    def unload_module(self, module):
        pass


class _Driver:
    """Triton's active driver for an H200 that is not there."""

    utils = _Utils()
    launcher_cls = _NoLaunch

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        return torch.device("cpu")

    def set_current_device(self, device):
        pass


class _CudaView(torch.Tensor):
    """A CPU tensor that says it is on ``cuda:0``."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    @property
    def device(self):
        return CUDA


def cuda_view(t: torch.Tensor) -> torch.Tensor:
    return torch.Tensor._make_subclass(_CudaView, t)


def install_stand_ins() -> None:
    """Route torch's CUDA queries and allocations and Triton's driver to the stand-ins."""
    triton_driver.set_active(_Driver())
    props = types.SimpleNamespace(multi_processor_count=132, major=9, minor=0, name="H200 (stand-in)")
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_capability = lambda device=None: (9, 0)
    torch.cuda.current_stream = lambda device=None: types.SimpleNamespace(cuda_stream=0)
    torch._C._cuda_getCurrentRawStream = lambda index: 0
    for name in ("empty", "full", "zeros"):
        real = getattr(torch, name)

        def on_cpu(*args, _real=real, device=None, **kwargs):
            if device is not None and torch.device(device).type == "cuda":
                return cuda_view(_real(*args, **kwargs))
            return _real(*args, device=device, **kwargs)

        setattr(torch, name, on_cpu)


def load_package(root: Path, env: dict | None = None):
    """``guarded_kernels`` of the checkout ``root`` under module objects of its own (see
    benchmarks/sampling.py), imported with ``env`` set."""
    sampling = importlib.import_module("sampling")
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        return sampling.load_package(root)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def inputs(kind: str, T: int, dtype: torch.dtype) -> tuple:
    g = torch.Generator().manual_seed(T)
    if kind == "gumbel_sample":
        return tuple(cuda_view(t) for t in (
            (torch.randn(T, V, generator=g) * 2).to(dtype), torch.arange(T, dtype=torch.int32), torch.ones(T),
            torch.arange(T, dtype=torch.int64) + 1, torch.arange(T, dtype=torch.int64)))
    # T requests of one draft each, the draft rejected: the residual draw.
    return tuple(cuda_view(t) for t in (
        (torch.randn(2 * T, V, generator=g) * 2).to(dtype), (torch.randn(T, 1, V, generator=g) * 2).to(dtype),
        torch.zeros(T, 1, dtype=torch.int64), torch.zeros(T, dtype=torch.int64), torch.arange(0, 2 * T + 1, 2),
        torch.arange(T, dtype=torch.int32), torch.ones(T), torch.arange(T, dtype=torch.int64) + 1,
        torch.arange(2 * T, dtype=torch.int64)))


def per_call_us(calls_of: dict, calls: int, reps: int) -> dict:
    """{name: µs per call}: the minimum over ``reps`` interleaved repetitions of ``calls`` calls."""
    for fn in calls_of.values():
        fn()
        fn()
    best = {name: float("inf") for name in calls_of}
    for _ in range(reps):
        for name, fn in calls_of.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - t0) * 1e6 / calls)
    return best


def launches_of(fn) -> list:
    """[(parameters, runtime arguments)] of each launch one call makes."""
    global RECORD
    RECORD = []
    try:
        fn()
        return RECORD
    finally:
        RECORD = None


def run(packages: dict, calls: int, reps: int) -> list[dict]:
    rows = []
    for kind in ("gumbel_sample", "resample"):
        for dname, dtype in DTYPES.items():
            for T in TS:
                args = inputs(kind, T, dtype)
                fns = {}
                for label, package in packages.items():
                    fn = getattr(package, kind)
                    fns[label] = lambda fn=fn: fn(*args)
                    if label == "guarded_kernels":
                        fns[f"{label}[unguarded]"] = lambda fn=fn.__wrapped__: fn(*args)
                us = per_call_us(fns, calls, reps)
                for label, fn in fns.items():
                    launches = launches_of(fn)
                    row = dict(impl=f"{label}.{kind}", dtype=dname, T=T, V=V, us_host=round(us[label], 2),
                               launches=len(launches), params=[p for p, _ in launches],
                               runtime_args=[r for _, r in launches])
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    return rows


def write_md(path: Path, meta: dict, rows: list[dict]) -> None:
    lines = [
        "# Host cost of an eager call, without the GPU", "",
        f"{meta['cpu']} (load average {meta.get('load_average', '?')} at the start), torch {meta['torch']}, "
        f"triton {meta['triton']}, {meta['date']}, commit {meta['commit']}, old = {meta['old']}. Kernel launch stubbed below Triton's C launcher (benchmarks/host_cost.py says what "
        "is and is not counted); us_host: µs per call, the minimum over interleaved repetitions. params: the "
        "kernel's parameters per launch; runtime args: those the C launcher packs.", "",
        "| impl | dtype | T | us_host | launches | params | runtime args |", "|---|---|---:|---:|---:|---|---|",
    ]
    by = {}
    for r in rows:
        by[(r["impl"], r["dtype"], r["T"])] = r
        lines.append(f"| {r['impl']} | {r['dtype']} | {r['T']} | {r['us_host']} | {r['launches']} | "
                     f"{', '.join(map(str, r['params']))} | {', '.join(map(str, r['runtime_args']))} |")
    lines += ["", "Ratios to the older package (below 1: less host time):", "",
              "| function | dtype | T | ours / old | ours[jit] / old | guard µs |", "|---|---|---:|---:|---:|---:|"]
    for (impl, dname, T), r in by.items():
        if impl.startswith("guarded_kernels.") and "[" not in impl:
            kind = impl.split(".", 1)[1]
            old = by.get((f"guarded_kernels@old.{kind}", dname, T))
            jit = by.get((f"guarded_kernels[jit].{kind}", dname, T))
            bare = by.get((f"guarded_kernels[unguarded].{kind}", dname, T))
            if old:
                lines.append(f"| {kind} | {dname} | {T} | {r['us_host'] / old['us_host']:.2f} | "
                             f"{jit['us_host'] / old['us_host'] if jit else float('nan'):.2f} | "
                             f"{r['us_host'] - bare['us_host'] if bare else float('nan'):.1f} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, help=f"a checkout whose guarded_kernels to compare (default: {OLD_REV})")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    install_stand_ins()
    with tempfile.TemporaryDirectory() as tmp:
        old = args.old
        if old is None:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_REV, "guarded_kernels"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            old = Path(tmp)
        packages = {
            "guarded_kernels": importlib.import_module("guarded_kernels"),
            "guarded_kernels[jit]": load_package(ROOT, {"GUARDED_KERNELS_DIRECT_LAUNCH": "0"}),
            "guarded_kernels@old": load_package(old),
        }
        # STRIDECHECK_COMMIT: the tree copied to a GPU machine may carry a stale .git.
        commit = os.environ.get("STRIDECHECK_COMMIT") or subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        meta = dict(cpu=f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)",
                    torch=torch.__version__, triton=triton.__version__,
                    date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), commit=commit,
                    old=str(args.old) if args.old else OLD_REV, calls=args.calls, reps=args.reps,
                    load_average=round(os.getloadavg()[0], 1))
        print(json.dumps(meta), flush=True)
        rows = run(packages, args.calls, args.reps)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "host_cost.json").write_text(json.dumps(dict(meta, rows=rows), indent=1) + "\n")
    write_md(args.out / "host_cost.md", meta, rows)
    headline = [f"{r['impl']} {r['dtype']} T={r['T']} {r['us_host']}us" for r in rows
                if r["T"] == 8 and r["dtype"] == "float32" and "[" not in r["impl"]]
    with open(args.out / "history.jsonl", "a") as f:
        f.write(json.dumps(dict(date=meta["date"], commit=commit, device=meta["cpu"] + ", GPU stubbed",
                                torch=meta["torch"], triton=meta["triton"], source="host_cost.json", rows=len(rows),
                                headline=headline)) + "\n")


if __name__ == "__main__":
    main()
