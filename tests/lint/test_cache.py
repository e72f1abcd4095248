"""The model cache: a warm run over an unchanged tree parses nothing, and cross-file rules stay
right when only some files changed (the rules always run over every model)."""

from __future__ import annotations

import pickle

import pytest

from stridecheck.lint import analysis
from stridecheck.lint.analysis import AnalysisOptions
from stridecheck.lint.discovery import Discovery
from stridecheck.lint.engine import FileInput, RunOptions, lint

from tests.lint.lint_support import write

KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, stride_x, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask)
    tl.store(x_ptr + row * stride_x + offs, x * 2, mask=mask)
'''

LAUNCH = '''\
import triton

from kern import scale_rows


def scale(x):
    n_rows, n_cols = x.shape
    scale_rows[(n_rows,)](x, n_cols, n_cols, BLOCK=triton.next_power_of_2(n_cols))
'''


@pytest.fixture
def builds(monkeypatch):
    """Counts real build_module_model calls (the runs below are serial: jobs=1)."""
    calls: list[str] = []
    real = analysis.build_module_model

    def counting(source, *, path, module, options):
        calls.append(path)
        return real(source, path=path, module=module, options=options)

    monkeypatch.setattr(analysis, "build_module_model", counting)
    return calls


def _run(tmp_path, monkeypatch, **kw):
    monkeypatch.chdir(tmp_path)
    files = [FileInput(s.path) for s in Discovery(tmp_path).files(["."])]
    options = RunOptions(jobs=1, cache_dir=tmp_path / ".stridecheck_cache", root=tmp_path, **kw)
    return lint(files, options)


def _keys(result):
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


def test_warm_run_parses_nothing_and_reports_the_same(tmp_path, monkeypatch, builds):
    write(tmp_path / "kern.py", KERNEL)
    write(tmp_path / "launch.py", LAUNCH)
    write(tmp_path / "other.py", "import os\n")  # never mentions triton: never parsed
    cold = _run(tmp_path, monkeypatch)
    assert sorted(builds) == ["kern.py", "launch.py"] and cold.files_parsed == 2
    assert ("launch.py", 8, "SC004") in _keys(cold), "the cross-file SC004 the cache test relies on"
    builds.clear()
    warm = _run(tmp_path, monkeypatch)
    assert builds == [] and warm.files_parsed == 0
    assert _keys(warm) == _keys(cold) and warm.files_checked == 3
    assert (tmp_path / ".stridecheck_cache" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_change_in_one_file_of_a_cross_file_pair(tmp_path, monkeypatch, builds):
    write(tmp_path / "kern.py", KERNEL)
    write(tmp_path / "launch.py", LAUNCH)
    assert ("launch.py", 8, "SC004") in _keys(_run(tmp_path, monkeypatch))
    # Fix only the launcher: its model is rebuilt, the kernel's comes from the cache.
    write(tmp_path / "launch.py", LAUNCH.replace("(x, n_cols, n_cols,", "(x, x.stride(0), n_cols,"))
    builds.clear()
    fixed = _run(tmp_path, monkeypatch)
    assert builds == ["launch.py"]
    assert not [k for k in _keys(fixed) if k[2] == "SC004"]
    # Back to the faulty launcher, then change only the kernel: the launcher's model comes from
    # the cache and its finding is still made, against the kernel's new model.
    write(tmp_path / "launch.py", LAUNCH)
    _run(tmp_path, monkeypatch)
    write(tmp_path / "kern.py", "# a comment moves nothing\n" + KERNEL)
    builds.clear()
    again = _run(tmp_path, monkeypatch)
    assert builds == ["kern.py"]
    assert ("launch.py", 8, "SC004") in _keys(again)


def test_kernel_change_alone_changes_a_launch_finding(tmp_path, monkeypatch, builds):
    write(tmp_path / "kern.py", KERNEL)
    write(tmp_path / "launch.py", LAUNCH)
    assert ("launch.py", 8, "SC004") in _keys(_run(tmp_path, monkeypatch))
    # The kernel stops taking a stride (the parameter is now the row count, a size): the cached
    # launcher passes `n_cols` there, which is no longer a shape-into-stride mistake.
    write(tmp_path / "kern.py", KERNEL.replace("stride_x", "n_rows").replace("row * n_rows", "row * n_cols").replace(
        "row = tl.program_id(0).to(tl.int64)", "row = tl.program_id(0).to(tl.int64)\n    tl.device_assert(row < n_rows)"
    ))
    builds.clear()
    after = _run(tmp_path, monkeypatch, preview=False)
    assert builds == ["kern.py"]
    assert not [k for k in _keys(after) if k[2] == "SC004"]


def test_options_and_corruption(tmp_path, monkeypatch, builds):
    write(tmp_path / "kern.py", KERNEL)
    _run(tmp_path, monkeypatch)
    builds.clear()
    # other analysis options: another cache file, so the model is rebuilt
    _run(tmp_path, monkeypatch, analysis=AnalysisOptions(extra_size_names=("foo",)))
    assert builds == ["kern.py"]
    # a corrupt cache is a cold start, not a failure
    for f in (tmp_path / ".stridecheck_cache").glob("*.pickle"):
        f.write_bytes(b"not a pickle")
    builds.clear()
    result = _run(tmp_path, monkeypatch)
    assert builds == ["kern.py"] and result.internal_errors == []
    # and the file of the options in use is rewritten whole
    readable = []
    for f in (tmp_path / ".stridecheck_cache").glob("*.pickle"):
        try:
            readable.append(pickle.loads(f.read_bytes()))
        except pickle.UnpicklingError:
            pass
    assert [sorted(k[0] for k in entries) for entries in readable] == [["kern.py"]]


def test_cli_no_cache_and_cache_dir(tmp_path, cli):
    write(tmp_path / "kern.py", KERNEL)
    cli(["lint", "--no-cache", "."], cwd=tmp_path)
    assert not (tmp_path / ".stridecheck_cache").exists()
    cli(["lint", "--cache-dir", tmp_path / "elsewhere", "."], cwd=tmp_path)
    assert list((tmp_path / "elsewhere").glob("models-*.pickle"))
    assert not (tmp_path / ".stridecheck_cache").exists()


def test_model_objects_round_trip_through_the_cache_file(tmp_path, monkeypatch):
    # Model objects are written as calls of their class on their field values (faster to read
    # back than the data classes' own pickling); every field must come back, frozen classes too.
    import io

    from stridecheck.lint.cache import _ModelPickler, _ModelUnpickler
    from stridecheck.lint.engine import build_one

    write(tmp_path / "launch.py", LAUNCH)
    outcome = build_one(("launch.py", LAUNCH, "launch", AnalysisOptions(), False))
    assert outcome[0] == "model" and outcome[1].launches
    buf = io.BytesIO()
    _ModelPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump({("launch.py", "launch"): (b"d", outcome)})
    assert b"_dataclass" not in buf.getvalue()  # no __setstate__ of the data classes
    back = _ModelUnpickler(io.BytesIO(buf.getvalue())).load()
    assert back == {("launch.py", "launch"): (b"d", outcome)}
    launch = back[("launch.py", "launch")][1][1].launches[0]
    assert launch.args[0].span == outcome[1].launches[0].args[0].span and launch.args[0].text == "x"


def test_a_run_leaves_the_garbage_collector_as_it_found_it(tmp_path, monkeypatch):
    # The run freezes its models out of the collector's sight; afterwards they are collectable again.
    import gc

    write(tmp_path / "kern.py", KERNEL)
    write(tmp_path / "launch.py", LAUNCH)
    before = gc.get_freeze_count()
    _run(tmp_path, monkeypatch)
    assert gc.get_freeze_count() == 0 and before == 0
