"""benchmarks/resample_exchange.py: the configuration names it is given and what they install."""


import pytest

from tests.benchmarks import load_benchmark

pytest.importorskip("torch")
pytest.importorskip("triton")


def test_configuration_names_parse_to_exchange_configs():
    mod = load_benchmark("resample_exchange")
    cfg = mod.rs.ExchangeConfig
    # Columns a program -> programs per request at the case's vocabulary (ceil).
    assert mod.parse_config("1024x4:8192:en-ef:single", 151_936) == (
        "1024x4:8192:en-ef:single", cfg(1024, 4, 19, "", "evict_first", False))
    assert mod.parse_config("2048x8:16384:el-ef", 262_144)[1] == cfg(2048, 8, 16, "evict_last", "evict_first", True)
    # No policy given, or "-": the default eviction; columns below the block round up to one block.
    assert mod.parse_config("4096x8:1024", 32_000)[1] == cfg(4096, 8, 8, "", "", True)
    assert mod.parse_config("1024x4:8192:-:single", 8192)[1] == cfg(1024, 4, 1, "", "", False)
    with pytest.raises(KeyError):
        mod.parse_config("1024x4:8192:xx-ef", 8192)


def test_every_default_sweep_configuration_parses():
    mod = load_benchmark("resample_exchange")
    for dname, configs in mod.SWEEP.items():
        for text in configs:
            label, cfg = mod.parse_config(text, 151_936)
            assert label == text and cfg.num_splits >= 1 and cfg.block in (1024, 2048, 4096)


def test_skip_field_switches_the_draw_skip_on_with_its_stages():
    import torch

    mod = load_benchmark("resample_exchange")
    assert mod.skip_patches("1024x4:16384:en-ef:single") == []
    assert mod.skip_patches("1024x4:16384:en-ef:single:skipx") == []
    attrs = {name: value for _, name, value in mod.skip_patches("1024x4:32768:en-ef:single:skip4")}
    assert attrs["draw_skip"](256, 32768, 1024, torch.bfloat16, torch.device("cuda"), True) is True
    assert attrs["draw_stages"](torch.bfloat16, torch.device("cuda")) == 4
    # The field after it does not change the exchange configuration it parses to.
    assert mod.parse_config("1024x4:32768:en-ef:single:skip1", 151_936)[1] == mod.parse_config(
        "1024x4:32768:en-ef:single", 151_936)[1]
