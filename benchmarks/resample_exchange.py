"""resample's one-launch exchange path (``PHASE == 4``, benchmarks/NOTES.md version 20) against
its two launches, in one process, with ``benchmarks/sampling.py``'s harness and inputs
(CUDA-graph replays, rotated buffers, T requests with one rejected draft each).

Each configuration (BLOCK, warps, columns per program, the two reads' L2 eviction policies, both
rows in one log-sum-exp loop) runs after the two-launch default of the same case, pass after
pass (``--passes``), and its tokens on the first input set are compared with the two launches'
at the same BLOCK and programs per request (the same chunks, so the same partial log-sum-exps:
equal tokens expected, ``tokens_equal``).

Usage: ``PYTHONPATH=. python benchmarks/resample_exchange.py --out FILE.json [--passes N]
[--cases float32:256:151936 ..] [--configs 2048x8:8192:el-ef ..]``. A configuration is
``BLOCKxWARPS:COLUMNS[:EVICT][:single][:skipN]``, EVICT ``el-ef`` for evict_last then evict_first
(``en`` or a lone ``-`` for the default policy), ``single`` for one row at a time in the
log-sum-exp pass, then optionally ``skipN`` for the draw's block skip with N pipeline stages;
``launch:BLOCKxWARPS:PROGRAMS`` is the two launches at that configuration.
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

rs = bench.resample_mod
IMPL = "guarded_kernels.resample"

CASES = [(d, T, V) for d in ("float32", "bfloat16") for T in (256, 1024) for V in (151936, 262144)]
SWEEP = {
    "float32": [f"{bw}:{c}:{e}" for bw in ("2048x8", "1024x4") for c in (4096, 8192, 16384) for e in ("-", "el-ef")]
    + ["2048x8:8192:-:single"],
    "bfloat16": [f"{bw}:{c}:{e}" for bw in ("2048x8", "4096x8") for c in (8192, 16384, 32768) for e in ("-", "el-ef")]
    + ["2048x8:16384:-:single"],
}
POLICY = {"-": "", "el": "evict_last", "ef": "evict_first", "en": ""}


def parse_config(text: str, V: int) -> tuple[str, rs.ExchangeConfig]:
    parts = text.split(":")
    block, warps = (int(x) for x in parts[0].split("x"))
    columns = max(int(parts[1]), block)
    evict = parts[2] if len(parts) > 2 else "-"
    evict_lse, evict_draw = ("", "") if evict == "-" else (POLICY[p] for p in evict.split("-"))
    pair = not (len(parts) > 3 and parts[3] == "single")  # a fifth field is skip_patches'
    return text, rs.ExchangeConfig(block, warps, triton.cdiv(V, columns), evict_lse, evict_draw, pair)


def skip_patches(text: str) -> list:
    """The draw's block skip a configuration asks for: a last field ``skipN`` switches it on with
    its loads pipelined N deep (``resample.draw_skip`` / ``draw_stages``); none otherwise."""
    last = text.split(":")[-1]
    if not (last.startswith("skip") and last[4:].isdigit()):
        return []
    return [(rs, "draw_skip", lambda *a: True), (rs, "draw_stages", lambda dtype, device, n=int(last[4:]): n)]


def _tokens_equal(T: int, V: int, dname: str, cfg) -> bool:
    """The exchange's tokens against the two launches' at the same chunks, on one input set."""
    calls, _ = bench._sample_calls(IMPL, T, V, bench.DTYPES[dname])
    splits = min(cfg.num_splits, torch.cuda.get_device_properties(0).multi_processor_count)
    saved = rs.exchange_config, rs.launch_config
    try:
        rs.exchange_config = lambda *a, **k: cfg
        got = calls[0]()
        rs.exchange_config = lambda *a, **k: None
        rs.launch_config = lambda *a, **k: (cfg.block, cfg.num_warps, splits)
        want = calls[0]()
    finally:
        rs.exchange_config, rs.launch_config = saved
    return bool(torch.equal(got, want))


def main() -> None:
    args = bench.sweep_arguments(1, "DTYPE:T:V (default: both dtypes, T 256 / 1024, both V)",
                                 "BLOCKxWARPS:COLUMNS[:EVICT][:single] (default: the sweep)")
    cases, bw, meta = bench.sweep_start(args.cases, CASES)
    rows = []
    for p in range(args.passes):
        for dname, T, V in cases:
            row = bench._variant(bw, "two launches (default)", IMPL, T, V, dname, [(rs, "exchange_config",
                                                                                   lambda *a, **k: None)])
            rows.append(dict(row, pass_=p))
            for text in args.configs or SWEEP[dname]:
                if text.startswith("launch:"):
                    _, bws, programs = text.split(":")
                    block, warps = (int(x) for x in bws.split("x"))
                    row = bench._variant(bw, text, IMPL, T, V, dname, [
                        (rs, "exchange_config", lambda *a, **k: None),
                        (rs, "launch_config", bench.fixed_launch(block, warps, int(programs)))])
                    rows.append(dict(row, pass_=p))
                    continue
                label, cfg = parse_config(text, V)
                skip = skip_patches(text)
                row = bench._variant(bw, label, IMPL, T, V, dname,
                                     [(rs, "exchange_config", lambda *a, cfg=cfg, **k: cfg)] + skip)
                row = dict(row, pass_=p, splits=cfg.num_splits)
                if p == 0:
                    with bench._Patched(skip):
                        row["tokens_equal"] = _tokens_equal(T, V, dname, cfg)
                    print(json.dumps({"tokens_equal": row["tokens_equal"], "variant": label}), flush=True)
                rows.append(row)
            args.out.write_text(json.dumps(dict(meta, rows=rows), indent=1))


if __name__ == "__main__":
    main()
