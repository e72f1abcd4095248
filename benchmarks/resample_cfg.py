"""``resample``'s launch configuration, A/B in one process (issue 6): the committed
``launch_config`` against fixed (BLOCK, warps, programs per request) choices, passes interleaved
(committed, then each configuration, then again), each configuration's mean over the passes and its
ratio to the committed one's. Times are medians of CUDA-graph replays per call, with
``benchmarks/sampling.py``'s harness and inputs (T requests with one rejected draft each: the
residual path, a target and a draft row per request; buffers rotated past the L2); the inputs of a
case are built once and shared by every configuration. Configurations are applied by replacing
``guarded_kernels.resample.launch_config`` for the duration of a measurement, as
``sampling.py``'s variants do.

Usage: ``PYTHONPATH=. python benchmarks/resample_cfg.py --out FILE.json [--passes N]
[--dtypes bfloat16 ..] [--ts 256 1024] [--vs 151936 262144] [--configs 4096x8x1 2048x8x2 ..]``.
A configuration is ``BLOCKxWARPSxSPLITS``; ``committed`` (always measured first in each pass) is
whatever ``launch_config`` returns, recorded per case in the output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import sampling as bench  # noqa: E402  (benchmarks/sampling.py: its harness and inputs)

R = bench.resample_mod
IMPL = "guarded_kernels.resample"


def parse_config(text: str) -> tuple[int, int, int]:
    """``"4096x8x1"`` -> (4096, 8, 1): BLOCK, num_warps, programs per request."""
    parts = text.split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"configuration {text!r} is not BLOCKxWARPSxSPLITS (e.g. 4096x8x1)")
    block, warps, splits = (int(p) for p in parts)
    if block & (block - 1):
        raise argparse.ArgumentTypeError(f"BLOCK {block} of {text!r} is not a power of two")
    return block, warps, splits


fixed = bench.fixed_launch  # a launch_config returning (block, warps, splits) whatever the launch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--replays", type=int, default=30)
    ap.add_argument("--dtypes", nargs="*", default=["bfloat16"], choices=list(bench.DTYPES))
    ap.add_argument("--ts", type=int, nargs="*", default=[256, 1024])
    ap.add_argument("--vs", type=int, nargs="*", default=[151936, 262144])
    ap.add_argument("--configs", nargs="*", default=["4096x8x1", "2048x8x2"])
    args = ap.parse_args()
    configs = {name: parse_config(name) for name in args.configs}
    bw = bench.copy_bandwidth()
    source = Path(R.__file__).read_bytes()
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), copy_bandwidth_GBps=bw / 1e9,
                resample_py_sha256=hashlib.sha256(source).hexdigest(), passes=args.passes, replays=args.replays)
    print(json.dumps(meta), flush=True)
    dev = torch.device("cuda")
    cases = [(d, T, V) for d in args.dtypes for T in args.ts for V in args.vs]
    committed = {c: list(R.launch_config(c[1], c[2], bench.DTYPES[c[0]], dev)) for c in cases}
    inputs = {}
    rows = []

    def save(summary=None):
        out = dict(meta, committed_config={f"{d} T={T} V={V}": cfg for (d, T, V), cfg in committed.items()}, rows=rows)
        if summary is not None:
            out["summary"] = summary
        args.out.write_text(json.dumps(out, indent=1))

    for p in range(1, args.passes + 1):
        for case in cases:
            dname, T, V = case
            if case not in inputs:
                inputs[case] = bench._sample_calls(IMPL, T, V, bench.DTYPES[dname])
            calls, nbytes = inputs[case]
            for name in ["committed", *configs]:
                patches = [] if name == "committed" else [(R, "launch_config", fixed(*configs[name]))]
                seen = {i for i, _ in bench._compiled_regs(R._resample_kernel)}
                try:
                    with bench._Patched(patches):
                        us = bench._graph_us(calls, replays=args.replays)
                except Exception as exc:  # a configuration the launcher or the machine refuses
                    print(f"  {name} failed: {type(exc).__name__}: {exc}", flush=True)
                    us = float("nan")
                regs = sorted({r for i, r in bench._compiled_regs(R._resample_kernel) if i not in seen})
                rows.append(dict(config=name, launch=list(configs.get(name, committed[case])), **{"pass": p},
                                 dtype=dname, T=T, V=V, us_graph=round(us, 2),
                                 frac_floor=round(nbytes / bw * 1e6 / us, 4), new_kernel_regs=regs))
                print(json.dumps(rows[-1]), flush=True)
                save()
    summary = []
    for dname, T, V in cases:
        means = {}
        for name in ["committed", *configs]:
            vals = [r["us_graph"] for r in rows if (r["config"], r["dtype"], r["T"], r["V"]) == (name, dname, T, V)
                    and r["us_graph"] == r["us_graph"]]
            means[name] = sum(vals) / len(vals) if vals else float("nan")
        for name, mean in means.items():
            launch = list(configs.get(name, committed[(dname, T, V)]))
            summary.append(dict(config=name, launch=launch, dtype=dname, T=T, V=V, us_mean=round(mean, 2),
                                vs_committed=round(mean / means["committed"] - 1, 4)))
            print(f"{dname[:4]} T={T:5d} V={V:7d} {name:>10} {launch}: {mean:8.2f} us  "
                  f"{mean / means['committed'] - 1:+.1%}", flush=True)
    save(summary)


if __name__ == "__main__":
    main()
