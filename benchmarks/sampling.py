"""Sampling throughput on a CUDA device against the memory-bandwidth floor (issues 5 and 6).

One run measures, at T in {1, 8, 64, 256, 1024}, V in {32000, 151936, 262144}, float32 and
bfloat16: ``guarded_kernels.gumbel_sample``, ``guarded_kernels.resample`` (T requests, each with
one rejected draft: the residual path, which reads a target and a draft row), a torch eager
Gumbel-max and ``torch.multinomial(softmax)``. Times are medians, in microseconds, of CUDA-graph
replays (``us_graph``, per call, inputs rotated over several buffers so that repeated calls do not
read from L2) and of eager calls (``us_eager``, the guard's host cost included). The floor is the
bytes each must move at least (the logits read once; for resample a target and a draft row per
request) over the measured device-to-device copy bandwidth (bytes read plus written per second).

Usage: ``PYTHONPATH=. python benchmarks/sampling.py --out DIR [--quick] [--variants] [--ts ..] [--vs ..]
[--impls ..] [--launch-floor]``. Writes ``DIR/sampling.json`` and ``DIR/sampling.md``
(``--launch-floor``: also ``DIR/launch_floor.json``, an empty Triton kernel's graph-replay time,
with the table's harness); ``--variants`` also runs the version-7 experiments of benchmarks/NOTES.md (scratch padding, prefetch, splits, resample launch
configurations; each row with the registers of the kernels it compiled) into ``DIR/variants.json``.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import statistics
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from guarded_kernels import gumbel_sample, resample  # noqa: E402

sample_mod = importlib.import_module("guarded_kernels.sample")
resample_mod = importlib.import_module("guarded_kernels.resample")

TS = (1, 8, 64, 256, 1024)
VS = (32000, 151936, 262144)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth, bytes read plus written per second (median of 20)."""
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
    return 2 * n / statistics.median(times)


def _graph_us(fn_list, replays: int = 20) -> float:
    """Median per-call time of a CUDA graph holding one call per element of ``fn_list``."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for fn in fn_list:
            fn()  # warm-up: compile, allocate the scratch outside capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for fn in fn_list:
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
        times.append(s.elapsed_time(e) * 1e3 / len(fn_list))
    del graph
    return statistics.median(times)


def _eager_us(fn_list, reps: int = 30) -> float:
    for fn in fn_list:
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        fn = fn_list[i % len(fn_list)]
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def parse_cases(texts) -> list[tuple[str, int, int]]:
    """``DTYPE:T:V`` strings (a sweep script's ``--cases``) as (dtype name, T, V) tuples."""
    out = []
    for text in texts:
        dname, T, V = text.split(":")
        out.append((dname, int(T), int(V)))
    return out


def run_meta(bw: float) -> dict:
    """The header of a results JSON, printed as it is made: device, torch, triton, date (UTC) and
    the measured copy bandwidth ``bw`` (bytes per second) in GB/s."""
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                copy_bandwidth_GBps=bw / 1e9)
    print(json.dumps(meta), flush=True)
    return meta


def sweep_arguments(passes: int, cases_help: str, configs_help: str, configs=None) -> argparse.Namespace:
    """The command line a configuration sweep (block_skip.py, resample_exchange.py) parses:
    ``--out FILE``, ``--passes`` (default ``passes``), ``--cases DTYPE:T:V ..`` and ``--configs ..``
    (limited to ``configs`` when given)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--passes", type=int, default=passes)
    ap.add_argument("--cases", nargs="*", help=cases_help)
    ap.add_argument("--configs", nargs="*", choices=configs, help=configs_help)
    return ap.parse_args()


def sweep_start(case_texts, default_cases) -> tuple[list, float, dict]:
    """(cases, copy bandwidth in bytes per second, results header) of a sweep: ``--cases`` parsed
    (:func:`parse_cases`), or ``default_cases``; the bandwidth measured, the header printed."""
    cases = parse_cases(case_texts) if case_texts else default_cases
    bw = copy_bandwidth()
    return cases, bw, run_meta(bw)


def _buffers(T: int, V: int, elt: int, per_call_rows: int) -> int:
    # Rotate over enough input sets that together they exceed the L2 (60 MB) several times.
    one = per_call_rows * V * elt
    return max(2, min(16, -(-200_000_000 // max(one, 1))))


def _sample_calls(impl: str, T: int, V: int, dtype: torch.dtype):
    elt = torch.tensor([], dtype=dtype).element_size()
    nbuf = _buffers(T, V, elt, T * (2 if impl == "guarded_kernels.resample" else 1))
    gen = torch.Generator(device="cuda").manual_seed(T * 7 + V)
    temp = torch.full((T,), 0.9, device="cuda")
    seed = torch.arange(T, dtype=torch.int64, device="cuda") + 1
    idx = torch.arange(T, dtype=torch.int32, device="cuda")
    calls = []
    for b in range(nbuf):
        if impl == "guarded_kernels.resample":
            target = (torch.randn(2 * T, V, device="cuda", generator=gen) * 2).to(dtype)
            draft = (torch.randn(T, 1, V, device="cuda", generator=gen) * 2).to(dtype)
            cu = torch.arange(0, 2 * T + 1, 2, device="cuda")
            acc = torch.zeros(T, dtype=torch.int64, device="cuda")
            tokens = torch.zeros(T, 1, dtype=torch.int64, device="cuda")
            pos = torch.arange(2 * T, device="cuda") + b

            def call(target=target, draft=draft, tokens=tokens, acc=acc, cu=cu, pos=pos):
                return resample(target, draft, tokens, acc, cu, idx, temp, seed, pos)

            bytes_moved = 2 * T * V * elt
        else:
            logits = (torch.randn(T, V, device="cuda", generator=gen) * 2).to(dtype)
            pos = torch.arange(T, device="cuda") + b
            if impl == "guarded_kernels.gumbel_sample":

                def call(logits=logits, pos=pos):
                    return gumbel_sample(logits, idx, temp, seed, pos)

            elif impl == "torch_gumbel":

                def call(logits=logits):
                    x = logits.float() / temp[:, None]
                    return (x - torch.empty_like(x).exponential_().log_()).argmax(-1)

            else:

                def call(logits=logits):
                    return torch.multinomial(torch.softmax(logits.float() / temp[:, None], -1), 1)

            bytes_moved = T * V * elt
        calls.append(call)
    return calls, bytes_moved


@triton.jit
def _empty_kernel(x_ptr):
    # Nothing: what a launch costs by itself under graph replay.
    pass


def launch_floor() -> list[dict]:
    """Graph-replay time of an empty Triton kernel (the harness of the table): one program of 4
    warps, and gumbel_sample's own grid and warps at T = 1 and 8, V = 151,936 and 262,144."""
    x = torch.empty(1, device="cuda")
    rows = []
    grids = [("one program", 1, 1, 4)]
    for T in (1, 8):
        for V in (151936, 262144):
            _, warps, splits = sample_mod.launch_config(T, V, torch.float32, torch.device("cuda"), False)
            grids.append((f"gumbel_sample grid T={T} V={V}", T, splits, warps))
    for label, rows_, splits, warps in grids:
        def call(rows_=rows_, splits=splits, warps=warps):
            _empty_kernel[(rows_, splits)](x, num_warps=warps)

        row = dict(impl="empty_triton_kernel", grid=label, programs=rows_ * splits, num_warps=warps,
                   us_graph=round(_graph_us([call] * 8), 2))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


IMPLS = ("guarded_kernels.gumbel_sample", "guarded_kernels.resample", "torch_gumbel", "torch_multinomial")


def run_table(bw: float, ts, vs, impls) -> list[dict]:
    rows = []
    for dname, dtype in DTYPES.items():
        for V in vs:
            for T in ts:
                for impl in impls:
                    calls, nbytes = _sample_calls(impl, T, V, dtype)
                    floor_us = nbytes / bw * 1e6
                    try:
                        g = _graph_us(calls)
                    except Exception as exc:  # torch.multinomial may refuse capture
                        print(f"graph capture failed for {impl}: {type(exc).__name__}: {exc}")
                        g = float("nan")
                    e = _eager_us(calls)
                    best = g if g == g else e
                    row = dict(impl=impl, dtype=dname, T=T, V=V, us_graph=round(g, 2), us_eager=round(e, 2),
                               frac_floor=round(floor_us / best, 4), floor_us=round(floor_us, 2))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    del calls
                    torch.cuda.empty_cache()
    return rows


def _compiled_regs(fn) -> list[tuple[int, int]]:
    """(id, registers per thread) of every kernel ``fn`` has compiled so far (Triton 3.x caches)."""
    out = []
    for cache in getattr(fn, "device_caches", {}).values():
        kernels = cache[0] if isinstance(cache, tuple) else cache
        for k in kernels.values():
            out.append((id(k), getattr(k, "n_regs", -1)))
    return out


class _Patched:
    """Set module attributes for the duration of a ``with`` block."""

    def __init__(self, patches):
        self.patches = patches
        self.saved = []

    def __enter__(self):
        for mod, name, value in self.patches:
            self.saved.append((mod, name, getattr(mod, name)))
            setattr(mod, name, value)

    def __exit__(self, *exc):
        for mod, name, value in reversed(self.saved):
            setattr(mod, name, value)


def _variant(bw, label, impl, T, V, dname, patches, replays=10) -> dict:
    fn = sample_mod._gumbel_sample_kernel if impl == "guarded_kernels.gumbel_sample" else resample_mod._resample_kernel
    seen = {i for i, _ in _compiled_regs(fn)}
    with _Patched(patches):
        try:
            calls, nbytes = _sample_calls(impl, T, V, DTYPES[dname])
            g = _graph_us(calls, replays=replays)
        except Exception as exc:
            print(f"variant {label} failed: {type(exc).__name__}: {exc}", flush=True)
            g, nbytes = float("nan"), 1
    regs = sorted({r for i, r in _compiled_regs(fn) if i not in seen})
    row = dict(variant=label, impl=impl, dtype=dname, T=T, V=V, us_graph=round(g, 2),
               frac_floor=round(nbytes / bw * 1e6 / g, 4), new_kernel_regs=regs)
    print(json.dumps(row), flush=True)
    return row


def fixed_launch(block: int, warps: int, splits: int):
    """A ``launch_config`` (gumbel_sample's or resample's) that returns (block, warps, splits)
    whatever the launch: the configuration a variant measures."""

    def cfg(*args, **kwargs):
        return block, warps, splits

    return cfg


def run_variants(bw: float) -> list[dict]:
    """Version 7 experiments (benchmarks/NOTES.md): merge-scratch padding at few rows, float32
    prefetch, splits at T = 256, resample's draw prefetch and launch configuration."""
    import guarded_kernels._workspace as ws

    out = []
    gs, rs = "guarded_kernels.gumbel_sample", "guarded_kernels.resample"
    # 1. One cache line per row of the merge scratch against adjacent words, few rows.
    for dname in DTYPES:
        for T, V in ((1, 262144), (8, 262144), (8, 151936), (64, 262144)):
            for row_bytes in (8, 128):
                out.append(_variant(bw, f"row_bytes={row_bytes}", gs, T, V, dname, [(ws, "ROW_BYTES", row_bytes)]))
        for T, V in ((8, 262144), (64, 151936)):
            for row_bytes in (8, 128):
                out.append(_variant(bw, f"row_bytes={row_bytes}", rs, T, V, dname, [(ws, "ROW_BYTES", row_bytes)]))
    # 2. Few rows: programs per multiprocessor and block (with the padded scratch).
    for dname in DTYPES:
        for T in (1, 8):
            for block, warps, per_sm in ((2048, 8, 2), (1024, 4, 8)):
                def scfg(num_rows, vocab_size, dt, device, use_fp64, block=block, warps=warps, per_sm=per_sm):
                    progs = per_sm * torch.cuda.get_device_properties(device).multi_processor_count
                    return block, warps, max(1, min(-(-progs // num_rows), triton.cdiv(vocab_size, block), 512))

                out.append(_variant(bw, f"small_t block={block} warps={warps} per_sm={per_sm}", gs, T, 262144, dname,
                                    [(sample_mod, "launch_config", scfg)]))
    # 3. float32 prefetch (registers permitting two programs per SM) and splits at T = 256.
    for T, V in ((256, 151936), (256, 262144), (1024, 151936), (1024, 262144)):
        for pf in (False, True):
            out.append(_variant(bw, f"fp32 prefetch={pf}", gs, T, V, "float32",
                                [(sample_mod, "loop_prefetch", lambda dt, dev, pf=pf: pf)]))
    for dname in DTYPES:
        for splits in (1, 2, 3):
            for block, warps in ((4096, 16), (2048, 8)):
                out.append(_variant(bw, f"T256 splits={splits} block={block} warps={warps}", gs, 256, 151936, dname,
                                    [(sample_mod, "launch_config", fixed_launch(block, warps, splits))]))
    # 4. resample: draw prefetch and block / warps.
    for dname in DTYPES:
        for T, V in ((1024, 151936), (256, 151936)):
            for pf in (False, True):
                for block, warps in ((2048, 8), (4096, 8), (1024, 4)):
                    def rcfg(num_reqs, vocab_size, dt, device, block=block, warps=warps):
                        progs = 4 * torch.cuda.get_device_properties(device).multi_processor_count
                        return block, warps, max(1, min(-(-progs // num_reqs), triton.cdiv(vocab_size, block), 256))

                    out.append(_variant(bw, f"resample prefetch={pf} block={block} warps={warps}", rs, T, V, dname,
                                        [(resample_mod, "draw_prefetch", lambda dt, dev, pf=pf: pf),
                                         (resample_mod, "launch_config", rcfg)]))
    return out


RESAMPLE_CONFIGS = {"float32": ((1024, 4), (2048, 8), (2048, 4)), "bfloat16": ((4096, 8), (2048, 8), (2048, 4), (1024, 4))}


def run_resample_sweep(bw: float) -> list[dict]:
    """Version 16 (benchmarks/NOTES.md): resample's (BLOCK, warps, programs per request) at the
    issue's sizes; one program per request runs both passes in one launch (PHASE 2), more run
    the partial log-sum-exps and the draw as two launches."""
    rs = "guarded_kernels.resample"
    out = []
    for dname, configs in RESAMPLE_CONFIGS.items():
        for T, V in ((256, 151936), (256, 262144), (1024, 151936), (1024, 262144)):
            for block, warps in configs:
                for splits in ((1, 2, 3, 4, 6) if T == 256 else (1, 2)):
                    out.append(_variant(bw, f"block={block} warps={warps} splits={splits}", rs, T, V, dname,
                                        [(resample_mod, "launch_config", fixed_launch(block, warps, splits))]))
    return out


def write_md(path: Path, meta: dict, rows: list[dict]) -> None:
    lines = [
        "# Sampling throughput",
        "",
        f"{meta['device']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}. "
        f"Copy bandwidth {meta['copy_bandwidth_GBps']:.0f} GB/s (read + write). "
        "us_graph: median per call over CUDA-graph replays; us_eager: median eager call (guard included); "
        "frac_floor: byte floor / us_graph.",
        "",
        "| impl | dtype | T | V | us_graph | us_eager | floor_us | frac_floor |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['impl']} | {r['dtype']} | {r['T']} | {r['V']} | {r['us_graph']} | {r['us_eager']} | "
            f"{r['floor_us']} | {r['frac_floor']:.1%} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    ap.add_argument("--quick", action="store_true", help="T in {1, 1024}, V = 262144 only")
    ap.add_argument("--variants", action="store_true")
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--resample-sweep", action="store_true",
                    help="resample per (BLOCK, warps, programs per request) (DIR/resample_sweep.json)")
    ap.add_argument("--launch-floor", action="store_true",
                    help="also time an empty Triton kernel under graph replay (DIR/launch_floor.json)")
    ap.add_argument("--ts", type=int, nargs="*", help="row counts of the table (default: the issue's)")
    ap.add_argument("--vs", type=int, nargs="*", help="vocabularies of the table (default: the issue's)")
    ap.add_argument("--impls", nargs="*", choices=IMPLS, help="implementations of the table (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    bw = copy_bandwidth()
    meta = run_meta(bw)
    if args.launch_floor:
        (args.out / "launch_floor.json").write_text(json.dumps(dict(meta, rows=launch_floor()), indent=1))
    if args.variants:
        variants = run_variants(bw)
        (args.out / "variants.json").write_text(json.dumps(dict(meta, rows=variants), indent=1))
    if args.resample_sweep:
        sweep = run_resample_sweep(bw)
        (args.out / "resample_sweep.json").write_text(json.dumps(dict(meta, rows=sweep), indent=1))
    if not args.no_table:
        ts, vs = ((1, 8, 1024), (262144,)) if args.quick else (TS, VS)
        rows = run_table(bw, args.ts or ts, args.vs or vs, args.impls or IMPLS)
        (args.out / "sampling.json").write_text(json.dumps(dict(meta, rows=rows), indent=1))
        write_md(args.out / "sampling.md", meta, rows)


if __name__ == "__main__":
    main()
