"""Sampling speed on a CUDA device, ours beside vLLM's sampler (the peer) in one process.

Rows, one per (impl, dtype, T, V), T in {1, 8, 64, 256, 1024}, V in {32000, 151936, 262144},
float32 and bfloat16:

* ``guarded_kernels.gumbel_sample`` and ``vllm-0.33.gumbel_sample`` (temperature 1, no cache);
* ``guarded_kernels.resample``, ``guarded_kernels.rejection_sample`` (when the package exports it)
  and ``vllm-0.33.rejection_sample``: T requests of one draft each, every draft rejected (the
  residual path: a target and a draft row read per request);
* ``torch_gumbel``: torch's eager Gumbel-max, the baseline without Triton.

``us_graph``: median per-call time over CUDA-graph replays (one call per input buffer, buffers
rotated so that repeated calls do not read from L2). ``us_eager``: wall time of back-to-back
eager calls with one synchronize at the end, per call (host cost included: where the GPU is
faster than the host, this is the host's time per call); the implementations of a case take
turns in rounds (median of 7), so the host's drift hits all alike. The peer is the folder given by
``--peer`` (default ``.peer``, a copy of ``../shared/peer``; never committed): its rows are left
out when it is absent. ``--old DIR`` also measures the package in another checkout (a previous
commit) in the same process, as ``guarded_kernels@old.<function>``. ``--plan FIELD=VALUE``
measures our functions with a plan field overridden (an A/B of one knob).

Usage: ``PYTHONPATH=. python benchmarks/sampling.py --out DIR [--quick] [--ts ..] [--vs ..]
[--old DIR] [--plan FIELD=VALUE ..]``. Writes ``DIR/sampling.json`` and ``DIR/sampling.md``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TS = (1, 8, 64, 256, 1024)
VS = (32000, 151936, 262144)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
PEER = "vllm-0.33"


def load_package(root: Path):
    """``guarded_kernels`` imported from the checkout ``root`` under its own module objects, so that
    two versions run in one process; the package in ``sys.modules`` is left as it was."""
    names = [k for k in sys.modules if k == "guarded_kernels" or k.startswith("guarded_kernels.")]
    saved = {k: sys.modules.pop(k) for k in names}
    sys.path.insert(0, str(root))
    try:
        package = importlib.import_module("guarded_kernels")
        importlib.import_module("guarded_kernels.sample")
        importlib.import_module("guarded_kernels.resample")
    finally:
        sys.path.remove(str(root))
        for k in [k for k in sys.modules if k == "guarded_kernels" or k.startswith("guarded_kernels.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    return package


def graph_us(fns, replays: int = 20) -> float:
    """Median per-call time of a CUDA graph holding one call per element of ``fns``."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for fn in fns:
            fn()  # warm-up: compile, allocate the scratch outside capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for fn in fns:
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / len(fns))
    del graph
    return statistics.median(times)


def eager_us(table: dict, calls: int = 200, reps: int = 7) -> dict:
    """Per implementation (``table``: name -> its calls, one per input set), the median over
    ``reps`` rounds of the wall time of ``calls`` back-to-back eager calls and one synchronize,
    per call. The implementations take turns within each round, in an order rotated every round,
    so drift of the host's speed hits all alike."""
    names = list(table)
    for fns in table.values():
        for fn in fns:
            fn()
    xs: dict = {name: [] for name in names}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fns = table[name]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(calls):
                fns[i % len(fns)]()
            torch.cuda.synchronize()
            xs[name].append((time.perf_counter() - t0) * 1e6 / calls)
    return {name: statistics.median(v) for name, v in xs.items()}


def buffers(V: int, rows: int, elt: int) -> int:
    # Enough input sets that together they exceed the L2 (60 MB) several times.
    return max(2, min(16, -(-200_000_000 // max(rows * V * elt, 1))))


def gumbel_inputs(T, V, dtype, b):
    g = torch.Generator(device="cuda").manual_seed(1000 + b)
    logits = (torch.randn(T, V, device="cuda", generator=g) * 2).to(dtype)
    return dict(logits=logits, idx=torch.arange(T, dtype=torch.int32, device="cuda"),
                temp=torch.ones(T, device="cuda"), seed=torch.arange(T, dtype=torch.int64, device="cuda") + 1,
                pos=torch.arange(T, dtype=torch.int64, device="cuda") + b)


def resample_inputs(T, V, dtype, b):
    """T requests of one draft each, every draft rejected (target logit -60, draft +20 there)."""
    g = torch.Generator(device="cuda").manual_seed(2000 + b)
    target = (torch.randn(2 * T, V, device="cuda", generator=g) * 2).to(dtype)
    draft = (torch.randn(T, 1, V, device="cuda", generator=g) * 2).to(dtype)
    r = torch.arange(T, device="cuda")
    x = (r * 7919 + b * 104729) % V
    target[2 * r, x] = -60.0
    draft[r, 0, x] = 20.0
    sampled = torch.zeros(2 * T, dtype=torch.int64, device="cuda")
    sampled[2 * r + 1] = x
    return dict(target=target, draft=draft, tokens=x.view(T, 1).clone(), sampled=sampled,
                acc=torch.zeros(T, dtype=torch.int64, device="cuda"), cu64=torch.arange(0, 2 * T + 1, 2, device="cuda"),
                cu32=torch.arange(0, 2 * T + 1, 2, dtype=torch.int32, device="cuda"),
                pos=torch.arange(2 * T, device="cuda") + b, idx=torch.arange(T, dtype=torch.int32, device="cuda"),
                eidx=torch.arange(T, dtype=torch.int32, device="cuda").repeat_interleave(2),
                elpos=torch.arange(2, dtype=torch.int32, device="cuda").repeat(T),
                temp=torch.ones(T, device="cuda"), seed=torch.arange(T, dtype=torch.int64, device="cuda") + 1)


def impls(ours: dict, peer, plan_overrides: dict) -> dict:
    """{impl name: (input kind, call(inputs))}."""
    out = {}
    for label, package in ours.items():
        def plan_of(make, rows, x, package=package):
            return make(rows, x.shape[1], x.dtype, x.device, **plan_overrides) if plan_overrides else None

        def gumbel(d, package=package, plan_of=plan_of):
            extra = {}
            if plan_overrides:
                extra["plan"] = plan_of(package.sample_plan, d["logits"].shape[0], d["logits"])
            return package.gumbel_sample(d["logits"], d["idx"], d["temp"], d["seed"], d["pos"], **extra)

        def resample(d, package=package, plan_of=plan_of):
            extra = {}
            if plan_overrides:
                extra["plan"] = plan_of(package.resample_plan, d["acc"].shape[0], d["target"])
            return package.resample(d["target"], d["draft"], d["tokens"], d["acc"], d["cu64"], d["idx"], d["temp"],
                                    d["seed"], d["pos"], **extra)

        out[f"{label}.gumbel_sample"] = ("gumbel", gumbel)
        out[f"{label}.resample"] = ("resample", resample)
        rejection = getattr(package, "rejection_sample", None)
        if rejection is not None:
            # Every draft rejected: the same work as vLLM's rejection_sample (accept/reject, then
            # the residual draw), in our argument order (see benchmarks/rejection.py for the full grid).
            out[f"{label}.rejection_sample"] = ("resample", lambda d, f=rejection: f(
                d["target"], d["draft"], d["tokens"], d["cu64"], d["idx"], d["temp"], d["seed"], d["pos"]))
    if peer is not None:
        out[f"{PEER}.gumbel_sample"] = ("gumbel", lambda d: peer.gumbel_sample(
            d["logits"], d["idx"], d["temp"], d["seed"], d["pos"], apply_temperature=True, is_drafting=False))
        out[f"{PEER}.rejection_sample"] = ("resample", lambda d: peer.rejection_sample(
            d["target"], d["draft"], d["sampled"], d["cu32"], d["pos"], d["idx"], d["eidx"], d["elpos"], d["temp"],
            d["seed"], 1))

    def torch_gumbel(d):
        xf = d["logits"].float() / d["temp"][:, None]
        return (xf - torch.empty_like(xf).exponential_().log_()).argmax(-1)

    out["torch_gumbel"] = ("gumbel", torch_gumbel)
    return out


def run(ts, vs, dtypes, table: dict) -> list[dict]:
    rows = []
    for dname in dtypes:
        dtype = DTYPES[dname]
        for T in ts:
            for V in vs:
                sets, fns_of, rows_here = {}, {}, {}
                for name, (kind, call) in table.items():
                    if kind not in sets:
                        make = gumbel_inputs if kind == "gumbel" else resample_inputs
                        per = T if kind == "gumbel" else 3 * T
                        sets[kind] = [make(T, V, dtype, b) for b in range(buffers(V, per, dtype.itemsize))]
                    fns = [lambda d=d, call=call: call(d) for d in sets[kind]]
                    try:
                        rows_here[name] = dict(impl=name, dtype=dname, T=T, V=V, us_graph=round(graph_us(fns), 2))
                        fns_of[name] = fns
                    except Exception as exc:  # one implementation failing must not lose the table
                        rows_here[name] = dict(impl=name, dtype=dname, T=T, V=V,
                                               error=f"{type(exc).__name__}: {exc}"[:300])
                try:
                    for name, us in eager_us(fns_of).items():
                        rows_here[name]["us_eager"] = round(us, 2)
                except Exception as exc:  # noqa: BLE001 - the graph timings are kept
                    for name in fns_of:
                        rows_here[name]["error"] = f"eager: {type(exc).__name__}: {exc}"[:300]
                for row in rows_here.values():
                    print(json.dumps(row), flush=True)
                    rows.append(row)
                del sets
                torch.cuda.empty_cache()
    return rows


def write_md(path: Path, meta: dict, rows: list[dict]) -> None:
    """The table and, per measured case, ours / the peer's time for graph and eager."""
    lines = [
        "# Sampling speed beside the peer", "",
        f"{meta['device']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}, commit {meta['commit']}. "
        "us_graph: median per call over CUDA-graph replays; us_eager: back-to-back eager calls and one synchronize, the "
        "implementations of a case taking turns (median of 7 rounds), "
        "per call (guard on, host cost included).", "",
        "| impl | dtype | T | V | us_graph | us_eager |", "|---|---|---:|---:|---:|---:|",
    ]
    by = {}
    for r in rows:
        by[(r["impl"], r["dtype"], r["T"], r["V"])] = r
        lines.append(f"| {r['impl']} | {r['dtype']} | {r['T']} | {r['V']} | {r.get('us_graph', r.get('error', ''))} "
                     f"| {r.get('us_eager', '')} |")
    pairs = [("guarded_kernels.gumbel_sample", f"{PEER}.gumbel_sample"),
             ("guarded_kernels.resample", f"{PEER}.rejection_sample"),
             ("guarded_kernels.rejection_sample", f"{PEER}.rejection_sample"),
             ("guarded_kernels@old.gumbel_sample", "guarded_kernels.gumbel_sample"),
             ("guarded_kernels@old.resample", "guarded_kernels.resample")]
    lines += ["", "Ratios (first / second; below 1: the first is faster):", "",
              "| first | second | dtype | T | V | graph | eager |", "|---|---|---|---:|---:|---:|---:|"]
    for a, b in pairs:
        for (impl, dname, T, V), r in by.items():
            o = by.get((b, dname, T, V))
            if impl == a and o and "us_graph" in r and "us_graph" in o:
                lines.append(f"| {a} | {b} | {dname} | {T} | {V} | {r['us_graph'] / o['us_graph']:.2f} "
                             f"| {r['us_eager'] / o['us_eager']:.2f} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true", help="T in {1, 8, 64}, V in {32000, 151936}")
    ap.add_argument("--ts", type=int, nargs="*")
    ap.add_argument("--vs", type=int, nargs="*")
    ap.add_argument("--dtypes", nargs="*", default=list(DTYPES))
    ap.add_argument("--peer", type=Path, default=ROOT / ".peer")
    ap.add_argument("--old", type=Path, help="another checkout whose guarded_kernels to measure beside")
    ap.add_argument("--plan", nargs="*", default=[], help="FIELD=VALUE plan overrides for our functions")
    args = ap.parse_args()
    ts = args.ts or ((1, 8, 64) if args.quick else TS)
    vs = args.vs or ((32000, 151936) if args.quick else VS)
    ours = {"guarded_kernels": importlib.import_module("guarded_kernels")}
    if args.old:
        ours["guarded_kernels@old"] = load_package(args.old)
    peer = None
    if (args.peer / "vllm_mrv2_sampler.py").exists():
        sys.path.insert(0, str(args.peer))
        peer = importlib.import_module("vllm_mrv2_sampler")
    overrides = {}
    for text in args.plan:
        field, value = text.split("=", 1)
        overrides[field] = json.loads(value) if value[:1] in "0123456789-tf[" else value
    # STRIDECHECK_COMMIT: the tree copied to a GPU machine may carry a stale .git.
    commit = os.environ.get("STRIDECHECK_COMMIT") or subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), commit=commit,
                peer=PEER if peer is not None else None, plan_overrides=overrides)
    print(json.dumps(meta), flush=True)
    rows = run(ts, vs, args.dtypes, impls(ours, peer, overrides))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sampling.json").write_text(json.dumps(dict(meta, rows=rows), indent=1) + "\n")
    write_md(args.out / "sampling.md", meta, rows)


if __name__ == "__main__":
    main()
