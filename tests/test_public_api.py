"""The package's public names: listed by dir() without importing torch, and shown under their
public module."""

from __future__ import annotations

import subprocess
import sys


def test_dir_lists_the_public_api_without_importing_torch():
    code = (
        "import sys, stridecheck\n"
        "public = [n for n in dir(stridecheck) if not n.startswith('_')]\n"
        "print(set(public) == set(stridecheck.__all__) - {'__version__'} and 'torch' not in sys.modules)\n"
        "print(sorted(stridecheck.__all__))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ok, names = run.stdout.splitlines()
    assert ok == "True", run.stdout
    for name in ("stride_guard", "StrideGuardError", "Tensor", "stride", "__version__"):
        assert name in names


def test_stride_guard_error_shows_its_public_name():
    import stridecheck
    from stridecheck import StrideGuardError

    assert StrideGuardError is stridecheck.StrideGuardError
    assert StrideGuardError.__module__ == "stridecheck" and StrideGuardError.__qualname__ == "StrideGuardError"
    assert repr(StrideGuardError) == "<class 'stridecheck.StrideGuardError'>"
    run = subprocess.run(
        [sys.executable, "-c", "from stridecheck import StrideGuardError\nraise StrideGuardError('x')"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.stderr.strip().splitlines()[-1] == "stridecheck.StrideGuardError: x"
