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

    monkeypatch.setattr(cache_module, "builder_fingerprint", lambda: "other-code")
    second = cache_module.Cache.open(tmp_path, options)
    assert second.file != first.file
    assert second.get(("k.py", None), b"digest") is None


def test_the_fingerprint_is_stable_and_covers_the_model_builders(tmp_path, monkeypatch):
    first = cache_module.builder_fingerprint()
    assert first == cache_module.builder_fingerprint() and len(first) == 16
    # A copy of the package whose model builder differs by one byte hashes differently.
    from pathlib import Path
    import shutil

    package = Path(cache_module.__file__).resolve().parent
    copy = tmp_path / "lint"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache_module, "__file__", str(copy / "cache.py"))
    assert cache_module.builder_fingerprint() == first
    (copy / "access_model.py").write_text((copy / "access_model.py").read_text() + "\n")
    assert cache_module.builder_fingerprint() != first


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
