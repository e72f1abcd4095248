"""Few-row launches of ``gumbel_sample`` (T = 1 and 8, issue 6's <= 6 us target): a reference copy of
the kernels (A, e.g. HEAD's ``sample.py``) against the working tree's (B) in one process, passes
interleaved A B A B (or a rotation A B C ...), then the tree's variants (merge through
per-program slots, programmatic dependent launch, few-row launch configurations), each with the
registers of the kernels it compiled. Times are medians of CUDA-graph replays per call, with ``benchmarks/sampling.py``'s
harness and inputs (rotated buffers, temperature 0.9).

Usage: ``PYTHONPATH=. python benchmarks/small_t.py --a DIR --out FILE.json [--passes N]
[--rotation A B NAME ..] [--sweep] [--large] [--variants NAME ..] [--diagnostics] [--ts T ..]
[--vs V ..]``. ``DIR`` holds
``sample_a.py`` (the reference sample.py, importing its scratch from ``workspace_a``) and
``workspace_a.py``. ``--large`` adds T = 256 / 1024 rows to the
A/B passes (kernels there must be unchanged).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import sampling as bench  # noqa: E402  (benchmarks/sampling.py: its harness and inputs)


def _load(path: Path, name: str):
    """A reference copy of a module (``--a DIR``'s ``sample_a.py``), by path."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


B = importlib.import_module("guarded_kernels.sample")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
SMALL = [(T, V) for T in (1, 8) for V in (151936, 262144)]
LARGE = [(T, V) for T in (256, 1024) for V in (151936, 262144)]

_inputs: dict = {}


def _case(T: int, V: int, dtype: torch.dtype):
    """The table's inputs for one (T, V, dtype), built once and shared by every variant."""
    key = (T, V, dtype)
    if key not in _inputs:
        elt = torch.tensor([], dtype=dtype).element_size()
        nbuf = bench._buffers(T, V, elt, T)
        gen = torch.Generator(device="cuda").manual_seed(T * 7 + V)
        temp = torch.full((T,), 0.9, device="cuda")
        seed = torch.arange(T, dtype=torch.int64, device="cuda") + 1
        idx = torch.arange(T, dtype=torch.int32, device="cuda")
        bufs = [((torch.randn(T, V, device="cuda", generator=gen) * 2).to(dtype), torch.arange(T, device="cuda") + b)
                for b in range(nbuf)]
        _inputs[key] = (idx, temp, seed, bufs)
    return _inputs[key]


def _time(module, T, V, dname, patches=(), replays=20, greedy=False) -> dict:
    idx, temp, seed, bufs = _case(T, V, DTYPES[dname])
    if greedy:
        temp = temp * 0  # the same kernel's greedy branch: no noise arithmetic
    fn = module.gumbel_sample
    kernel = module._gumbel_sample_kernel
    seen = {i for i, _ in bench._compiled_regs(kernel)}
    calls = [lambda logits=logits, pos=pos: fn(logits, idx, temp, seed, pos) for logits, pos in bufs]
    try:
        with bench._Patched(list(patches)):
            us = bench._graph_us(calls, replays=replays)
            first = fn(*(bufs[0][0], idx, temp, seed, bufs[0][1]))
            launch = list(module.launch_config(T, V, DTYPES[dname], bufs[0][0].device, False))
    except Exception as exc:  # a variant the machine refuses (e.g. a launch attribute under capture)
        print(f"  failed: {type(exc).__name__}: {exc}", flush=True)
        return dict(us_graph=float("nan"), error=f"{type(exc).__name__}: {exc}"[:300])
    regs = sorted({r for i, r in bench._compiled_regs(kernel) if i not in seen})
    return dict(us_graph=round(us, 3), launch=launch, new_kernel_regs=regs, tokens0=first[:8].tolist())


def _rotation_member(variant: str, name: str) -> bool:
    """Whether a row labelled ``variant`` is a pass of rotation member ``name`` (labels are the
    name and the pass number: ``A1``, ``pdl1+cfg1024x4w_bpp23``; names may end in digits)."""
    return variant.startswith(name) and variant[len(name):].isdigit()


def few_rows(block: int, warps: int, blocks_per_program: int):
    """A launch_config for T < 64: ``blocks_per_program`` blocks of ``block`` per program."""
    orig = B.launch_config

    def cfg(num_rows, vocab_size, dtype, device, use_fp64):
        if num_rows >= 64 or use_fp64:
            return orig(num_rows, vocab_size, dtype, device, use_fp64)
        return block, warps, max(1, min(triton.cdiv(vocab_size, block * blocks_per_program), 512))

    return cfg


def variants() -> dict:
    """Name -> patches of the tree's module, for the sweep and the rotation (most informative
    first: a run that reaches its time limit keeps what it measured). Against the tree's defaults
    since version 15 (below 64 rows: PDL 2 and the slot merge): ``atomic`` is run 19's B (the
    atomic merge), ``nopdl`` turns PDL off; a ``cfg..`` name is a few-row launch configuration
    (block x warps, blocks per program), with the defaults otherwise (since run 24 the default PDL
    of a 4-warp launch is 1: ``cfg1024x4w_bpp2`` then launches as ``pdl1+cfg1024x4w_bpp2``)."""
    atomic = (B, "merge_slots", lambda rows, splits, dev: False)
    slots = (B, "merge_slots", lambda rows, splits, dev: rows < 64)

    def pdl(level):
        return (B, "use_pdl", lambda rows, dev, warps=8: level if rows < 64 else 0)

    def cfg(block, warps, bpp):
        return (B, "launch_config", few_rows(block, warps, bpp))

    old_early = (B, "early_blocks", lambda chunk, block, dt: 2 if chunk <= 2 * block else (1 if dt.itemsize <= 2 else 0))
    out = {"atomic": [atomic], "nopdl": [pdl(0)], "pdl1": [pdl(1)], "pdl2": [pdl(2)], "slots": [slots],
           # V = 151,936 at T = 8: 304 programs leave 40 SMs with 3 (run 19); these spread it finer.
           "cfg1024x4w_bpp2": [cfg(1024, 4, 2)], "pdl1+cfg1024x4w_bpp2": [pdl(1), cfg(1024, 4, 2)],
           "nopdl+cfg1024x4w_bpp2": [pdl(0), cfg(1024, 4, 2)], "cfg512x4w_bpp2": [cfg(512, 4, 2)],
           "pdl1+cfg512x4w_bpp2": [pdl(1), cfg(512, 4, 2)], "old_early": [old_early],
           "cfg2048x8w_bpp1": [cfg(2048, 8, 1)], "cfg1024x4w_bpp1": [cfg(1024, 4, 1)],
           "cfg1024x4w_bpp4": [cfg(1024, 4, 4)], "cfg4096x16w_bpp1": [cfg(4096, 16, 1)],
           "cfg2048x8w_bpp2": [cfg(2048, 8, 2)],
           # About two equal programs per SM at V = 151,936, T = 8 (33 chunks of 9 x 512 columns: 264
           # programs, run 19's candidate); the chunk is a loop of 9 blocks, not straight-line code.
           "cfg512x4w_bpp9": [cfg(512, 4, 9)]}
    return out


@triton.jit
def _empty_kernel(x_ptr, PDL: tl.constexpr):
    # Nothing but the wait / trigger: what a launch costs by itself under graph replay.
    if PDL >= 1:
        tl.extra.cuda.gdc_wait()
    if PDL >= 2:
        tl.extra.cuda.gdc_launch_dependents()


def launch_floor() -> list[dict]:
    """An empty kernel on gumbel_sample's T = 8, V = 262,144 grid (8 x 64 programs of 8 warps),
    plain and with programmatic dependent launch, under the table's graph replay."""
    x = torch.empty(1, device="cuda")
    rows = []
    for pdl in (0, 1, 2):
        def call(pdl=pdl):
            _empty_kernel[(8, 64)](x, PDL=pdl, num_warps=8, **({"launch_pdl": True} if pdl else {}))

        rows.append(dict(variant=f"empty kernel pdl={pdl}", us_graph=round(bench._graph_us([call] * 8), 3)))
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--passes", type=int, default=2, help="rounds of the rotation (A B ... A B ...)")
    ap.add_argument("--rotation", nargs="*", default=["A", "B"],
                    help="A, B and sweep variant names measured in turn in every pass")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--large", action="store_true", help="also T = 256 / 1024 for A and B in every pass")
    ap.add_argument("--ts", type=int, nargs="*", help="few-row counts (default 1 8), all below 64")
    ap.add_argument("--vs", type=int, nargs="*", help="vocabularies of the few-row cases (default 151936 262144)")
    ap.add_argument("--variants", nargs="*", help="sweep only these variants")
    ap.add_argument("--diagnostics", action="store_true",
                    help="temperature 0 (no noise arithmetic) at T = 1 / 8, and the launch floor with PDL")
    args = ap.parse_args()
    global SMALL
    if args.ts or args.vs:
        SMALL = [(T, V) for T in (args.ts or (1, 8)) for V in (args.vs or (151936, 262144))]
    sys.path.insert(0, str(args.a))
    A = _load(args.a / "sample_a.py", "sample_a")
    bw = bench.copy_bandwidth()
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), copy_bandwidth_GBps=bw / 1e9)
    print(json.dumps(meta), flush=True)
    rows = []
    extra_rows = []
    named = variants()

    def save():
        args.out.write_text(json.dumps(dict(meta, rows=rows, diagnostics=extra_rows), indent=1))

    def record(label, module, T, V, dname, patches=(), greedy=False, into=rows):
        t0 = time.time()
        r = dict(variant=label, dtype=dname, T=T, V=V, **_time(module, T, V, dname, patches, greedy=greedy))
        r["wall_s"] = round(time.time() - t0, 1)
        into.append(r)
        print(json.dumps(r), flush=True)
        save()

    k = 0
    for p in range(args.passes):
        for name in args.rotation:
            k += 1
            module, patches = (A, []) if name == "A" else (B, [] if name == "B" else named[name])
            cases = SMALL + (LARGE if args.large and name in ("A", "B") else [])
            for dname in DTYPES:
                for T, V in cases:
                    record(f"{name}{k}", module, T, V, dname, patches)
    if args.sweep:
        for name, patches in named.items():
            if args.variants and name not in args.variants:
                continue
            for dname in DTYPES:
                for T, V in SMALL:
                    record(name, B, T, V, dname, patches)
    if args.diagnostics:
        for label, module in (("A greedy", A), ("B greedy", B)):
            for dname in DTYPES:
                for T, V in SMALL:
                    record(label, module, T, V, dname, greedy=True, into=extra_rows)
        extra_rows.extend(launch_floor())
        save()
    # A short table last: per case, each rotation member's mean over the passes and its ratio to A's,
    # then the sweep's variants; and whether every variant drew the same first tokens as A.
    cases = SMALL + (LARGE if args.large else [])
    print(f"{'case':26} " + " ".join(f"{n:>16}" for n in args.rotation) + "   B/A")
    for dname in DTYPES:
        for T, V in cases:
            means = {}
            for n in args.rotation:
                vals = [r["us_graph"] for r in rows if (r["dtype"], r["T"], r["V"]) == (dname, T, V)
                        and _rotation_member(r["variant"], n) and r["us_graph"] == r["us_graph"]]
                means[n] = sum(vals) / len(vals) if vals else float("nan")
            ratio = means.get("B", float("nan")) / means.get("A", float("nan")) - 1 if "A" in means else float("nan")
            print(f"{dname[:4] + ' T=' + str(T) + ' V=' + str(V):26} "
                  + " ".join(f"{means[n]:16.2f}" for n in args.rotation) + f"  {ratio:+.1%}")
    for n in dict.fromkeys(r["variant"] for r in rows):
        if any(_rotation_member(n, m) for m in args.rotation):
            continue
        cells = {(r["dtype"], r["T"], r["V"]): r["us_graph"] for r in rows if r["variant"] == n}
        print(f"{n:26} " + " ".join(f"{cells.get((d, T, V), float('nan')):7.2f}" for d in DTYPES for T, V in SMALL))
    ref = {(r["dtype"], r["T"], r["V"]): r.get("tokens0") for r in rows if r["variant"] == "A1"}
    same = all(r.get("tokens0") == ref.get((r["dtype"], r["T"], r["V"])) for r in rows if "tokens0" in r)
    print(f"first tokens identical to A1 in every measured case: {same}")

if __name__ == "__main__":
    main()
