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
