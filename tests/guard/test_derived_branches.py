"""Derived contracts specialise on a launch's constexprs, ``None`` arguments, the autotuner's
config and the heuristics' values, as Triton does: code under a branch the launch makes false does
not exist, and what it would read is not judged. Our own reproduction of Liger-Kernel's modulated
RMSNorm launch (a dummy shift pointer of stride 0, read only under ``if has_shift:``) is here."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from stridecheck import stride_guard
from tests.guard.conftest import DEV, refusal


@triton.jit
def _modulate(x_ptr, x_stride, scale_ptr, scale_stride, shift_ptr, shift_stride, y_ptr, n,
              HAS_SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + row * x_stride + offs, mask=mask) * tl.load(scale_ptr + row * scale_stride + offs, mask=mask)
    if HAS_SHIFT:
        y += tl.load(shift_ptr + row * shift_stride + offs, mask=mask)
    tl.store(y_ptr + row * x_stride + offs, y, mask=mask)


modulate = stride_guard(_modulate)


def test_a_dummy_pointer_under_a_false_constexpr_branch_is_not_judged():
    # No shift: the launcher passes the scale again as the shift, with stride 0. Triton compiles
    # the `if HAS_SHIFT:` branch away, so that read never happens.
    x = torch.randn(3, 4, device=DEV)
    scale = torch.randn(3, 4, device=DEV)
    y = torch.empty(3, 4, device=DEV)
    modulate[(3,)](x, x.stride(0), scale, scale.stride(0), scale, 0, y, 4, HAS_SHIFT=False, BLOCK=4)
    assert torch.equal(y, x * scale)
    assert "shift_ptr line " in modulate.contract.describe() and "if HAS_SHIFT" in modulate.contract.describe()


def test_the_same_dummy_under_a_true_branch_is_refused():
    x = torch.randn(3, 4, device=DEV)
    scale = torch.randn(3, 4, device=DEV)
    y = torch.empty(3, 4, device=DEV)
    msg = refusal(modulate[(3,)], x, x.stride(0), scale, scale.stride(0), scale, 0, y, 4, HAS_SHIFT=True, BLOCK=4)
    assert "`row * shift_stride`" in msg and "shift_ptr[1, 0] is at offset 4" in msg


@triton.jit
def _maybe_bias(x_ptr, bias_ptr, bias_stride, y_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + row * n + offs, mask=mask)  # stridecheck: ignore[SC001]
    if bias_ptr is not None:
        v += tl.load(bias_ptr + row * bias_stride + offs, mask=mask)
    if ACT == "relu":
        v = tl.maximum(v, 0.0)
    tl.store(y_ptr + row * n + offs, v, mask=mask)  # stridecheck: ignore[SC001]


maybe_bias = stride_guard(_maybe_bias)


def test_a_none_argument_removes_its_branch():
    x = torch.randn(2, 4, device=DEV)
    y = torch.empty(2, 4, device=DEV)
    maybe_bias[(2,)](x, None, 12345, y, 4, ACT="relu", BLOCK=4)
    assert torch.equal(y, x.clamp_min(0))
    bias = torch.randn(2, 4, device=DEV)
    assert "`row * bias_stride`" in refusal(maybe_bias[(2,)], x, bias, 12345, y, 4, ACT="none", BLOCK=4)


@triton.jit
def _act_reads(x_ptr, x_stride, g_ptr, g_stride, y_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * x_stride + offs, mask=offs < n)
    if ACT == "gated":
        v *= tl.load(g_ptr + row * g_stride + offs, mask=offs < n)
    tl.store(y_ptr + row * x_stride + offs, v, mask=offs < n)


act_reads = stride_guard(_act_reads)


def test_an_equality_test_on_a_constexpr_decides_the_branch():
    x = torch.randn(2, 4, device=DEV)
    y = torch.empty(2, 4, device=DEV)
    act_reads[(2,)](x, 4, x, 0, y, 4, ACT="plain", BLOCK=4)
    assert torch.equal(y, x)
    assert "`row * g_stride`" in refusal(act_reads[(2,)], x, 4, x, 0, y, 4, ACT="gated", BLOCK=4)


# `_modulate` under three launch-value sources (the wrappers share its jit function, as stacked
# decorators do): an autotuner's config, a heuristic, and two stacked heuristics.
_modulate_tuned = triton.autotune(configs=[triton.Config({"HAS_SHIFT": False, "BLOCK": 4})], key=["n"])(_modulate)
_modulate_heuristic = triton.heuristics({"HAS_SHIFT": lambda args: args["shift_stride"] != 0})(_modulate)
_modulate_two_heuristics = triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})(
    triton.heuristics({"HAS_SHIFT": lambda args: args["shift_stride"] != 0})(_modulate))


def test_the_autotuners_config_decides_a_branch():
    k = stride_guard(_modulate_tuned)
    x = torch.randn(3, 4, device=DEV)
    scale = torch.randn(3, 4, device=DEV)
    y = torch.empty(3, 4, device=DEV)
    k[(3,)](x, x.stride(0), scale, scale.stride(0), scale, 0, y, 4)  # HAS_SHIFT from the config
    assert torch.equal(y, x * scale)
    assert "`row * scale_stride`" in refusal(k[(3,)], x, x.stride(0), scale, 3, scale, 0, y, 4)


def test_a_heuristic_decides_a_branch():
    k = stride_guard(_modulate_heuristic)
    x = torch.randn(3, 4, device=DEV)
    scale = torch.randn(3, 4, device=DEV)
    y = torch.empty(3, 4, device=DEV)
    table = k._check.__stride_guard_table__
    for _ in range(3):
        k[(3,)](x, x.stride(0), scale, scale.stride(0), scale, 0, y, 4, BLOCK=4)
    assert torch.equal(y, x * scale)
    # The heuristic's value is in the key: the repeated launches are one entry, and a launch the
    # heuristic sends down the other branch is another.
    assert len(table) == 1
    shift = torch.randn(3, 8, device=DEV)[:, :4]
    assert "`row * shift_stride`" in refusal(k[(3,)], x, x.stride(0), scale, scale.stride(0), shift, 4, y, 4, BLOCK=4)
    assert len(table) == 2
    # The same layout with shift_stride 0 again: the first entry, judged valid, not the refusal.
    k[(3,)](x, x.stride(0), scale, scale.stride(0), shift, 0, y, 4, BLOCK=4)
    assert torch.equal(y, x * scale) and len(table) == 3
    # A passed value is replaced by the heuristic's, as Triton does: HAS_SHIFT=False with a
    # strided shift and a non-zero stride still compiles the branch in, and is refused.
    assert "`row * shift_stride`" in refusal(k[(3,)], x, x.stride(0), scale, scale.stride(0), shift, 4, y, 4,
                                             HAS_SHIFT=False, BLOCK=4)


def test_stacked_heuristics_key_the_table():
    k = stride_guard(_modulate_two_heuristics)
    table = k._check.__stride_guard_table__
    x = torch.randn(3, 4, device=DEV)
    scale = torch.randn(3, 4, device=DEV)
    y = torch.empty(3, 4, device=DEV)
    for _ in range(2):
        k[(3,)](x, x.stride(0), scale, scale.stride(0), scale, 0, y, 4)
    assert torch.equal(y, x * scale) and len(table) == 1
    shift = torch.randn(3, 8, device=DEV)[:, :4]
    assert "`row * shift_stride`" in refusal(k[(3,)], x, x.stride(0), scale, scale.stride(0), shift, 4, y, 4)
