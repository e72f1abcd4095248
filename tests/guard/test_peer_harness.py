"""The harness behind benchmarks/results/guard_peer.md, on a toy library of one kernel: the
baseline, raise and warn runs of its tests through guard_peer_plugin, and what compare() makes of
them (a valid launch refused is counted; a test that fails unguarded is not compared)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import guard_peer  # noqa: E402 - benchmarks/ is not a package

KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, y_ptr, stride, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * stride + offs, mask=offs < n)
    tl.store(y_ptr + row * n + offs, v * 2, mask=offs < n)


def scale(x, stride=None):
    y = x.new_empty(x.shape[0], x.shape[1])
    _scale[(x.shape[0],)](x, y, x.stride(0) if stride is None else stride, x.shape[1], BLOCK=16)
    return y
'''

TESTS = '''
import torch

from toylib.ops import scale


def test_contiguous():
    x = torch.randn(3, 10)
    assert torch.equal(scale(x), x * 2)


def test_padded_rows():
    x = torch.randn(3, 16)[:, :10]
    assert torch.equal(scale(x), x * 2)


def test_a_bad_launch_that_still_passes():
    x = torch.randn(3, 16)[:, :10]
    scale(x, stride=10)  # rows read 10 apart: wrong values, but this test checks nothing


def test_fails_unguarded():
    assert False
'''


@pytest.mark.skipif(sys.platform == "win32", reason="subprocess pytest runs")
def test_the_harness_counts_refusals_of_tests_that_pass_unguarded(tmp_path):
    lib = tmp_path / "toy"
    (lib / "toylib").mkdir(parents=True)
    (lib / "toylib" / "__init__.py").write_text("")
    (lib / "toylib" / "ops.py").write_text(textwrap.dedent(KERNEL))
    (lib / "tests").mkdir()
    (lib / "tests" / "test_toy.py").write_text(textwrap.dedent(TESTS))
    args = argparse.Namespace(
        library="toylib", root=str(lib), prefix="toylib", cap="", interpret=True, timeout=120, workers=1,
        warn_every=1, test_paths=["tests"], budget=0,
    )
    work = tmp_path / "work"
    timing = guard_peer.run_suites(args, work)
    result = guard_peer.compare(work)
    assert timing["baseline_passed"] == 3
    assert result["tests_compared"] == 3 and result["tests_with_launches"] == 3
    # The bad launch is refused in raise mode (so its test fails there) and logged in warn mode.
    assert result["refused_tests"] == ["tests/test_toy.py::test_a_bad_launch_that_still_passes"]
    assert result["valid_refused"] == 1
    assert result["warnings_logged"] == 1
    assert "`row * stride`" in result["refusal_messages"][0]
    assert result["kernels_launched"] == 1 and not result["derivation_errors"]
