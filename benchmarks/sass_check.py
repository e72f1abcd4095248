"""Offline SASS check of the sampling kernels: compile for sm_90 (H200) without a GPU and print,
per shipped configuration, registers per thread and SASS instruction count, for the working tree
and for a git revision. For changes made without device time: a fast path whose registers and
instructions are unchanged has not regressed in code generation (speed itself needs the GPU).

    TRITON_INTERPRET=0 python benchmarks/sass_check.py [REV]   # REV defaults to HEAD

Uses Triton's own ptxas / cuobjdump / nvdisasm (shipped in the wheel). Compiler internals
(``ASTSource``, ``GPUTarget``) are those of triton 3.9. Arguments a launch passes as None (unused
in its configuration: no logits cache, no merge scratch for one program per row) compile as None
where the revision's kernel accepts it, as typed pointers where it does not. Constexprs a
revision's kernel does not have are left out, so revisions before and after a knob was removed
compare on the configurations they share.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {
    # (kernel, label): (pointer dtypes, constexprs, num_warps), as the launchers choose on an H200.
    "sample": [
        ("fp32 split", "*fp32", dict(USE_FP64=False, SPLIT=True, LANE_MAX=True, EARLY=0, BLOCK=4096), 16),
        ("bf16 split", "*bf16", dict(USE_FP64=False, SPLIT=True, LANE_MAX=True, EARLY=1, BLOCK=4096), 16),
        ("bf16 split tracked", "*bf16", dict(USE_FP64=False, SPLIT=True, LANE_MAX=False, EARLY=2, BLOCK=4096), 16),
        # The block skip's launch from 64 rows where a program walks >= 32 blocks: 1,024 / 4 warps,
        # loads pipelined 4 deep.
        ("fp32 skip 1024/4", "*fp32", dict(USE_FP64=False, SPLIT=True, LANE_MAX=True, EARLY=0, BLOCK=1024,
                                            SKIP=True, STAGES=4), 4),
        ("bf16 skip 1024/4", "*bf16", dict(USE_FP64=False, SPLIT=True, LANE_MAX=True, EARLY=1, BLOCK=1024,
                                            SKIP=True, STAGES=4), 4),
        ("fp32 one program", "*fp32", dict(USE_FP64=False, SPLIT=False, LANE_MAX=True, EARLY=0, BLOCK=4096), 16),
        # Below 64 rows: slot merge and PDL 2; T = 8 (V = 262,144: 64 programs a row, two blocks
        # each) and T = 1 (128 programs, one block each).
        ("fp32 few rows", "*fp32", dict(USE_FP64=False, SPLIT=True, LANE_MAX=False, EARLY=2, BLOCK=2048,
                                        MERGE_SLOTS=True, SLOTS=64, PDL=2), 8),
        ("fp32 one row", "*fp32", dict(USE_FP64=False, SPLIT=True, LANE_MAX=False, EARLY=1, BLOCK=2048,
                                       MERGE_SLOTS=True, SLOTS=128, PDL=2), 8),
        # The balanced few-row grid: T = 8, V = 151,936 at 1,024 / 4 warps, 75 programs a row of
        # two blocks, PDL 1.
        ("fp32 few rows 1024/4", "*fp32", dict(USE_FP64=False, SPLIT=True, LANE_MAX=False, EARLY=2,
                                               BLOCK=1024, MERGE_SLOTS=True, SLOTS=128, PDL=1), 4),
        ("fp32 use_fp64", "*fp32", dict(USE_FP64=True, SPLIT=False, LANE_MAX=False, EARLY=2, BLOCK=1024), 8),
    ],
    "resample": [
        (f"{dt[1:]} phase {ph}{' 2048/8' if bw == (2048, 8) else ''}"
         f"{' p-q' if form == 2 and dt == '*fp32' else ''}", dt,
         dict(PHASE=ph, RESIDUAL_FORM=form, BLOCK=bw[0]), bw[1])
        for dt in ("*fp32", "*bf16")
        for ph in (0, 1, 2, 3)
        # As launched on an H200: 1,024 / 4 (float32) and 4,096 / 8 (16-bit) below 256 requests,
        # 2,048 / 8 from 256 (float32 1,024 / 4 again from 4 x 132); the residual form by request
        # count and element size.
        for bw in (((1024, 4) if dt == "*fp32" else (4096, 8)) if ph != 3 else (1024, 8),)
                  + (((2048, 8),) if ph in (0, 1, 2) else ())
        for form in ((1, 2) if dt == "*fp32" and ph in (1, 2) else (1,) if dt == "*fp32" else (2,))
    ]
    # The one launch: 1,024 / 4 warps, one row at a time, evict_first on the draw; float32 with
    # the log form (64-255 requests) and p - q (from 256); 16-bit with the race.
    + [(f"{dt[1:]} phase 4{' p-q' if form == 2 and dt == '*fp32' else ''}", dt,
        dict(PHASE=4, RESIDUAL_FORM=form, BLOCK=1024, EVICT_DRAW="evict_first", LSE_UNROLL=2,
             LEAN_DRAW=dt == "*bf16", RACE_DRAW=dt == "*bf16", LSE_STAGES=5 if dt == "*bf16" else 1), 4)
       for dt in ("*fp32", "*bf16") for form in ((1, 2) if dt == "*fp32" else (2,))]
    # The draw's block skip on the one launch and on the two launches' draw.
    + [(f"{dt[1:]} phase {ph} skip", dt, dict(PHASE=ph, RESIDUAL_FORM=2, BLOCK=bw[0],
                                              EVICT_DRAW="evict_first" if ph == 4 else "", SKIP=True, STAGES=4), bw[1])
       for dt in ("*fp32", "*bf16") for ph, bw in ((4, (1024, 4)), (1, (2048, 8)))],
}
# Constexprs of earlier revisions, at the values their launchers always passed: knobs since
# removed as dead paths (the prefetching loops, the paired log-sum-exp pass, the L2 policy of
# the first read).
REMOVED = dict(PREFETCH=False, PAIR_LSE=False, EVICT_LSE="")
# Arguments the launchers pass as None where the configuration does not use them.
UNUSED = {
    "sample": ("cache_ptr", "cache_stride_0", "cache_stride_1", "cache_col_ptr", "cache_col_stride_0", "source_ptr",
               "source_stride_0"),
    "sample one program": ("best_ptr", "best_stride_0", "done_ptr", "done_stride_0"),
    "resample": ("draft_tokens_ptr", "draft_tokens_stride_0", "draft_tokens_stride_1"),
    "resample one program": ("stats_ptr", "best_ptr", "best_stride_0", "done_ptr", "done_stride_0"),
}
INT_PTRS = {"idx_mapping_ptr", "seed_ptr", "pos_ptr", "cache_col_ptr", "best_ptr", "out_ptr", "draft_tokens_ptr",
            "num_accepted_ptr", "cu_num_logits_ptr"}
FLOAT_PTRS = {"logits_ptr", "cache_ptr", "source_ptr", "target_ptr", "draft_ptr"}


def _measure(fn, dtype: str, consts: dict, warps: int, unused=()):
    try:
        return _compile(fn, dtype, {**consts, **{name: None for name in unused}}, warps)
    except Exception:
        if not unused:
            raise
        return _compile(fn, dtype, consts, warps)


def _compile(fn, dtype: str, consts: dict, warps: int):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    # A constexpr the revision's kernel does not have (added later) is left out; one the table
    # does not name takes its default (else it would compile as a runtime argument: both
    # branches of every `if` on it, another kernel than any launch builds).
    consts = {k: v for k, v in consts.items() if k in fn.arg_names}
    for param in fn.params:
        if param.is_constexpr and param.has_default and param.name not in consts:
            consts[param.name] = param.default
    signature = {}
    for arg in fn.arg_names:
        if arg in consts:
            signature[arg] = "constexpr"
        elif arg in FLOAT_PTRS:
            signature[arg] = dtype
        elif arg == "done_ptr":
            signature[arg] = "*i32"
        elif arg in INT_PTRS:
            signature[arg] = "*i64"
        elif arg == "stats_ptr" or arg == "temperature_ptr":
            signature[arg] = "*fp32"
        else:
            signature[arg] = "i64" if "stride" in arg else "i32"
    # What a real launch specialises on: pointers 16-byte aligned, and strides and sizes that are
    # multiples of 16 (the benchmark's vocabularies all are). Without it the loads compile
    # scalar, which the GPU's build is not.
    aligned = {"vocab_size", "chunk_size", "draft_vocab_size"}
    attrs = {(i,): [["tt.divisibility", 16]] for i, arg in enumerate(fn.arg_names)
             if arg not in consts and (arg.endswith("_ptr") or "stride" in arg or arg in aligned)}
    kernel = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=consts, attrs=attrs),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(kernel.asm["cubin"])
    usage = subprocess.run([tools / "cuobjdump", "-res-usage", f.name], capture_output=True, text=True).stdout
    sass = subprocess.run([tools / "nvdisasm", f.name], capture_output=True, text=True).stdout
    count = sum(1 for line in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+[A-Z@{]", line))
    return int(re.search(r"REG:(\d+)", usage).group(1)), count


def _table(root: Path) -> dict:
    """{(kernel, label): (registers, instructions)} of the package in ``root``, imported from there."""
    sys.path.insert(0, str(root))
    import importlib

    # (the package's `resample` attribute is the function, which shadows the module)
    resample_module = importlib.import_module("guarded_kernels.resample")
    sample_module = importlib.import_module("guarded_kernels.sample")

    rows = {}
    for kind, configs in CONFIGS.items():
        fn = sample_module._gumbel_sample_kernel if kind == "sample" else resample_module._resample_kernel
        base = (dict(APPLY_TEMPERATURE=True, STREAM=0, HAS_CACHE=False, HAS_SOURCE=False, FAST_LOG=True,
                     MERGE_SLOTS=False, SLOTS=1, PDL=0, SKIP=False, STAGES=1)
                if kind == "sample" else dict(HAS_DRAFT=True, FAST_LOG=True, SPLITS_P2=128, EVICT_DRAW="",
                                              SKIP=False, STAGES=1))
        for label, dtype, consts, warps in configs:
            one = consts.get("SPLIT") is False or consts.get("PHASE") in (2, 3)
            unused = UNUSED[kind] + (UNUSED[f"{kind} one program"] if one else ())
            try:
                rows[f"{kind}|{label}"] = _measure(fn, dtype, {**REMOVED, **base, **consts}, warps, unused)
            except Exception as exc:  # a configuration the revision does not have
                rows[f"{kind}|{label}"] = (type(exc).__name__, "")
    return rows


def _table_of(tree: Path) -> dict:
    """The table of ``tree`` (a checkout's root) in a fresh interpreter: each revision imports its
    own package."""
    out = subprocess.run([sys.executable, __file__, "--table-of", str(tree)], capture_output=True, text=True,
                         check=True, env={**os.environ, "TRITON_INTERPRET": "0"}).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    os.environ["TRITON_INTERPRET"] = "0"
    if sys.argv[1:2] == ["--table-of"]:
        print(json.dumps(_table(Path(sys.argv[2]))))
        return
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "guarded_kernels", "stridecheck"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        a = _table_of(Path(old))
    b = _table_of(ROOT)
    print(f"{'kernel':10} {'config':22} {rev[:12] + ' regs/instr':>22} {'tree regs/instr':>22}  same")
    for key in b:
        kind, label = key.split("|")
        print(f"{kind:10} {label:22} {str(tuple(a.get(key, ('-', '')))):>22} {str(tuple(b[key])):>22}  "
              f"{'yes' if a.get(key) == b[key] else 'NO'}")


if __name__ == "__main__":
    main()
