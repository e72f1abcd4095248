"""benchmarks/block_skip.py: its configurations set what their names say (GPU-free parts)."""

import pytest

from tests.benchmarks import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("triton")


def test_each_configuration_patches_what_its_name_says(monkeypatch):
    import torch

    mod = load_benchmark("block_skip")
    monkeypatch.setattr(mod.sm, "sm_count", lambda device: 132)
    for label in mod.CONFIGS:
        attrs = {name: value for _, name, value in mod.patches(label)}
        assert attrs["block_skip"](4096, 4096, torch.bfloat16, torch.device("cuda")) == (not label.startswith("no skip"))
        assert ("max_registers" in attrs) == ("maxnreg" in label)
        if "maxnreg" in label:
            assert attrs["max_registers"](torch.bfloat16, torch.device("cuda")) == 64
        assert ("launch_config" in attrs) == ("2048x8" in label or "1024x4" in label)
        if "2048x8" in label:
            # The wave rule over four 2,048 / 8 programs per SM: 256 rows of 75 blocks fill 528
            # slots in one wave at 2 programs a row (38 blocks each).
            block, warps, splits = attrs["launch_config"](256, 151_936, torch.bfloat16, torch.device("cuda"), False)
            assert (block, warps) == (2048, 8) and splits == mod.sm._wave_splits(256, 75, 528) == 2
        if "1024x4" in label:
            # Eight 1,024 / 4 programs per SM.
            block, warps, splits = attrs["launch_config"](256, 151_936, torch.bfloat16, torch.device("cuda"), False)
            assert (block, warps) == (1024, 4) and splits == mod.sm._wave_splits(256, 149, 1056)
        stages = [int(w[7:]) for w in label.split() if w.startswith("stages=")]
        assert ("loop_stages" in attrs) == bool(stages)
        if stages:
            assert attrs["loop_stages"](torch.bfloat16, torch.device("cuda"), True) == stages[0]
    for label in mod.RESAMPLE_CONFIGS:
        attrs = {name: value for mod_, name, value in mod.patches(label)}
        assert set(attrs) <= {"draw_skip", "draw_stages"} and mod._impl(label) == mod.RESAMPLE
        assert attrs["draw_skip"](256, 16384, 1024, torch.bfloat16, torch.device("cuda"), True) == ("no skip" not in label)
        assert ("draw_stages" in attrs) == ("stages=" in label)
    with pytest.raises(SystemExit):
        monkeypatch.setattr("sys.argv", ["block_skip.py", "--out", "x.json", "--configs", "fast"])
        mod.main()


def test_sweep_cases_parse_to_dtype_rows_vocabulary():
    bench = load_benchmark("sampling")
    assert bench.parse_cases(["bfloat16:256:151936", "float32:8:32000"]) == [("bfloat16", 256, 151936),
                                                                           ("float32", 8, 32000)]
    with pytest.raises(ValueError):
        bench.parse_cases(["bfloat16:256"])
