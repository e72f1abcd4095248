"""A cache written by other linter code is never read back: the key holds a digest of the
linter's own source, not only its version (an editable install changes code between runs
without a version bump, and a stale pickle of an older model class crashes the rules)."""

from __future__ import annotations

from stridecheck.lint import cache as cache_module
from stridecheck.lint.analysis import AnalysisOptions


def test_a_change_in_the_linter_source_moves_the_cache_file(tmp_path, monkeypatch):
    options = AnalysisOptions()
    first = cache_module.Cache.open(tmp_path, options)
    first.put(("k.py", None), b"digest", ("model",))
    first.save()
    assert cache_module.Cache.open(tmp_path, options).get(("k.py", None), b"digest") == ("model",)

    monkeypatch.setattr(cache_module, "_code_fingerprint", lambda: "other-code")
    second = cache_module.Cache.open(tmp_path, options)
    assert second.file != first.file
    assert second.get(("k.py", None), b"digest") is None


def test_the_fingerprint_is_stable_and_covers_the_model_builders():
    assert cache_module._code_fingerprint() == cache_module._code_fingerprint()
    assert len(cache_module._code_fingerprint()) == 16


class _Planted:
    """A pickle that runs a command when loaded (what a planted cache file would hold)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_planted_cache_file_runs_no_code(tmp_path):
    import pickle

    options = AnalysisOptions()
    cache = cache_module.Cache.open(tmp_path / "cache", options)
    marker = tmp_path / "pwned"
    cache.file.parent.mkdir(parents=True)
    cache.file.write_bytes(pickle.dumps({("k.py", None): (b"d", _Planted(marker))}))
    reopened = cache_module.Cache.open(tmp_path / "cache", options)
    assert not marker.exists()
    assert reopened.entries == {}  # refused: a cold start, not a crash


def test_real_models_round_trip_through_the_restricted_reader(tmp_path):
    from stridecheck.lint.analysis import build_module_model

    source = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, stride_x, n, BLOCK: tl.constexpr):\n"
        "    row = tl.program_id(0).to(tl.int64)\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + row * stride_x + offs, 1.0, mask=offs < n)\n\n\n"
        "def launch(x):\n    k[(x.shape[0],)](x, x.stride(0), x.shape[1], BLOCK=128)\n"
    )
    options = AnalysisOptions()
    model = build_module_model(source, path="k.py", module="k", options=options)
    assert model.kernels and model.launches
    cache = cache_module.Cache.open(tmp_path, options)
    cache.put(("k.py", "k"), b"digest", ("model", model))
    cache.save()
    back = cache_module.Cache.open(tmp_path, options).get(("k.py", "k"), b"digest")
    assert back == ("model", model)
