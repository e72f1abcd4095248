"""``guarded_kernels.rejection_sample`` against vLLM 0.33.0's ``rejection_sample``, in one process
(issue 21, point 3).

Shapes as ``../shared/peer/peer_bench.py``'s resample set: T requests with one draft each (T draft
tokens), target logits [2T, V] (each request's draft row, then its bonus row), draft logits
[T, 1, V], ``randn * 2``, temperature 1.0, T in {1, 8, 64, 256, 1024}, V in {32000, 151936,
262144}, float32 and bfloat16. Scenario ``rejected`` (the default): every draft is rejected (its
token's target logit -60, draft logit +20, so ``p / q ~ e**-80``), so both verify a row pair and
draw from the residual: the whole step's worst case. Scenario ``accepted``: the draft logits equal
the target row (``p == q``: always accepted), so both verify and then draw the bonus token.

Times, in microseconds per call, the implementations interleaved round by round (order rotated):
``us_graph``, the median over CUDA-graph replays of a graph holding one call per input set (sets
rotated so that calls do not read each other's bytes from L2); ``us_eager``, the median over
samples of N back-to-back eager calls divided by N (one synchronize per sample: host overhead
included, the stride guard on). ``floor_us``: the bytes that must move (a target and a draft row
per request, read once) over the device-to-device copy bandwidth of this process. The peer is
imported from ``--peer`` (default ``.peer``: ``../shared/peer`` copied into an ignored folder of
the checkout, as the GPU machine gets no ``../shared``); without it only ours is measured.

Usage (GPU)::

    PYTHONPATH=. python benchmarks/rejection.py --out DIR [--peer .peer] [--ts ..] [--vs ..]
        [--dtypes ..] [--scenarios rejected accepted] [--budget-s 200]

writes ``DIR/rejection.json`` (``meta`` and ``rows``: ``impl`` ``guarded_kernels.rejection_sample``
or ``vllm-0.33.rejection_sample``, ``scenario``, ``dtype``, ``T``, ``V``, ``us_graph``,
``us_eager``, ...) and ``DIR/rejection.md`` (the side-by-side table with ratios ours / vLLM).
``--sass`` (no GPU needed, ``TRITON_INTERPRET=0``): the launcher's plan for each shape on an H200 and
its kernel's registers and SASS instructions, compiled offline for sm_90.
``--warm-parts N --warm-part I`` runs every I-th configuration once without timing or output:
N such processes side by side fill Triton's compile cache for the timed run. ``--smoke`` (CPU,
``TRITON_INTERPRET=1``): both implementations once at tiny sizes, checked, no timing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from guarded_kernels import PLACEHOLDER, rejection_sample  # noqa: E402
from guarded_kernels.noise import interpreting  # noqa: E402

OURS = "guarded_kernels.rejection_sample"
PEER = "vllm-0.33.rejection_sample"
TS = (1, 8, 64, 256, 1024)
VS = (32000, 151936, 262144)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
TARGET_RATIO = 0.6


@triton.jit
def _log1p(x):
    # The interpreter has no libdevice; the peer's resample kernel calls its log1p. CPU smoke only.
    return tl.log(1.0 + x)


def load_peer(path: Path):
    """vLLM's sampler module from ``path`` (the peer folder), or None when it is not there."""
    if not (path / "vllm_mrv2_sampler.py").exists():
        return None
    sys.path.insert(0, str(path))
    import vllm_mrv2_sampler as peer

    if interpreting():
        import types

        peer.tldevice = types.SimpleNamespace(log1p=_log1p)
    return peer


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth, bytes read plus written per second (median of 20 copies of
    1 GiB): the project's floor definition (benchmarks/sampling.py)."""
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    a.random_(0, 255)
    for _ in range(3):
        b.copy_(a)
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e-3)
    del a, b
    torch.cuda.empty_cache()
    return 2 * n / statistics.median(times)


def input_sets(dtype, T: int, V: int, scenario: str, device: str):
    """Input sets of one configuration (enough to exceed the L2 several times on a GPU), each a
    dict holding both implementations' arguments."""
    elt = torch.empty((), dtype=dtype).element_size()
    nbuf = max(2, min(16, -(-200_000_000 // (3 * T * V * elt)))) if device == "cuda" else 2
    gen = torch.Generator(device=device).manual_seed(T * 11 + V)
    r = torch.arange(T, device=device)
    sets = []
    for b in range(nbuf):
        target = (torch.randn(2 * T, V, device=device, generator=gen) * 2).to(dtype)
        x = (r * 7919 + b * 104729) % V
        if scenario == "rejected":
            draft = (torch.randn(T, 1, V, device=device, generator=gen) * 2).to(dtype)
            target[2 * r, x] = -60.0
            draft[r, 0, x] = 20.0
        else:
            draft = target[0::2].unsqueeze(1).clone()
        draft_sampled = torch.zeros(2 * T, dtype=torch.int64, device=device)
        draft_sampled[2 * r + 1] = x
        sets.append(dict(
            target=target, draft=draft, x=x, tokens=x.view(T, 1).clone(), draft_sampled=draft_sampled,
            cu64=torch.arange(0, 2 * T + 1, 2, device=device),
            cu32=torch.arange(0, 2 * T + 1, 2, dtype=torch.int32, device=device),
            pos=torch.arange(2 * T, device=device) + b, idx=torch.arange(T, dtype=torch.int32, device=device),
            eidx=torch.arange(T, dtype=torch.int32, device=device).repeat_interleave(2),
            elpos=torch.arange(2, dtype=torch.int32, device=device).repeat(T),
            temp=torch.ones(T, device=device), seed=torch.arange(T, dtype=torch.int64, device=device) + 1,
        ))
    return sets, 2 * T * V * elt


def ours_call(d):
    return rejection_sample(d["target"], d["draft"], d["tokens"], d["cu64"], d["idx"], d["temp"], d["seed"], d["pos"])


def peer_call(peer, d):
    return peer.rejection_sample(d["target"], d["draft"], d["draft_sampled"], d["cu32"], d["pos"], d["idx"],
                                 d["eidx"], d["elpos"], d["temp"], d["seed"], 1)


def check(impl: str, out, d, scenario: str) -> str | None:
    """What is wrong with one call's output for its scenario (None: nothing)."""
    T, V = d["tokens"].shape[0], d["target"].shape[1]
    if impl == OURS:
        tokens, acc = out.tokens, out.num_accepted.to(torch.int64)
    else:
        tokens, acc = out[0], out[1].to(torch.int64) - 1
    want = 0 if scenario == "rejected" else 1
    if not bool((acc == want).all()):
        return f"accepted counts {acc.unique().tolist()}, expected all {want}"
    emitted = tokens.gather(1, acc.view(T, 1)).view(T)
    if not bool(((emitted >= 0) & (emitted < V)).all()):
        return "a token out of range"
    if scenario == "rejected" and bool((emitted == d["x"]).any()):
        return "a rejected draft drawn again (its residual weight is 0)"
    if impl == OURS and scenario == "rejected" and not bool((tokens[:, 1] == PLACEHOLDER).all()):
        return "no placeholder after the emitted token"
    return None


def _capture(fns):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for fn in fns:
            fn()  # warm-up on the capture stream: compiles, allocates scratch outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for fn in fns:
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def _graph_samples(graph, ncalls: int, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e3 / ncalls)
    return out


def _eager_sample(fns, n: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        fns[i % len(fns)]()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / n


def measure(impls: dict, rounds: int, reps: int) -> dict:
    """Per implementation: (median graph-replay us per call, median eager us per call, their
    interquartile spreads relative to the median), interleaved round by round."""
    names = list(impls)
    for fns in impls.values():
        for fn in fns:
            fn()  # eager warm-up on the default stream (its scratch, the peer's allocations)
    graphs = {n: _capture(impls[n]) for n in names}
    est = {n: statistics.median(_graph_samples(graphs[n], len(impls[n]), 2)) for n in names}
    graph_t = {n: [] for n in names}
    eager_t = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            graph_t[n] += _graph_samples(graphs[n], len(impls[n]), reps)
        for n in order:
            eager_t[n].append(_eager_sample(impls[n], max(10, min(200, math.ceil(3000.0 / max(est[n], 5.0))))))
    del graphs
    torch.cuda.synchronize()
    return {n: (statistics.median(graph_t[n]), statistics.median(eager_t[n]), _spread(graph_t[n]),
                _spread(eager_t[n])) for n in names}


def _spread(xs) -> float:
    if len(xs) < 4:
        return float("nan")
    q = statistics.quantiles(xs, n=4)
    return (q[2] - q[0]) / statistics.median(xs)


def _r(x, nd=2):
    return None if x is None or x != x else round(x, nd)


def run(args) -> None:
    device = "cuda" if torch.cuda.is_available() and not interpreting() else "cpu"
    peer = load_peer(args.peer)
    if peer is None:
        print(f"peer not found at {args.peer} (copy ../shared/peer there): measuring {OURS} alone", flush=True)
    configs = [(s, d, V, T) for s in args.scenarios for d in args.dtypes for V in args.vs for T in args.ts]
    timed = not args.smoke and not args.warm_parts
    if timed and device != "cuda":
        sys.exit("benchmarks/rejection.py: timing needs a CUDA device (on the CPU interpreter: --smoke, or --sass)")
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                torch=torch.__version__, triton=triton.__version__,
                device=torch.cuda.get_device_name() if device == "cuda" else "cpu (Triton interpreter)",
                peer="vLLM 0.33.0 (vendored: vllm_mrv2_sampler.py)" if peer else None,
                guard=os.environ.get("STRIDECHECK_GUARD", "on (default)"), rounds=args.rounds, reps=args.reps)
    if timed:
        bw = copy_bandwidth()
        meta["copy_bandwidth_GBps"] = round(bw / 1e9, 1)
    print(json.dumps(meta), flush=True)
    rows, skipped, problems = [], [], []
    t0 = time.monotonic()
    for job, (scenario, dname, V, T) in enumerate(configs):
        if args.warm_parts and job % args.warm_parts != args.warm_part:
            continue
        if time.monotonic() - t0 > args.budget_s:
            skipped.append(dict(scenario=scenario, dtype=dname, T=T, V=V, why="time budget"))
            continue
        try:
            rows += run_config(peer, scenario, dname, T, V, device, timed, problems, args,
                               bw if timed else float("nan"))
        except Exception as exc:  # noqa: BLE001 - one configuration's failure must not lose the others
            import traceback

            traceback.print_exc()
            skipped.append(dict(scenario=scenario, dtype=dname, T=T, V=V, why=f"{type(exc).__name__}: {exc}"[:300]))
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        if timed:
            # After every configuration: a run cut short keeps what it measured.
            save(args.out, dict(meta, elapsed_s=round(time.monotonic() - t0, 1), rows=rows, skipped=skipped,
                                check_failures=problems))
    meta["elapsed_s"] = round(time.monotonic() - t0, 1)
    if not timed:
        # Warm-up or smoke: nothing measured, nothing written.
        if problems or skipped:
            sys.exit(1)
        print(f"{len(configs)} configurations run once in {meta['elapsed_s']} s: checks passed", flush=True)
        return
    result = dict(meta, rows=rows, skipped=skipped, check_failures=problems)
    save(args.out, result)
    print(render_md(result), flush=True)
    if problems:
        sys.exit(1)


def save(out: Path, result: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "rejection.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "rejection.md").write_text(render_md(result))


def run_config(peer, scenario, dname, T, V, device, timed, problems, args, bw) -> list[dict]:
    """One configuration: both implementations checked once, then (timed) measured. Returns its rows."""
    sets, nbytes = input_sets(DTYPES[dname], T, V, scenario, device)
    impls = {OURS: [lambda d=d: ours_call(d) for d in sets]}
    if peer is not None:
        impls[PEER] = [lambda d=d: peer_call(peer, d) for d in sets]
    for name, fns in impls.items():
        problem = check(name, fns[0](), sets[0], scenario)
        if problem:
            problems.append(dict(impl=name, scenario=scenario, dtype=dname, T=T, V=V, problem=problem))
            print(f"CHECK FAILED {name} {scenario} {dname} T={T} V={V}: {problem}", flush=True)
    if not timed:
        print(f"ran {scenario} {dname} T={T} V={V}: {', '.join(impls)}", flush=True)
        return []
    rows = []
    floor = nbytes / bw * 1e6
    for name, (g, e, sg, se) in measure(impls, args.rounds, args.reps).items():
        row = dict(impl=name, scenario=scenario, dtype=dname, T=T, V=V, us_graph=_r(g), us_eager=_r(e),
                   spread_graph=_r(sg, 4), spread_eager=_r(se, 4), floor_us=_r(floor, 3),
                   frac_floor_graph=_r(floor / g, 4), nbuf=len(sets))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def render_md(res: dict) -> str:
    lines = [
        "# rejection_sample: guarded_kernels vs vLLM 0.33.0",
        "",
        f"{res['device']}, torch {res['torch']}, triton {res['triton']}, {res['date']}; copy bandwidth "
        f"{res.get('copy_bandwidth_GBps', 'n/a')} GB/s; stride guard {res['guard']}; {res.get('elapsed_s')} s. "
        "T requests with one draft each; us per call, medians (graph: CUDA-graph replay; eager: back-to-back "
        f"calls, host included); ratio = ours / vLLM (target <= {TARGET_RATIO}).",
        "",
        "| scenario | dtype | T | V | ours graph | vLLM graph | ratio graph | ours eager | vLLM eager | ratio eager "
        "| ours % floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    by = {(r["impl"], r["scenario"], r["dtype"], r["T"], r["V"]): r for r in res["rows"]}
    worst = []
    for (impl, scenario, dname, T, V), o in by.items():
        if impl != OURS:
            continue
        v = by.get((PEER, scenario, dname, T, V))
        rg = o["us_graph"] / v["us_graph"] if v and v["us_graph"] else None
        re_ = o["us_eager"] / v["us_eager"] if v and v["us_eager"] else None
        worst += [x for x in (rg, re_) if x is not None]

        def fmt(x, nd=1):
            return "-" if x is None else f"{x:,.{nd}f}"

        lines.append(f"| {scenario} | {dname} | {T} | {V:,} | {fmt(o['us_graph'])} | {fmt(v and v['us_graph'])} "
                     f"| {fmt(rg, 2)} | {fmt(o['us_eager'])} | {fmt(v and v['us_eager'])} | {fmt(re_, 2)} "
                     f"| {100 * (o['frac_floor_graph'] or 0):.1f}% |")
    if worst:
        met = max(worst) <= TARGET_RATIO
        lines += ["", f"Largest ratio: {max(worst):.2f}: the target (<= {TARGET_RATIO} at every measured row) is "
                      f"{'met' if met else 'NOT met'}."]
    for s in res.get("skipped", []):
        lines.append(f"- not measured: {s}")
    for p in res.get("check_failures", []):
        lines.append(f"- CHECK FAILED: {p}")
    return "\n".join(lines) + "\n"


def sass_table(dtypes, vs, ts) -> None:
    """Registers per thread, SASS instructions and stack bytes of the kernels the launcher builds on
    an H200 (132 multiprocessors, sm_90) for these shapes, compiled here without a GPU by Triton's
    own ptxas / cuobjdump / nvdisasm (the wheel's). Code generation only: speed needs the GPU."""
    import importlib
    import re
    import subprocess
    import tempfile

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    mod = importlib.import_module("guarded_kernels.rejection")
    mod.sm_count = lambda device: 132
    fn = mod._rejection_kernel
    ints = {"draft_tokens_ptr": "*i64", "cu_num_logits_ptr": "*i64", "idx_mapping_ptr": "*i32",
            "temperature_ptr": "*fp32", "seed_ptr": "*i64", "pos_ptr": "*i64", "out_tokens_ptr": "*i64",
            "out_accepted_ptr": "*i32", "stats_ptr": "*i32", "best_ptr": "*i64", "done_ptr": "*i32"}
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    seen = {}
    for dname in dtypes:
        for V in vs:
            for T in ts:
                plan = mod._plan(mod.launch_config, lambda *a: True, mod.max_registers, T, 1, V, DTYPES[dname],
                                 torch.device("cuda"), True, True)
                consts = {k: v for k, v in plan.meta.items() if k in fn.arg_names}
                for param in fn.params:
                    if param.is_constexpr and param.has_default and param.name not in consts:
                        consts[param.name] = param.default
                key = (dname, tuple(sorted(consts.items())), plan.meta["num_warps"], plan.meta.get("maxnreg"))
                if key not in seen:
                    sig = {a: "constexpr" if a in consts else ints.get(a, "*bf16" if dname == "bfloat16" else "*fp32")
                           if a.endswith("_ptr") else "i64" if "stride" in a else "i32" for a in fn.arg_names}
                    # A launch specialises the logits' pointers and row strides on 16-byte alignment.
                    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
                             if a in ("target_ptr", "target_stride_0", "draft_ptr", "draft_stride_0", "draft_stride_1")}
                    options = {k: plan.meta[k] for k in ("num_warps", "maxnreg") if k in plan.meta}
                    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                                       target=GPUTarget("cuda", 90, 32), options=options)
                    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
                        f.write(k.asm["cubin"])
                    usage = subprocess.run([tools / "cuobjdump", "-res-usage", f.name], capture_output=True,
                                           text=True).stdout
                    sass = subprocess.run([tools / "nvdisasm", f.name], capture_output=True, text=True).stdout
                    count = sum(1 for line in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+[A-Z@{]", line))
                    seen[key] = (int(re.search(r"REG:(\d+)", usage).group(1)), count,
                                 int(re.search(r"STACK:(\d+)", usage).group(1)))
                regs, count, stack = seen[key]
                print(json.dumps(dict(dtype=dname, T=T, V=V, programs_per_request=plan.num_splits,
                                      units=plan.num_units, exchange=plan.exchange,
                                      tickets=plan.meta.get("TICKETS"), block=plan.meta["BLOCK"],
                                      num_warps=plan.meta["num_warps"], maxnreg=plan.meta.get("maxnreg"),
                                      registers=regs, sass_instructions=count,
                                      stack_bytes=stack)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--peer", type=Path, default=ROOT / ".peer")
    ap.add_argument("--ts", type=int, nargs="*", default=list(TS))
    ap.add_argument("--vs", type=int, nargs="*", default=list(VS))
    ap.add_argument("--dtypes", nargs="*", default=list(DTYPES), choices=list(DTYPES))
    ap.add_argument("--scenarios", nargs="*", default=["rejected"], choices=["rejected", "accepted"])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per configuration")
    ap.add_argument("--reps", type=int, default=4, help="graph replays per implementation per round")
    ap.add_argument("--budget-s", type=float, default=200.0, help="start no configuration after this many seconds")
    ap.add_argument("--warm-parts", type=int, default=0, help="compile warm-up: N processes side by side")
    ap.add_argument("--warm-part", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter: tiny sizes, both implementations once")
    ap.add_argument("--sass", action="store_true",
                    help="no GPU needed: registers and instructions of the H200 kernels for these shapes (sm_90)")
    args = ap.parse_args()
    if args.sass:
        sass_table(args.dtypes, args.vs, args.ts)
        return
    if args.smoke:
        args.ts, args.vs = [1, 3], [300]
    run(args)


if __name__ == "__main__":
    main()
