"""STRIDECHECK_GUARD modes (off, warn once, raise), torch stays unimported, and torch.compile tracing of spec-guarded launchers."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading

import pytest
import torch

from stridecheck import StrideGuardError, Tensor, stride, stride_guard
from stridecheck.guard import guard_mode
from stridecheck.guard.traced import generate_traced
from tests.guard.conftest import SlowSet


def _launcher(x, out):
    return out


def test_disabled_returns_the_function_itself(monkeypatch):
    monkeypatch.setenv("STRIDECHECK_GUARD", "0")
    assert stride_guard(x="N")(_launcher) is _launcher
    assert stride_guard(_launcher) is _launcher  # even a bare form is not inspected


def test_mode_is_read_at_decoration(monkeypatch):
    monkeypatch.setenv("STRIDECHECK_GUARD", "1")
    g = stride_guard(x="N", out="N")(_launcher)
    monkeypatch.setenv("STRIDECHECK_GUARD", "0")
    with pytest.raises(StrideGuardError):
        g(torch.zeros(2), torch.zeros(3))


def test_unknown_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("STRIDECHECK_GUARD", "maybe")
    with pytest.raises(ValueError, match="STRIDECHECK_GUARD must be 0, 1 or warn, got 'maybe'"):
        guard_mode()


def test_warn_logs_once_per_function_and_check(monkeypatch, caplog):
    monkeypatch.setenv("STRIDECHECK_GUARD", "warn")
    g = stride_guard(x="N", out=Tensor("N", writes=True))(_launcher)
    out = torch.zeros(3)
    with caplog.at_level(logging.WARNING, logger="stridecheck.guard"):
        for _ in range(3):
            assert g(torch.zeros(2), out) is out  # still launches
        g(torch.zeros(2), torch.zeros(1).expand(2))  # a second failing check: its own warning
        g(torch.zeros(2), torch.zeros(1).expand(2))
    msgs = [r.getMessage() for r in caplog.records if r.name == "stridecheck.guard"]
    assert msgs == [
        "_launcher: out dim 0 is 3 but must be N = 2 (N bound by x dim 0); pass arguments whose sizes agree, as the spec 'N' says",
        # The write race is reported before the inner stride (its fix mends both).
        "_launcher: out is written but two of its elements share memory: dim 0 has stride 0 and size 2 (an expanded "
        "view); concurrent programs would race on the same address — allocate out with torch.empty(...) so that "
        "each element has memory of its own",
        "_launcher: out dim 0 (the last) has stride 0 but must have stride 1: the kernel addresses it as `ptr + offs`; "
        "allocate out with unit inner stride (torch.empty(...)) and copy the result where it belongs after the "
        "launch, or declare Tensor(..., inner_stride=None) if the kernel steps that dim by its stride",
    ]


def test_decorating_and_importing_do_not_import_torch():
    code = (
        "import sys\n"
        "from stridecheck import stride_guard, Tensor, stride\n"
        "@stride_guard(x='T V', y=Tensor('T', writes=True), s=stride('x', 0))\n"
        "def f(x, y, s): return 1\n"
        "assert f(None, None, None) == 1\n"
        "print(sorted(m for m in ('torch', 'triton', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------------- torch.compile


@stride_guard(
    logits="T V",
    pos="T",
    cache=Tensor("R S >=V", writes=True, dtype=torch.float32),
    logits_stride=stride("logits", 0),
    vocab="V",
)
def _compiled_body(logits, pos, cache, logits_stride, vocab):
    return logits.sum(-1) + pos + cache[:, 0, :vocab].sum()


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_traces_a_guarded_function(dynamic):
    torch._dynamo.reset()
    compiled = torch.compile(_compiled_body, fullgraph=True, dynamic=dynamic, backend="eager")
    for t, v in [(4, 10), (5, 12), (6, 13)]:
        logits = torch.randn(t, v + 3)[:, :v]
        pos = torch.arange(t, dtype=torch.float32)
        cache = torch.ones(2, 2, v + 1)
        got = compiled(logits, pos, cache, logits.stride(0), v)
        torch.testing.assert_close(got, _compiled_body(logits, pos, cache, logits.stride(0), v))
    # The guard still refuses inside the compiled region, while tracing; under fullgraph the
    # error surfaces as dynamo's wrapper whose text or cause carries our message.
    with pytest.raises(Exception) as info:
        compiled(logits, pos, torch.ones(2, 2, v - 1), logits.stride(0), v)
    chain = f"{info.value} {info.value.__cause__!r}"
    assert "_compiled_body: cache dim 2 must be >= V; it would be truncated" in chain


def test_torch_compile_without_fullgraph_raises_our_error():
    torch._dynamo.reset()
    compiled = torch.compile(_compiled_body, backend="eager")
    logits = torch.randn(3, 8)
    with pytest.raises(StrideGuardError, match="cache dim 2 is 7 but must be >= V = 8"):
        compiled(logits, torch.zeros(3), torch.ones(2, 2, 7), 8, 8)


def test_torch_compile_with_data_dependent_sizes():
    # Sizes from nonzero() are unbacked: a Python bool of them stops tracing. The guard hands
    # dynamo a stand-in that checks through torch._check instead.
    torch._dynamo.config.capture_dynamic_output_shape_ops = True
    try:

        @stride_guard(idx="N 1", w=Tensor("N", writes=True), cache=Tensor("R >=N"), ws=stride("w", 0))
        def f(idx, w, cache=None, ws=None):
            return idx.sum() + w.sum()

        assert "torch._check" not in f.__stride_guard_source__
        assert "_sg_expect(" in f.__stride_guard_traced_source__

        def outer(m, extra):
            idx = m.nonzero()
            w = torch.ones(idx.shape[0] + extra)
            return f(idx, w, torch.zeros(2, 3), w.stride(0))

        torch._dynamo.reset()
        compiled = torch.compile(outer, fullgraph=True, backend="eager")
        assert compiled(torch.tensor([1, 0, 1, 1]), 0).item() == 3 + 2 + 3  # idx sum + w sum
        # w one longer than idx: refused while tracing (N bound by idx, w dim 0 = N + 1).
        with pytest.raises(Exception, match="must equal N"):
            compiled(torch.tensor([1, 0, 1, 1]), 1)
        # cache only 3 wide but N = 4 rows: a runtime assertion of the compiled graph.
        with pytest.raises(RuntimeError):
            compiled(torch.tensor([1, 1, 1, 1]), 0)
    finally:
        torch._dynamo.config.capture_dynamic_output_shape_ops = False


def test_warn_once_holds_under_threads(monkeypatch, caplog):
    # Fixed: the warn-once test and the insertion were separate steps, so threads that failed
    # the same check together each logged it.
    monkeypatch.setenv("STRIDECHECK_GUARD", "warn")

    @stride_guard(x="N", y="N")
    def f(x, y):
        return "launched"

    f.__globals__["_sg_report"].warned = SlowSet()
    barrier = threading.Barrier(8)
    results = []

    def worker():
        barrier.wait()
        results.append(f(torch.zeros(3), torch.zeros(4)))

    with caplog.at_level(logging.WARNING, logger="stridecheck.guard"):
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    msgs = [r.getMessage() for r in caplog.records if r.name == "stridecheck.guard"]
    assert results == ["launched"] * 8
    assert msgs == ["f: y dim 0 is 4 but must be N = 3 (N bound by x dim 0); pass arguments whose sizes agree, as the spec 'N' says"]


@stride_guard(x="... N", out=Tensor("... N", writes=True), n="N")
def _shadowing(x, out, n, min=0.0, len=None, isinstance=None, int=None):  # noqa: A002 - the attack
    return "ok"


def test_traced_variant_survives_parameters_named_like_builtins():
    # The torch.compile stand-in raised TypeError ('int' object is not callable) on a valid call.
    traced, _ = generate_traced(_shadowing.__wrapped__, _shadowing.__stride_contract__)
    assert traced(torch.zeros(2, 3), torch.zeros(2, 3), 3, min=-1.0, len=7, isinstance=1, int=2) == "ok"
