"""benchmarks/host_cost.py's own logic, on the CPU: the stand-in launcher's argument count and the
ratio table (nothing is timed)."""

import types

from tests.benchmarks import load_benchmark


def test_the_stand_in_launcher_counts_the_runtime_arguments():
    host_cost = load_benchmark("host_cost")
    src = types.SimpleNamespace(signature={"x_ptr": "*fp32", "n": "i32", "cache_ptr": "constexpr",
                                           "BLOCK": "constexpr"})
    launch = host_cost._NoLaunch(src, None)
    assert (launch.params, launch.runtime_args) == (4, 2)
    assert host_cost.launches_of(lambda: (launch(1, 2, 3), launch())) == [(4, 2), (4, 2)]
    assert host_cost.RECORD is None  # recording stops after the call


def test_ratio_table_pairs_ours_with_the_old_package(tmp_path):
    host_cost = load_benchmark("host_cost")
    meta = dict(cpu="c", torch="t", triton="3.9", date="now", commit="abc", old="55710b7")
    row = dict(dtype="float32", T=8, V=151936, launches=1, params=[41], runtime_args=[14])
    rows = [dict(row, impl="guarded_kernels.gumbel_sample", us_host=20.0),
            dict(row, impl="guarded_kernels[unguarded].gumbel_sample", us_host=15.0),
            dict(row, impl="guarded_kernels[jit].gumbel_sample", us_host=40.0),
            dict(row, impl="guarded_kernels@old.gumbel_sample", us_host=80.0, params=[42], runtime_args=[21])]
    host_cost.write_md(tmp_path / "h.md", meta, rows)
    text = (tmp_path / "h.md").read_text()
    assert "| gumbel_sample | float32 | 8 | 0.25 | 0.50 | 5.0 |" in text
    assert "| guarded_kernels@old.gumbel_sample | float32 | 8 | 80.0 | 1 | 42 | 21 |" in text
