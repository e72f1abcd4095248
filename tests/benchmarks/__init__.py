"""Tests of the benchmark scripts' own logic (argument parsing, summaries); nothing is timed."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (the benchmarks folder is no package): a fresh copy,
    registered under no name, so that a test can patch it freely."""
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
