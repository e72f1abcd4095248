"""Derived contracts judge an address by the elements it reaches, not by how its terms are
grouped: merged and split dims, grouped channels, a step past a one-group weight, broadcasts.
Our own reproduction of Liger-Kernel's group-norm backward launch (a valid launch the
term-per-dim reading refused) is here."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from stridecheck import stride_guard
from tests.guard.conftest import DEV, refusal


@triton.jit
def _channels_of_group(x_ptr, dx_ptr, x_row_stride, x_col_stride, HIDDEN: tl.constexpr, CPG: tl.constexpr,
                       BLOCK: tl.constexpr):
    # Programs (batch, group); the group's channels are walked with the input's [B, C, H]
    # strides, for the input and for the gradient, which is allocated [B, G, CPG * H].
    batch = tl.program_id(0).to(tl.int64)
    group = tl.program_id(1)
    x_ptr += batch * x_row_stride
    dx_ptr += batch * x_row_stride
    offs = tl.arange(0, BLOCK)
    for channel in range(group * CPG, (group + 1) * CPG):
        v = tl.load(x_ptr + channel * x_col_stride + offs, mask=offs < HIDDEN)
        tl.store(dx_ptr + channel * x_col_stride + offs, v * 2, mask=offs < HIDDEN)


channels_of_group = stride_guard(_channels_of_group)


def test_grouped_channels_with_the_input_strides_are_accepted():
    # The same bytes, grouped differently: dx [B, G, CPG*H] contiguous is dx [B, C, H] contiguous.
    B, G, CPG, H = 2, 3, 2, 5
    x = torch.randn(B, G * CPG, H, device=DEV)
    dx = torch.zeros(B, G, CPG * H, device=DEV)
    channels_of_group[(B, G)](x, dx, x.stride(0), x.stride(1), HIDDEN=H, CPG=CPG, BLOCK=8)
    assert torch.equal(dx.view(B, G * CPG, H), x * 2)


def test_a_padded_gradient_addressed_with_the_input_strides_is_refused():
    B, G, CPG, H = 2, 3, 2, 5
    x = torch.randn(B, G * CPG, H, device=DEV)
    dx = torch.zeros(B, G, CPG * H + 2, device=DEV)[:, :, : CPG * H]  # groups 12 apart, not 10
    msg = refusal(channels_of_group[(B, G)], x, dx, x.stride(0), x.stride(1), HIDDEN=H, CPG=CPG, BLOCK=8)
    assert "`batch * x_row_stride` (line " in msg
    assert "steps dx_ptr dim 0 by x_row_stride = 30, but dx_ptr.stride(0) is 36" in msg
    assert "dx_ptr[1, 0, 0] is at offset 36, but `batch * x_row_stride` reaches offset 30 when its index is 1" in msg
    assert torch.count_nonzero(dx) == 0


def test_a_step_that_cuts_a_dim_against_its_boundaries_is_refused():
    # Channels 4 wide cut a gradient whose groups hold 2 channels of 5: no grouping reaches it.
    x = torch.randn(2, 6, 5, device=DEV)
    dx = torch.zeros(2, 3, 10, device=DEV)
    msg = refusal(channels_of_group[(2, 3)], x, dx, x.stride(0), 4, HIDDEN=5, CPG=2, BLOCK=8)
    assert "`channel * x_col_stride`" in msg and "x_col_stride = 4" in msg


@triton.jit
def _group_scale(w_ptr, y_ptr, CPG, n_groups, BLOCK: tl.constexpr):
    # y[g * CPG + c] = w[g * CPG + c] for the CPG channels of group g (a weight of every channel).
    group = tl.program_id(0).to(tl.int64)
    local = tl.arange(0, BLOCK)
    mask = local < CPG
    v = tl.load(w_ptr + group * CPG + local, mask=mask)  # stridecheck: ignore[SC001]
    tl.store(y_ptr + group * CPG + local, v, mask=mask)  # stridecheck: ignore[SC001]


group_scale = stride_guard(_group_scale)


def test_a_step_past_a_one_group_weight_is_accepted():
    # One group: `group * CPG` steps by the whole weight, and its index is only ever 0.
    w = torch.randn(8, device=DEV)
    y = torch.zeros(8, device=DEV)
    group_scale[(1,)](w, y, 8, 1, BLOCK=8)
    assert torch.equal(y, w)


def test_one_channel_per_group_is_accepted():
    # CPG = 1: the group step and the channel index both step by 1, walking one dim together.
    w = torch.randn(6, device=DEV)
    y = torch.zeros(6, device=DEV)
    group_scale[(6,)](w, y, 1, 6, BLOCK=2)
    assert torch.equal(y, w)


@triton.jit
def _add_row(x_ptr, x_stride, w_ptr, w_stride, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * x_stride + offs, mask=offs < n) + tl.load(w_ptr + row * w_stride + offs, mask=offs < n)
    tl.store(out_ptr + row * x_stride + offs, v, mask=offs < n)


add_row = stride_guard(_add_row)


def test_a_zero_step_broadcasts_a_tensor_that_lacks_the_dim():
    x = torch.randn(3, 4, device=DEV)
    w = torch.randn(4, device=DEV)
    out = torch.empty(3, 4, device=DEV)
    add_row[(3,)](x, x.stride(0), w, 0, out, 4, BLOCK=4)
    assert torch.equal(out, x + w)
    # A tensor that has the dim is not broadcast by a zero step: its rows would be skipped.
    w2 = torch.randn(3, 4, device=DEV)
    msg = refusal(add_row[(3,)], x, x.stride(0), w2, 0, out, 4, BLOCK=4)
    assert "`row * w_stride`" in msg and "w_ptr[1, 0] is at offset 4, but `row * w_stride` reaches offset 0" in msg
