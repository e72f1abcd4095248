"""A derived guard under torch.compile (CPU, eager backend): dynamo traces a stand-in that turns
the launch's sizes into guarded Python ints and asks for the verdict at trace time; a refusal is
raised while tracing (dynamo wraps it; the message is in the chain). The launch itself is
exercised on a GPU in test_gpu.py."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from stridecheck import stride_guard
from tests.guard.test_kernel_launch import _copy_rows


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_derived_check_traces_and_refuses_while_tracing(dynamic):
    guarded = stride_guard(_copy_rows)

    def f(x, x_stride):
        out = torch.empty_like(x)
        guarded._check(out, out.stride(0), x, x_stride, x.shape[1], BLOCK=64)
        return x * 2

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic, backend="eager")
    x = torch.randn(8, 50)
    assert torch.equal(compiled(x, x.stride(0)), x * 2)
    y = torch.randn(6, 40)
    assert torch.equal(compiled(y, y.stride(0)), y * 2)  # another size: recompiled or guarded, still checked
    with pytest.raises(Exception) as info:
        compiled(x, 7)
    chain, e = [], info.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    assert any("`row * x_stride`" in m and "x_stride = 7" in m for m in chain)


def test_a_check_with_kept_layouts_still_traces():
    # Eager launches keep their layout for the C++ comparison; dynamo must still trace the check
    # (through its stand-in), not the comparison.
    guarded = stride_guard(_copy_rows)
    x = torch.randn(8, 50)
    out = torch.empty_like(x)
    for _ in range(3):
        guarded._check(out, out.stride(0), x, x.stride(0), x.shape[1], BLOCK=64)
    assert guarded._check.__stride_guard_fast__ is None or any(guarded._check.__stride_guard_fast__.values())

    def f(x):
        out = torch.empty_like(x)
        guarded._check(out, out.stride(0), x, x.stride(0), x.shape[1], BLOCK=64)
        return x * 2

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="eager")
    assert torch.equal(compiled(x), x * 2)
