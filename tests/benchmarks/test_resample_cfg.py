"""benchmarks/resample_cfg.py: the configuration names it is given and the launch_config it installs."""

import argparse

import pytest

from tests.benchmarks import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("triton")


def test_configuration_names_parse_to_block_warps_splits_and_bad_ones_are_refused():
    mod = load_benchmark("resample_cfg")
    assert mod.parse_config("4096x8x1") == (4096, 8, 1)
    assert mod.parse_config("2048x8x2") == (2048, 8, 2)
    # A launch of these would fail on the GPU or silently measure something else: refused up front.
    for bad in ("4096x8", "3000x8x1", "4096x0x1", "4096x8x-1", "4096xeightx1"):
        with pytest.raises(argparse.ArgumentTypeError):
            mod.parse_config(bad)


def test_fixed_configuration_ignores_the_launch():
    import torch

    cfg = load_benchmark("resample_cfg").fixed(4096, 8, 1)
    for reqs, vocab in ((256, 151936), (1024, 262144), (1, 32000)):
        assert cfg(reqs, vocab, torch.bfloat16, torch.device("cpu")) == (4096, 8, 1)
