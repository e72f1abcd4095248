"""Lint throughput against parsing baselines, measured in one run over one tree.

Measured, in this order, over the ``.py`` files the linter discovers under ``--tree`` (default
``/work/corpus``):

1. ``ast.parse`` of every file, single process (read + parse): the baseline.
2. With ``--libcst`` only: ``libcst.parse_module`` of the files whose bytes mention ``triton``,
   single process (the linter parsed these with libcst until it moved to ``ast`` alone; kept to
   compare against).
3. ``stridecheck lint`` (run from a frozen copy of the package; cold; default jobs = the CPU count) as a user runs it, a subprocess
   (start-up and imports counted), with an empty cache directory: every file is parsed and the
   cache is written (with ``--no-cold-cache``: ``--no-cache``, which skips the write; the two
   differ by one pickle dump, and one cold run over the corpus takes long on 2 cores).
4. ``stridecheck lint`` again with that cache: the warm run over the unchanged tree.

Ratios are against the baseline of the same run (never absolute times across machines).
Targets: cold <= 0.6x ``ast.parse`` on 2 cores (issue 16); warm < 0.2x cold.
Results: ``benchmarks/results/lint_speed.json`` and ``lint_speed.md``.

Usage: ``python benchmarks/lint_speed.py [--tree DIR] [--jobs N] [--out DIR]``
"""

from __future__ import annotations

import argparse
import ast
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _files(tree: Path) -> list[Path]:
    from stridecheck.lint.discovery import Discovery

    os.chdir(tree)
    return [tree / s.path for s in Discovery(tree).files(["."])]


def _ast_baseline(files: list[Path]) -> tuple[float, int]:
    failures = 0
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences etc. in real code
        for f in files:
            try:
                ast.parse(f.read_bytes(), filename=str(f))
            except (SyntaxError, ValueError, RecursionError, MemoryError, OSError):
                failures += 1
    return time.perf_counter() - started, failures


def _libcst_baseline(files: list[Path]) -> tuple[float, int, int]:
    import libcst

    failures = parsed = 0
    started = time.perf_counter()
    for f in files:
        data = f.read_bytes()
        if b"triton" not in data:
            continue
        parsed += 1
        try:
            libcst.parse_module(data)
        except Exception:  # noqa: BLE001 - a baseline: count and go on
            failures += 1
    return time.perf_counter() - started, parsed, failures


def _snapshot(into: Path) -> Path:
    """A frozen copy of the package (and its rule catalogue) for the linter runs: the cache is
    keyed on the model-building code, so an edit to the working tree between the cold and the
    warm run (other people work in it) would otherwise turn the warm run cold."""
    import shutil

    import stridecheck

    source = Path(stridecheck.__file__).resolve().parent
    shutil.copytree(source, into / "stridecheck", ignore=shutil.ignore_patterns("__pycache__"))
    rules = source.parent / "rules"
    if rules.is_dir():
        shutil.copytree(rules, into / "rules")
    return into


def _lint(tree: Path, args: list[str], snapshot: Path) -> tuple[float, list[dict], str, int]:
    env = {**os.environ, "PYTHONPATH": str(snapshot)}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "stridecheck", "lint", "--format", "json", "--exit-zero", *args, "."],
        cwd=tree, capture_output=True, text=True, env=env,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    return elapsed, findings, proc.stderr, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/work/corpus"))
    parser.add_argument("--jobs", type=int, default=None, help="linter workers (default: CPU count)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--no-cold-cache", action="store_true", help="cold run with --no-cache, then a separate cache fill")
    parser.add_argument("--libcst", action="store_true", help="also time libcst.parse_module of the triton files")
    opts = parser.parse_args()
    tree = opts.tree.resolve()
    jobs = opts.jobs or os.cpu_count() or 1

    files = _files(tree)
    total_bytes = sum(f.stat().st_size for f in files)
    for f in files:  # warm the page cache so the first measurement is not the only one reading disk
        f.read_bytes()
    print(f"{len(files)} files, {total_bytes / 1e6:.1f} MB under {tree}", flush=True)

    ast_s, ast_fail = _ast_baseline(files)
    print(f"ast.parse (all files, 1 process): {ast_s:.2f}s ({ast_fail} not parsed)", flush=True)
    cst_n = sum(1 for f in files if b"triton" in f.read_bytes())
    cst_s = cst_fail = None
    if opts.libcst:
        cst_s, cst_n, cst_fail = _libcst_baseline(files)
        print(f"libcst.parse_module ({cst_n} files mentioning triton, 1 process): {cst_s:.2f}s", flush=True)

    jobs_args = ["-j", str(jobs)]
    with tempfile.TemporaryDirectory(prefix="stridecheck-bench-") as work:
        snapshot = _snapshot(Path(work) / "code")
        cache = str(Path(work) / "cache")
        cold_mode = ["--no-cache"] if opts.no_cold_cache else ["--cache-dir", cache]
        cold_s, findings, err, code = _lint(tree, [*cold_mode, *jobs_args], snapshot)
        internal = [line for line in err.splitlines() if "internal error" in line]
        print(f"stridecheck lint cold ({' '.join(cold_mode[:1])}, -j {jobs}): {cold_s:.2f}s, exit {code}", flush=True)
        fill_s = cold_s
        if opts.no_cold_cache:
            fill_s, _, _, _ = _lint(tree, ["--cache-dir", cache, *jobs_args], snapshot)
        warm_s, warm_findings, _, _ = _lint(tree, ["--cache-dir", cache, *jobs_args], snapshot)
    print(f"stridecheck lint warm (cache filled in {fill_s:.2f}s): {warm_s:.2f}s", flush=True)
    same = [(f["path"], f["line"], f["code"]) for f in findings] == [
        (f["path"], f["line"], f["code"]) for f in warm_findings
    ]

    from stridecheck import __version__

    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": {"cpu": _cpu_name(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": {
            "python": platform.python_version(),
            "stridecheck": __version__,
            "libcst": importlib.metadata.version("libcst"),
        },
        "tree": str(tree),
        "files": len(files),
        "bytes": total_bytes,
        "files_mentioning_triton": cst_n,
        "jobs": jobs,
        "cold_run": "--no-cache" if opts.no_cold_cache else "empty cache (filled by this run)",
        "load_average_1min_at_end": os.getloadavg()[0],
        "seconds": {
            "ast_parse_all_1proc": round(ast_s, 3),
            "libcst_parse_triton_1proc": None if cst_s is None else round(cst_s, 3),
            "lint_cold_no_cache": round(cold_s, 3),
            "lint_cache_fill": round(fill_s, 3),
            "lint_warm": round(warm_s, 3),
        },
        "ratios": {
            "libcst_triton_vs_ast": None if cst_s is None else round(cst_s / ast_s, 3),
            "lint_cold_vs_ast": round(cold_s / ast_s, 3),
            "lint_warm_vs_cold": round(warm_s / cold_s, 3),
        },
        "targets": {"lint_cold_vs_ast": 0.6, "lint_warm_vs_cold": 0.2},
        "findings_by_code": dict(sorted(Counter(f["code"] for f in findings).items())),
        "internal_errors": len(internal),
        "internal_error_lines": internal[:50],
        "warm_findings_identical": same,
        "baseline_failures": {"ast": ast_fail, "libcst": cst_fail},
    }
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "lint_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    r, s = result["ratios"], result["seconds"]
    libcst_row = "" if cst_s is None else (
        f"| `libcst.parse_module` of the `triton` files, 1 process | {s['libcst_parse_triton_1proc']:.2f} "
        f"| {r['libcst_triton_vs_ast']:.2f}x |\n"
    )
    md = f"""# Lint speed

Run {result['date']} on {result['device']['cpu']} ({result['device']['cores']} cores),
Python {result['versions']['python']}, libcst {result['versions']['libcst']}, stridecheck
{result['versions']['stridecheck']}. Tree: `{tree}`, {len(files)} `.py` files ({total_bytes / 1e6:.0f} MB),
{cst_n} of them mention `triton`. Linter jobs: {jobs}. Produced by `benchmarks/lint_speed.py`.

| measurement | seconds | ratio |
|---|---:|---:|
| `ast.parse` of every file, 1 process (baseline) | {s['ast_parse_all_1proc']:.2f} | 1.00x |
{libcst_row}| `stridecheck lint` cold ({result['cold_run']}) | {s['lint_cold_no_cache']:.2f} | {r['lint_cold_vs_ast']:.2f}x (target <= 0.6x) |
| `stridecheck lint` warm cache, unchanged tree | {s['lint_warm']:.2f} | {r['lint_warm_vs_cold']:.2f}x of cold (target < 0.2x) |

Findings (cold run): {result['findings_by_code']}; internal errors: {len(internal)};
warm run reports the same findings: {same}. Load average (1 min) at the end:
{result['load_average_1min_at_end']:.1f}: the machine is shared, so absolute times are noisy; the
ratios are taken within one run.
"""
    (opts.out / "lint_speed.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
