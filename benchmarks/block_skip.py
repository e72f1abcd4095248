"""gumbel_sample's exact block skip (``SKIP``, benchmarks/NOTES.md version 22) against the loop
without it, in one process, with ``benchmarks/sampling.py``'s harness and inputs (CUDA-graph
replays, rotated buffers, random-normal logits times 2 at temperature 0.9).

Configurations, each run pass after pass (``--passes``) on every case:

- ``no skip``: the launch as shipped with the skip switched off (``block_skip`` False);
- ``skip``: the launch as shipped with the skip on;
- ``skip maxnreg=64``: the skip with a 64-register cap (two 512-thread programs per SM);
- ``skip 2048x8`` / ``no skip 2048x8`` (any ``BLOCKxWARPS``): 2,048 columns and 8 warps a
  program, programs per row by the same wave rule as the shipped 4,096 / 16 (``_wave_splits``)
  over 32 warps per SM (four such programs);
- ``stages=N`` (with any of the above): the main loop's loads software-pipelined N deep
  (``loop_stages``: ``tl.range(num_stages=N)``, asynchronous copies into shared memory).

``resample ...``: resample's draw with its skip (``draw_skip``) on or off, on its shipped launches.

On the first pass each skip configuration's tokens on the first input set are compared with the
no-skip loop's at the same launch (``tokens_equal``: the skip must not change a draw).

Usage: ``PYTHONPATH=. python benchmarks/block_skip.py --out FILE.json [--passes N]
[--cases bfloat16:256:151936 ..] [--configs skip "skip 2048x8" ..]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import sampling as bench  # noqa: E402  (benchmarks/sampling.py: its harness and inputs)

sm = bench.sample_mod
rs = bench.resample_mod
IMPL = "guarded_kernels.gumbel_sample"
RESAMPLE = "guarded_kernels.resample"
CASES = [(d, T, V) for d in ("float32", "bfloat16") for T in (64, 256, 1024) for V in (32000, 151936, 262144)]
# resample's draw (resample.draw_skip) on its shipped launches (the one launch or the two).
RESAMPLE_CONFIGS = ["resample no skip", "resample skip", "resample skip stages=1"]
CONFIGS = ["no skip", "skip", "skip maxnreg=64", "skip 2048x8", "no skip 2048x8", "no skip stages=3",
           "skip stages=3", "skip 2048x8 stages=3", "skip 2048x8 stages=4", "no skip 2048x8 stages=3",
           "skip 2048x8 stages=6", "skip 1024x4 stages=4", "skip 1024x4 stages=6"]


def _wave_launch(block: int, warps: int, per_sm: int):
    """A launch_config with ``block`` / ``warps`` and programs per row by the wave rule."""

    def cfg(num_rows, vocab_size, dtype, device, use_fp64):
        slots = per_sm * sm.sm_count(device)
        return block, warps, sm._wave_splits(num_rows, triton.cdiv(vocab_size, block), slots)

    return cfg


def patches(label: str) -> list:
    """The module attributes a configuration sets (see the module docstring)."""
    if label.startswith("resample"):
        out = [(rs, "draw_skip", (lambda *a, on="no skip" not in label: on))]
        for word in label.split():
            if word.startswith("stages="):
                out.append((rs, "draw_stages", lambda dtype, device, n=int(word[7:]): n))
        return out
    out = [(sm, "block_skip", (lambda *a, on=not label.startswith("no skip"): on))]
    if "maxnreg=64" in label:
        out.append((sm, "max_registers", lambda dtype, device: 64))
    for word in label.split():
        if "x" in word and word.replace("x", "").isdigit():
            block, warps = (int(x) for x in word.split("x"))
            out.append((sm, "launch_config", _wave_launch(block, warps, 32 // warps)))
        if word.startswith("stages="):
            out.append((sm, "loop_stages", lambda dtype, device, skip, n=int(word[7:]): n))
    return out


def _impl(label: str) -> str:
    return RESAMPLE if label.startswith("resample") else IMPL


def _tokens(T: int, V: int, dname: str, label: str) -> torch.Tensor:
    calls, _ = bench._sample_calls(_impl(label), T, V, bench.DTYPES[dname])
    with bench._Patched(patches(label)):
        return calls[0]()


def main() -> None:
    args = bench.sweep_arguments(2, "DTYPE:T:V (default: both dtypes, T 64 / 256 / 1024, three V)",
                                 "default: CONFIGS", CONFIGS + RESAMPLE_CONFIGS)
    cases, bw, meta = bench.sweep_start(args.cases, CASES)
    rows = []
    for p in range(args.passes):
        for dname, T, V in cases:
            for label in args.configs or CONFIGS:
                row = dict(bench._variant(bw, label, _impl(label), T, V, dname, patches(label)), pass_=p)
                if p == 0 and "no skip" not in label:
                    # The same launch without the skip and the pipelining.
                    base = " ".join(["resample no skip"] if label.startswith("resample") else
                                    ["no skip"] + [w for w in label.split() if "x" in w and w[0].isdigit()])
                    row["tokens_equal"] = bool(torch.equal(_tokens(T, V, dname, label), _tokens(T, V, dname, base)))
                    print(json.dumps({"tokens_equal": row["tokens_equal"], "variant": label}), flush=True)
                rows.append(row)
            args.out.write_text(json.dumps(dict(meta, rows=rows), indent=1))


if __name__ == "__main__":
    main()
