"""Derived contracts on tensor descriptors: a host ``TensorDescriptor`` argument is checked like
any stride argument (its ``strides`` must reach its ``base``'s elements, its ``shape`` must fit),
and so are the ``strides=`` of ``tl.make_tensor_descriptor`` / ``tl.make_block_ptr``."""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from stridecheck import stride_guard
from tests.guard.conftest import DEV, refusal


@triton.jit
def _copy_tiles(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
    m = tl.program_id(0) * BM
    y_desc.store([m, 0], x_desc.load([m, 0]))


copy_tiles = stride_guard(_copy_tiles)


def test_host_descriptors_have_a_contract():
    text = copy_tiles.contract.describe()
    assert "x_desc: host TensorDescriptor" in text and "y_desc: host TensorDescriptor (written)" in text


def test_descriptors_built_from_their_tensors_launch():
    x = torch.randn(8, 16, device=DEV)
    y = torch.zeros(8, 16, device=DEV)
    copy_tiles[(2,)](TensorDescriptor.from_tensor(x, [4, 16]), TensorDescriptor.from_tensor(y, [4, 16]), BM=4, BN=16)
    assert torch.equal(x, y)


def test_a_descriptor_with_another_tensors_strides_is_refused():
    padded = torch.randn(8, 24, device=DEV)[:, :16]
    y = torch.zeros(8, 16, device=DEV)
    msg = refusal(
        copy_tiles[(2,)], TensorDescriptor(padded, [8, 16], [16, 1], [4, 16]), TensorDescriptor.from_tensor(y, [4, 16]),
        BM=4, BN=16,
    )
    assert msg == (
        "_copy_tiles: x_desc.strides[0] = 16, but x_desc.base.stride(0) is 24 (shape [8, 16], strides [24, 1]): "
        "x_desc.base[1, 0] is at offset 24, the descriptor addresses offset 16 (no element of x_desc.base: a gap "
        "between its elements); build it with TensorDescriptor.from_tensor(x_desc.base, block_shape) or from "
        "x_desc.base's own shape and strides"
    )
    assert torch.count_nonzero(y) == 0


def test_a_descriptor_wider_than_its_base_is_refused():
    x = torch.randn(8, 16, device=DEV)
    y = torch.zeros(8, 16, device=DEV)
    msg = refusal(
        copy_tiles[(2,)], TensorDescriptor.from_tensor(x, [4, 16]), TensorDescriptor(y, [9, 16], [16, 1], [4, 16]),
        BM=4, BN=16,
    )
    assert msg.startswith("_copy_tiles: y_desc.shape[0] = 9 but y_desc.base dim 0 holds only 8 along y_desc.strides[0]")


@triton.jit
def _device_descriptor(x_ptr, y_ptr, M, N, stride_xm, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_xm, 1], block_shape=[BM, BN])
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + offs, d.load([0, 0]))


def test_device_descriptor_strides_are_judged():
    k = stride_guard(_device_descriptor)
    assert "strides[0] = stride_xm" in k.contract.describe()
    x = torch.randn(4, 24, device=DEV)[:, :16]
    y = torch.zeros(4, 16, device=DEV)
    k._check(x, y, 4, 16, x.stride(0), BM=4, BN=16)
    assert "strides[0] = stride_xm" in refusal(k._check, x, y, 4, 16, 16, BM=4, BN=16)


@triton.jit
def _block_pointer(x_ptr, y_ptr, M, N, stride_xm, stride_xn, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_xm, stride_xn), offsets=(0, 0), block_shape=(BM, BN),
                          order=(1, 0))
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(y_ptr + offs, tl.load(p, boundary_check=(0, 1)))


def test_block_pointer_strides_are_judged():
    # Checked without a launch: the interpreter of recent Triton no longer runs block pointers.
    k = stride_guard(_block_pointer)
    x = torch.randn(4, 24, device=DEV)[:, :16]
    y = torch.zeros(4, 16, device=DEV)
    k._check(x, y, 4, 16, x.stride(0), x.stride(1), BM=4, BN=16)
    k._check(x.t(), y, 16, 4, x.t().stride(0), x.t().stride(1), BM=16, BN=4)  # order is the layout's business
    assert "strides[0] = stride_xm" in refusal(k._check, x, y, 4, 16, 16, 1, BM=4, BN=16)
