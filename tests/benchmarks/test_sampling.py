"""benchmarks/sampling.py's own logic, on the CPU: the ratio table and loading a second package."""

from pathlib import Path

from tests.benchmarks import ROOT, load_benchmark


def test_ratio_table_pairs_ours_with_the_peer(tmp_path):
    sampling = load_benchmark("sampling")
    meta = dict(device="d", torch="t", triton="3.6", date="now", commit="abc")
    rows = [dict(impl="guarded_kernels.gumbel_sample", dtype="float32", T=1, V=32000, us_graph=3.0, us_eager=20.0),
            dict(impl="vllm-0.33.gumbel_sample", dtype="float32", T=1, V=32000, us_graph=6.0, us_eager=50.0),
            dict(impl="torch_gumbel", dtype="float32", T=1, V=32000, us_graph=16.0, us_eager=60.0)]
    sampling.write_md(tmp_path / "s.md", meta, rows)
    text = (tmp_path / "s.md").read_text()
    assert "| guarded_kernels.gumbel_sample | vllm-0.33.gumbel_sample | float32 | 1 | 32000 | 0.50 | 0.40 |" in text
    assert text.count("| torch_gumbel |") == 1  # listed, never paired


def test_a_second_checkout_loads_beside_the_package():
    import guarded_kernels

    sampling = load_benchmark("sampling")
    other = sampling.load_package(Path(ROOT))
    assert other is not guarded_kernels and other.gumbel_sample is not guarded_kernels.gumbel_sample
    import sys

    assert sys.modules["guarded_kernels"] is guarded_kernels
