"""Layout tests on real kernel libraries: assert_layout_invariant with its defaults over public ops.

    python benchmarks/layout_sweep.py [--out DIR] [--workers N] [--only liger,flaggems,controls]
    TRITON_INTERPRET=1 python benchmarks/layout_sweep.py --cpu [--out DIR]    # a dry run

Every op of Liger-Kernel (its public autograd Functions, forward) and FlagGems (its op
functions, called directly rather than through aten) runs through
:func:`stridecheck.testing.assert_layout_invariant` with the default layouts and comparison,
with torch's own op as ``reference=``, so that each failure says which side is wrong. Both
libraries come from PyPI (wheels carried to the GPU machine; nothing here is vendored).

Writes ``DIR/layout_sweep.json`` (one record per (library, op, argument, layout): the verdict,
the argument's strides, and for a failure what the reference says; one record per op with its
time and whether the op's contiguous result agrees with the reference) and
``DIR/layout_sweep.md`` (device, versions, date, a row per op, the findings), both rewritten
after every op so that an interrupted run leaves what it measured, and at the end appends one
line to ``DIR/history.jsonl`` (date, commit, device, headline numbers: the benchmarks' shared
history; with ``--out`` elsewhere, append that line to ``benchmarks/results/history.jsonl``). It prints one line per op and
a closing verdict on the expectations below.

Expectations (issue 22): five real layout bugs, each found and confirmed by the reference —
Liger's rotary embedding at sequence length 1 (a row stride taken from a size-1 dimension; the
contiguous baseline is the wrong side), Liger's cross-entropy (ignored rows of the caller's
logits zeroed only when their inner stride is 1), FlagGems' Hopper ``mul`` (strides ignored;
this is the Hopper build of ``mul``, so it shows on an H100/H200 only), FlagGems' ``topk`` for
k < 8 (the input's strides ignored) and FlagGems' ``index_select`` (the index tensor's stride
ignored) — and no failure on any other op.

Ops run in ``--workers`` spawned processes (each compiles its own kernels; FlagGems gets a
config cache per worker, since its cache is one SQLite file). A worker that dies takes the ops in
flight with it; they run again afterwards, each alone in a process, so that only the op that
kills its process is recorded as having done so. ``--cpu``: tensors on the CPU through Triton's interpreter, small shapes;
Liger ops the interpreter cannot run are recorded as errors, FlagGems needs a GPU to import,
and the ``controls`` (torch functions, one correct and one that ignores strides) run anywhere.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import math
import multiprocessing
import os
import platform
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# (library, op) -> the arguments whose layout bug the op is expected to show (issue 22).
EXPECTED_BUGS = {
    ("liger", "rope_decode_seq1"): {"q", "k"},
    ("liger", "cross_entropy"): {"logits"},
    ("flaggems", "mul"): {"A", "B"},
    ("flaggems", "topk"): {"x"},
    ("flaggems", "index_select"): {"index"},
    ("controls", "flat_mul"): {"a", "b"},
}


# --- the cases: (fn, args, reference) per op, built inside the worker on its device ---------


def _randn(gen, device):
    import torch

    def make(*shape):
        return torch.randn(*shape, generator=gen).to(device)

    return make


def liger_cases(device: str, small: bool) -> dict:
    import torch
    import torch.nn.functional as F
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.dyt import LigerDyTFunction
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.group_norm import LigerGroupNormFunction
    from liger_kernel.ops.jsd import LigerJSDFunction
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.rope import LigerRopeFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    from liger_kernel.ops.tvd import LigerTVDLossFunction

    gen = torch.Generator().manual_seed(0)
    r = _randn(gen, device)
    B, T, H = (2, 4, 32) if small else (2, 16, 512)
    V = 40 if small else 1000
    BT = B * T
    n_q, n_kv, hd = (2, 2, 16) if small else (8, 4, 64)
    C, L = 8, (8 if small else 64)
    eps = 1e-6

    def rotary_tables(seq):
        # HF-style tables: the same frequencies in both halves, as Liger's kernel assumes.
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        freqs = torch.outer(torch.arange(seq, dtype=torch.float32) + 3.0, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos()[None].to(device), emb.sin()[None].to(device)

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([-x2, x1], dim=-1)

    def rope(q, k, cos, sin):
        return LigerRopeFunction.apply(q, k, cos, sin)

    def rope_reference(q, k, cos, sin):
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s

    def rms_norm(X, W):
        return LigerRMSNormFunction.apply(X, W, eps)

    def layer_norm(X, W, bias):
        return LigerLayerNormFunction.apply(X, W, bias, eps)

    def swiglu(a, b):
        return LigerSiLUMulFunction.apply(a, b)

    def geglu(a, b):
        return LigerGELUMulFunction.apply(a, b)

    def cross_entropy(logits, target):
        return LigerCrossEntropyFunction.apply(logits, target, None, -100, 0.0, 0.0, "mean")

    def cross_entropy_reference(logits, target):
        return F.cross_entropy(logits, target, ignore_index=-100), None, None, None

    def kl_div(y_pred, y_true):
        return LigerKLDivLossFunction.apply(y_pred, y_true, "batchmean", False, 1e-10)

    def jsd(log_q, log_p):
        return LigerJSDFunction.apply(log_q, log_p, None, 0.5, -100)

    def jsd_reference(log_q, log_p):
        q, p = log_q.exp(), log_p.exp()
        log_m = (0.5 * (p + q)).log()
        return (0.5 * (p * (log_p - log_m)).sum() + 0.5 * (q * (log_q - log_m)).sum()) / log_q.shape[0]

    def tvd(p, q):
        return LigerTVDLossFunction.apply(p, q, None, "batchmean", -100)

    def dyt(x, alpha, gamma, beta):
        return LigerDyTFunction.apply(x, alpha, gamma, beta)

    def softmax(x):
        return LigerSoftmaxFunction.apply(x)

    def group_norm(X, W, bias):
        return LigerGroupNormFunction.apply(X, W, bias, C, 4, eps)

    def fused_add_rms_norm(X, R, W):
        return LigerFusedAddRMSNormFunction.apply(X, R, W, eps)

    def fused_add_rms_norm_reference(X, R, W):
        S = X + R
        return F.rms_norm(S, (S.shape[-1],), W, eps), S

    target = torch.randint(0, V, (BT,), generator=gen).to(device)
    target[1] = -100  # an ignored row
    log_p = torch.log_softmax(r(BT, V), -1)
    log_q = torch.log_softmax(r(BT, V), -1)
    cos, sin = rotary_tables(T)
    cos1, sin1 = rotary_tables(1)
    return {
        "rms_norm": (rms_norm, (r(B, T, H), r(H)), lambda X, W: F.rms_norm(X, (H,), W, eps)),
        "layer_norm": (layer_norm, (r(B, T, H), r(H), r(H)), lambda X, W, b: F.layer_norm(X, (H,), W, b, eps)),
        "swiglu": (swiglu, (r(B, T, 2 * H), r(B, T, 2 * H)), lambda a, b: F.silu(a) * b),
        "geglu": (geglu, (r(B, T, 2 * H), r(B, T, 2 * H)), lambda a, b: F.gelu(a, approximate="tanh") * b),
        "rope": (rope, (r(B, n_q, T, hd), r(B, n_kv, T, hd), cos, sin), rope_reference),
        "rope_decode_seq1": (rope, (r(B, n_q, 1, hd), r(B, n_kv, 1, hd), cos1, sin1), rope_reference),
        "cross_entropy": (cross_entropy, (r(BT, V), target), cross_entropy_reference),
        "kl_div": (kl_div, (log_q, log_p.exp()), lambda y_pred, y_true: F.kl_div(y_pred, y_true, reduction="batchmean")),
        "jsd": (jsd, (log_q, log_p), jsd_reference),
        "tvd": (tvd, (log_q.exp(), log_p.exp()), lambda p, q: 0.5 * (p - q).abs().sum() / p.shape[0]),
        "dyt": (dyt, (r(B, T, H), r(1), r(H), r(H)), lambda x, alpha, gamma, beta: gamma * torch.tanh(alpha * x) + beta),
        "softmax": (softmax, (r(BT, V),), lambda x: torch.softmax(x, -1)),
        "group_norm": (group_norm, (r(B, C, L), r(C), r(C)), lambda X, W, b: F.group_norm(X, 4, W, b, eps)),
        "fused_add_rms_norm": (fused_add_rms_norm, (r(B, T, H), r(B, T, H), r(H)), fused_add_rms_norm_reference),
    }


def flaggems_cases(device: str, small: bool) -> dict:
    import flag_gems as fg
    import torch

    gen = torch.Generator().manual_seed(1)
    r = _randn(gen, device)
    M, N = (8, 16) if small else (64, 256)
    rows = torch.randint(0, M, (M // 2,), generator=gen).to(device)
    columns = torch.randint(0, N, (M, N // 4), generator=gen).to(device)
    k = 5  # below 8: topk's two-stage path

    def add(A, B):
        return fg.add(A, B)

    def mul(A, B):
        return fg.mul(A, B)

    def sum_dim(x):
        return fg.sum_dim(x, [1])

    def mean_dim(x):
        return fg.mean_dim(x, [1])

    def softmax(x):
        return fg.softmax(x, 1)

    def log_softmax(x):
        return fg.log_softmax(x, 1)

    def layer_norm(x, w, b):
        return tuple(fg.layer_norm(x, [N], w, b, 1e-5))

    def rms_norm(x, w):
        return fg.rms_norm(x, [N], w, 1e-5)

    def argmax(x):
        return fg.argmax(x, 1)

    def max_dim(x):
        return tuple(fg.max_dim(x, 1))

    def cumsum(x):
        return fg.cumsum(x, 1)

    def index_select(x, index):
        return fg.index_select(x, 0, index)

    def gather(x, index):
        return fg.gather(x, 1, index)

    def topk(x):
        return tuple(fg.topk(x, k, 1))

    def sort(x):
        return tuple(fg.sort(x, 1))

    def var_mean(x):
        return tuple(fg.var_mean(x, [1]))

    aten = torch.ops.aten
    return {
        "add": (add, (r(M, N), r(M, N)), torch.add),
        "mul": (mul, (r(M, N), r(M, N)), torch.mul),
        "sum_dim": (sum_dim, (r(M, N),), lambda x: torch.sum(x, [1])),
        "mean_dim": (mean_dim, (r(M, N),), lambda x: torch.mean(x, [1])),
        "softmax": (softmax, (r(M, N),), lambda x: torch.softmax(x, 1)),
        "log_softmax": (log_softmax, (r(M, N),), lambda x: torch.log_softmax(x, 1)),
        "layer_norm": (layer_norm, (r(M, N), r(N), r(N)), lambda x, w, b: tuple(aten.native_layer_norm(x, [N], w, b, 1e-5))),
        "rms_norm": (rms_norm, (r(M, N), r(N)), lambda x, w: torch.nn.functional.rms_norm(x, [N], w, 1e-5)),
        "argmax": (argmax, (r(M, N),), lambda x: torch.argmax(x, 1)),
        "max_dim": (max_dim, (r(M, N),), lambda x: tuple(torch.max(x, 1))),
        "cumsum": (cumsum, (r(M, N),), lambda x: torch.cumsum(x, 1)),
        "index_select": (index_select, (r(M, N), rows), lambda x, index: torch.index_select(x, 0, index)),
        "gather": (gather, (r(M, N), columns), lambda x, index: torch.gather(x, 1, index)),
        "topk": (topk, (r(M, N),), lambda x: tuple(torch.topk(x, k, 1))),
        "sort": (sort, (r(M, N),), lambda x: tuple(torch.sort(x, 1))),
        "var_mean": (var_mean, (r(M, N),), lambda x: tuple(torch.var_mean(x, [1]))),
    }


def control_cases(device: str, small: bool) -> dict:
    """Torch functions that exercise the harness anywhere: one correct, one ignoring strides."""
    import torch

    gen = torch.Generator().manual_seed(2)
    r = _randn(gen, device)

    def flat_mul(a, b):
        # Reads both inputs' storage in memory order from their first element: strides ignored.
        def flat(t):
            return torch.as_strided(t, (t.numel(),), (1,), t.storage_offset())

        return (flat(a) * flat(b)).view(a.shape)

    return {
        "softmax": (lambda x: torch.softmax(x, -1), (r(4, 6),), lambda x: torch.softmax(x.double(), -1)),
        "flat_mul": (flat_mul, (r(4, 6), r(4, 6)), torch.mul),
    }


CASES = {"liger": liger_cases, "flaggems": flaggems_cases, "controls": control_cases}


def library_version(library: str) -> str:
    import importlib.metadata

    package = {"liger": "liger-kernel", "flaggems": "flag-gems", "controls": "torch"}[library]
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# --- one op -----------------------------------------------------------------------------------


def _flat(value) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _flat(item)]
    return []


def _agrees(got, want) -> str:
    """Does the op's contiguous result agree with the reference's (torch's default tolerances)?"""
    import torch

    got, want = _flat(got), _flat(want)
    if len(got) != len(want):
        return f"differs: {len(got)} tensors against the reference's {len(want)}"
    worst = 0.0
    for g, w in zip(got, want):
        w = w.to(dtype=g.dtype, device=g.device)
        if g.shape != w.shape:
            return f"differs: shape {tuple(g.shape)} against {tuple(w.shape)}"
        try:
            torch.testing.assert_close(g, w, equal_nan=True)
        except AssertionError:
            worst = max(worst, float((g.double() - w.double()).abs().nan_to_num(math.inf).max()))
    return "agrees" if worst == 0.0 else f"differs by up to {worst:.3g}"


def run_op(library: str, op: str, device: str, small: bool) -> dict:
    """Build ``op``'s inputs on ``device``, run the layout tests, return its records."""
    import torch

    from stridecheck.testing import LayoutError, assert_layout_invariant

    t0 = time.perf_counter()
    out = {"library": library, "op": op, "variants": [], "error": None}
    try:
        fn, args, reference = CASES[library](device, small)[op]
        out["shapes"] = [list(a.shape) for a in args if isinstance(a, torch.Tensor)]
        # The contiguous result against the reference first: a check of the reference itself
        # (and the one place a bug that breaks contiguous inputs, as rope's does, shows alone).
        out["reference_on_contiguous"] = _agrees(fn(*[a.clone() for a in args]), reference(*[a.clone() for a in args]))
        try:
            report = assert_layout_invariant(fn, *args, reference=reference, name=f"{library}.{op}")
        except LayoutError as err:
            report = err.report
        for v in report.variants:
            out["variants"].append(
                {
                    "argument": v.argument,
                    "layout": v.layout,
                    "verdict": v.status,
                    "strides": list(v.strides) if v.strides is not None else None,
                    "reference_agrees_with": v.reference_agrees_with,
                    "confirmed": v.confirmed if v.status == "failed" else None,
                    "detail": v.detail[:800],
                }
            )
    except Exception as err:  # noqa: BLE001 - an op that cannot run is recorded, not fatal
        out["error"] = f"{type(err).__name__}: {str(err)[:500]}\n{traceback.format_exc()[-1500:]}"
    if device == "cuda":
        torch.cuda.synchronize()
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def list_ops(library: str, device: str, small: bool) -> list[str]:
    return list(CASES[library](device, small))


def _worker_start(cpu: bool) -> None:
    # Each worker its own FlagGems config cache (an SQLite file that does not share well).
    os.environ["FLAGGEMS_CACHE_DIR"] = f"/tmp/stridecheck_sweep_flaggems_{os.getpid()}"
    if cpu:
        os.environ["TRITON_INTERPRET"] = "1"
    sys.path.insert(0, str(REPO))


def _worker_list_ops(library: str, device: str, small: bool):
    try:
        return library, list_ops(library, device, small), None
    except Exception as err:  # noqa: BLE001 - e.g. the library is not installed
        return library, [], f"{type(err).__name__}: {str(err)[:500]}"


# --- the run ----------------------------------------------------------------------------------


def environment(device: str) -> dict:
    import torch
    import triton

    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "CPU (Triton interpreter)",
        "stridecheck_commit": _git_commit(),
    }
    return info


def _git_commit() -> str | None:
    import subprocess

    if os.environ.get("STRIDECHECK_COMMIT"):  # the tree copied to a GPU machine may carry a stale .git
        return os.environ["STRIDECHECK_COMMIT"]
    try:
        done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() or None


def summarise(ops: list[dict], libraries: list[str]) -> dict:
    """Counts, the findings, and the expectations met or missed."""
    findings, unexpected, missed = [], [], []
    counts = {"ops": 0, "variants": 0, "passed": 0, "failed": 0, "unsupported": 0, "not_applicable": 0, "errors": 0}
    for o in ops:
        counts["ops"] += 1
        if o["error"]:
            counts["errors"] += 1
        expected_args = EXPECTED_BUGS.get((o["library"], o["op"]), set())
        found = set()
        for v in o["variants"]:
            counts["variants"] += 1
            counts[v["verdict"]] += 1
            if v["verdict"] != "failed":
                continue
            row = {"library": o["library"], "op": o["op"], **{k: v[k] for k in ("argument", "layout", "reference_agrees_with", "confirmed")}}
            findings.append(row)
            if v["argument"] in expected_args and v["confirmed"]:
                found.add(v["argument"])
            elif v["argument"] not in expected_args:
                unexpected.append(row)
        if expected_args and not o["error"] and not found:
            missed.append(f"{o['library']}.{o['op']}")
    ran = {(o["library"], o["op"]) for o in ops if not o["error"]}
    expected = [key for key in EXPECTED_BUGS if key[0] in libraries]
    return {
        "counts": counts,
        "findings": findings,
        "expected_bugs_run": [f"{lib}.{op}" for lib, op in expected if (lib, op) in ran],
        "expected_bugs_not_run": [f"{lib}.{op}" for lib, op in expected if (lib, op) not in ran],
        "expected_bugs_missed": missed,
        "unexpected_failures": unexpected,
        "ops_not_run": [f"{o['library']}.{o['op']}" for o in ops if o["error"]],
        "expectations_met": not missed and not unexpected and all(key in ran for key in expected)
        and not any(o["error"] for o in ops),
    }


def write_outputs(out_dir: Path, meta: dict, ops: list[dict]) -> dict:
    summary = summarise(ops, list(meta["versions"]))
    records = []
    for o in ops:
        version = meta["versions"].get(o["library"])
        if o["error"]:
            records.append({"library": o["library"], "version": version, "op": o["op"], "argument": None,
                            "layout": None, "verdict": "error", "confirmed": None, "detail": o["error"]})
        for v in o["variants"]:
            records.append({"library": o["library"], "version": version, "op": o["op"], **v})
    data = {
        "meta": meta,
        "summary": summary,
        "ops": [{k: o.get(k) for k in ("library", "op", "shapes", "seconds", "reference_on_contiguous", "error")} for o in ops],
        "records": records,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "layout_sweep.json").write_text(json.dumps(data, indent=1) + "\n")
    (out_dir / "layout_sweep.md").write_text(markdown(meta, ops, summary))
    return summary


def append_history(out_dir: Path, meta: dict, summary: dict) -> None:
    c = summary["counts"]
    expected = summary["expected_bugs_run"]
    line = {
        "date": meta["date"],
        "commit": meta.get("stridecheck_commit"),
        "device": meta["device"],
        "torch": meta["torch"],
        "triton": meta["triton"],
        "source": "layout_sweep.json",
        "rows": c["variants"],
        "headline": [
            f"{c['ops']} ops ({', '.join(f'{lib} {v}' for lib, v in meta['versions'].items())}), "
            f"{c['variants']} variants: {c['passed']} passed, {c['failed']} failed, {c['unsupported']} unsupported",
            f"expected bugs found and confirmed: {len(expected) - len(summary['expected_bugs_missed'])}/{len(expected)}"
            f" ({len(summary['expected_bugs_not_run'])} not run)",
            f"failures on other ops: {len(summary['unexpected_failures'])}",
        ],
    }
    with open(out_dir / "history.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")


def markdown(meta: dict, ops: list[dict], summary: dict) -> str:
    versions = ", ".join(f"{lib} {v}" for lib, v in meta["versions"].items())
    lines = [
        "# Layout sweep: assert_layout_invariant (default layouts and tolerances) on real kernel libraries",
        "",
        f"{meta['date']}; {meta['device']}; torch {meta['torch']}, triton {meta['triton']}, Python {meta['python']}; "
        f"{versions}; stridecheck {meta.get('stridecheck_commit')}; {meta['wall_seconds']} s wall, "
        f"{meta['workers']} worker(s). Command: `{meta['command']}`. Records: layout_sweep.json.",
        "",
        "| library | op | passed | failed (confirmed by the reference) | declared unsupported | not applicable | contiguous result against the reference | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in ops:
        by = {}
        for v in o["variants"]:
            by.setdefault(v["verdict"], []).append(v)
        failed = by.get("failed", [])
        confirmed = sum(1 for v in failed if v["confirmed"])
        ref = o.get("reference_on_contiguous") or ""
        status = f"error: {o['error'].splitlines()[0]}" if o["error"] else ref
        lines.append(
            f"| {o['library']} | {o['op']} | {len(by.get('passed', []))} | "
            f"{len(failed)} ({confirmed}) | {len(by.get('unsupported', []))} | {len(by.get('not_applicable', []))} | "
            f"{status} | {o['seconds']} |"
        )
    c = summary["counts"]
    lines += [
        "",
        f"{c['ops']} ops, {c['variants']} (argument, layout) variants: {c['passed']} passed, {c['failed']} failed, "
        f"{c['unsupported']} declared unsupported, {c['not_applicable']} not applicable; {c['errors']} op(s) could not run.",
        "",
        "Findings (the reference says which side is wrong: `baseline` = it agrees with the contiguous baseline, "
        "so the layout run is wrong; `layout` = the contiguous baseline is wrong; `neither`):",
        "",
    ]
    for f in summary["findings"]:
        lines.append(
            f"- {f['library']}.{f['op']}: {f['argument']} as {f['layout']}; reference agrees with "
            f"{f['reference_agrees_with']}{'' if f['confirmed'] else ' (not confirmed)'}"
        )
    lines += [
        "",
        f"Expected bugs run: {', '.join(summary['expected_bugs_run']) or 'none'}; not run: "
        f"{', '.join(summary['expected_bugs_not_run']) or 'none'}; missed: "
        f"{', '.join(summary['expected_bugs_missed']) or 'none'}; failures elsewhere: "
        f"{len(summary['unexpected_failures'])}; ops that could not run: {len(summary['ops_not_run'])}. "
        f"Expectations {'met' if summary['expectations_met'] else 'NOT met'}.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"), help="where the JSON and markdown go")
    parser.add_argument("--cpu", action="store_true", help="CPU tensors through Triton's interpreter, small shapes")
    parser.add_argument("--workers", type=int, default=None, help="processes (default: 6 on a GPU, 1 with --cpu)")
    parser.add_argument("--only", default="liger,flaggems,controls", help="comma-separated libraries")
    parser.add_argument("--ops", default="", help="comma-separated op names to keep (default: all)")
    ns = parser.parse_args(argv)
    if ns.cpu:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    device = "cpu" if ns.cpu else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device: run with --cpu (and TRITON_INTERPRET=1) for a dry run")
    small = ns.cpu
    workers = ns.workers or (1 if ns.cpu else 6)
    libraries = [lib for lib in ns.only.split(",") if lib]
    unknown = sorted(set(libraries) - set(CASES))
    if unknown:
        parser.error(f"unknown libraries {unknown}; known: {', '.join(CASES)}")
    keep = {op for op in ns.ops.split(",") if op}

    t0 = time.perf_counter()
    meta = environment(device)
    meta["versions"] = {lib: library_version(lib) for lib in libraries}
    meta["command"] = " ".join(["python", "benchmarks/layout_sweep.py", *(argv if argv is not None else sys.argv[1:])])
    meta["workers"] = workers
    ops: list[dict] = []
    out_dir = Path(ns.out)

    ctx = multiprocessing.get_context("spawn")  # CUDA in the workers

    def pool(size=workers):
        return concurrent.futures.ProcessPoolExecutor(
            max_workers=size, mp_context=ctx, initializer=_worker_start, initargs=(ns.cpu,)
        )

    def pool_of_one():
        return pool(1)

    # Which ops each library has: listed in the workers that then run them (each imports the
    # libraries once), as they will run.
    executor = pool()
    tasks = []
    for library, names, error in executor.map(_worker_list_ops, libraries, [device] * len(libraries), [small] * len(libraries)):
        if error:
            ops.append({"library": library, "op": "*", "variants": [], "error": error, "seconds": 0.0})
            print(f"{library:9s} could not be loaded: {error.splitlines()[0]}", flush=True)
        tasks += [(library, name) for name in names if not keep or name in keep]
    order = {t: i for i, t in enumerate(tasks)}

    def record(result):
        ops.append(result)
        fails = [f"{v['argument']}/{v['layout']}" for v in result["variants"] if v["verdict"] == "failed"]
        print(
            f"{result['library']:9s} {result['op']:20s} {result['seconds']:7.2f}s "
            f"{'ERROR ' + result['error'].splitlines()[0] if result['error'] else 'failed: ' + (', '.join(fails) or 'none')}",
            flush=True,
        )
        ops.sort(key=lambda o: order.get((o["library"], o["op"]), -1))
        meta["wall_seconds"] = round(time.perf_counter() - t0, 1)
        write_outputs(out_dir, meta, ops)

    # A worker that dies (a crash in a kernel) breaks the pool and every op in flight with it:
    # those ops run again afterwards, each in a process of its own, so that only the op that
    # kills its process is recorded as such.
    retry = []
    futures = {executor.submit(run_op, lib, op, device, small): (lib, op) for lib, op in tasks}
    for future in concurrent.futures.as_completed(futures):
        try:
            record(future.result())
        except concurrent.futures.process.BrokenProcessPool:
            retry.append(futures[future])
    executor.shutdown(wait=False, cancel_futures=True)
    for lib, op in sorted(retry, key=order.get):
        with pool_of_one() as alone:
            try:
                record(alone.submit(run_op, lib, op, device, small).result())
            except concurrent.futures.process.BrokenProcessPool:
                record({"library": lib, "op": op, "variants": [], "seconds": 0.0,
                        "error": "the process running it died (alone in its process)"})
    meta["wall_seconds"] = round(time.perf_counter() - t0, 1)
    summary = write_outputs(out_dir, meta, ops)
    append_history(out_dir, meta, summary)
    c = summary["counts"]
    print(
        f"{c['ops']} ops, {c['variants']} variants: {c['passed']} passed, {c['failed']} failed, "
        f"{c['unsupported']} unsupported, {c['not_applicable']} n/a, {c['errors']} errors; {meta['wall_seconds']} s",
        flush=True,
    )
    print(
        f"expected bugs run: {', '.join(summary['expected_bugs_run']) or 'none'}; not run: "
        f"{', '.join(summary['expected_bugs_not_run']) or 'none'}; missed: "
        f"{', '.join(summary['expected_bugs_missed']) or 'none'}; unexpected failures: "
        + (", ".join(f"{u['library']}.{u['op']} {u['argument']}/{u['layout']}" for u in summary["unexpected_failures"]) or "none")
        + f"; ops that could not run: {', '.join(summary['ops_not_run']) or 'none'}"
        + f"\nEXPECTATIONS {'MET' if summary['expectations_met'] else 'NOT MET'}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
