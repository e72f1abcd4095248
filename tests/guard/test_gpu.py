"""The guard on a CUDA device: inside CUDA-graph capture, on compiled Triton kernels, across devices.

Needs a GPU (run there: ``python -m pytest tests/guard/test_guard_gpu.py``); on the CPU-only CI
these are reported as skipped, and the CPU suite covers the same contract through the
interpreter.
"""

from __future__ import annotations

import pytest
import torch

from stridecheck import StrideGuardError, Tensor, stride, stride_guard

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def _copy_rows(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        tl.store(out_ptr + row * out_stride + cols, tl.load(x_ptr + row * x_stride + cols, mask=mask), mask=mask)

    return _copy_rows


def test_guarded_launcher_inside_cuda_graph_capture():
    kernel = stride_guard(_kernel())  # derived contract

    @stride_guard(x="M N", out=Tensor("M N", writes=True))
    def copy(x, out):
        kernel[(x.shape[0],)](out, out.stride(0), x, x.stride(0), x.shape[1], BLOCK=64)
        return out

    x = torch.randn(8, 70, device="cuda")[:, :50]
    out = torch.empty(8, 50, device="cuda")
    copy(x, out)  # compile the kernel outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        copy(x, out)  # the checks read metadata only: legal during capture
    x.copy_(torch.randn(8, 70, device="cuda")[:, :50])
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x)


def test_guarded_kernel_rejects_on_cuda_before_launch():
    kernel = stride_guard(_kernel())
    x = torch.randn(4, 64, device="cuda")[:, :48]
    out = torch.zeros(4, 48, device="cuda")
    with pytest.raises(StrideGuardError, match=r"steps x_ptr dim 0 by x_stride = 48, but x_ptr.stride\(0\) is 64"):
        kernel[(4,)](out, out.stride(0), x, 48, 48, BLOCK=64)
    torch.cuda.synchronize()
    assert torch.count_nonzero(out).item() == 0  # nothing was launched


def test_cpu_and_cuda_tensors_are_refused():
    @stride_guard(x="N", y="N", s=stride("x", 0))
    def f(x, y, s=None):
        return 1

    assert f(torch.zeros(3, device="cuda"), torch.zeros(3, device="cuda")) == 1
    with pytest.raises(StrideGuardError, match="y is on cpu but x is on cuda:0"):
        f(torch.zeros(3, device="cuda"), torch.zeros(3))


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("form", ["spec", "derived"])
def test_guarded_kernel_under_torch_compile(form, dynamic):
    kernel = _kernel()
    if form == "spec":
        kernel = stride_guard(x_ptr="M N", out_ptr=Tensor("M N", writes=True), x_stride=stride("x_ptr", 0))(kernel)
    else:
        kernel = stride_guard(kernel)

    def f(x, x_stride):
        out = torch.empty_like(x)
        kernel[(x.shape[0],)](out, out.stride(0), x, x_stride, x.shape[1], BLOCK=64)
        return out * 2

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic)
    x = torch.randn(8, 50, device="cuda")
    assert torch.equal(compiled(x, x.stride(0)), x * 2)
    with pytest.raises(Exception) as info:  # refused while tracing; dynamo wraps the error
        compiled(x, 7)
    assert "x_stride" in f"{info.value} {info.value.__cause__!r}"
