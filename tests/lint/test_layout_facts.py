"""Layout facts the launcher establishes (issue 18, part 2): stride checks, allocations whose
strides are known, and the launch rules reading them. Each fact has a case where it silences a
false finding and a near miss where the finding stays."""

from __future__ import annotations

import pytest

from tests.lint.test_rules_launch import lint_tree

# `v` is stepped by `k`'s row stride: right only where the launcher shows the two equal.
KV = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _kv_kernel(out_ptr, k_ptr, v_ptr, stride_km, stride_vm, stride_om, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    k = tl.load(k_ptr + row * stride_km + cols, mask=mask)
    v = tl.load(v_ptr + row * stride_km + cols, mask=mask)
    tl.store(out_ptr + row * stride_om + cols, k + v, mask=mask)


def _same_layout(a, b):
    if a.stride() != b.stride():
        return False
    return True


def _rows_match(a, b):
    return a.stride(0) == b.stride(0) and a.shape == b.shape


def kv(k, v):
    out = torch.empty_like(k)
{check}
    _kv_kernel[(k.shape[0],)](out, k, v, k.stride(0), v.stride(0), out.stride(0), k.shape[1], BLOCK=128)
    return out
'''


def _sc005(tmp_path, src):
    return [(f.span.line, f.code) for f in lint_tree(tmp_path, {"kv.py": src}, preview=True) if f.code == "SC005"]


@pytest.mark.parametrize("check", [
    "    assert k.stride() == v.stride()",
    "    assert tuple(v.stride()) == tuple(k.stride())",
    "    assert v.stride(0) == k.stride(0)",
    "    if v.stride(0) != k.stride(0):\n        raise ValueError('v must share k\\'s layout')",
    "    s0 = k.stride(0)\n    if v.stride(0) != s0:\n        raise ValueError('v')",
    "    torch._check(v.stride() == k.stride())",
    "    assert v is None or v.stride() == k.stride()",
    "    assert v.stride(0) == k.shape[1] and k.stride(0) == k.shape[1]",
    "    assert _same_layout(k, v)",
    "    if not _rows_match(v, k):\n        raise ValueError('layout')",
    "    assert all(t.stride(0) == k.stride(0) for t in (v, out))",
], ids=["assert-strides", "assert-tuples", "assert-dim", "if-raise", "through-a-name", "torch-check",
        "none-or", "both-pinned", "helper-returns-false", "helper-returns-and", "all-generator"])
def test_stride_check_silences_sc005(tmp_path, check):
    assert _sc005(tmp_path, KV.replace("{check}", check)) == []


@pytest.mark.parametrize("check", [
    "",
    "    assert v.stride(1) == k.stride(1)",  # another dimension
    "    assert v.stride() == k.stride() or k.shape[0] == 1",  # an `or`: neither arm holds on its own
    "    if v.stride(0) != k.stride(0):\n        print('v differs')",  # no raise: nothing is checked
    "    assert _same_layout(k, out)",  # the helper checks other tensors
    "    assert v.stride(0) == k.shape[1]",  # only one side pinned
    "    if _same_layout(k, v):\n        print('same')",  # true only in the body
], ids=["none", "other-dim", "or", "no-raise", "helper-other-tensors", "one-pinned", "if-without-raise"])
def test_near_miss_keeps_sc005(tmp_path, check):
    assert _sc005(tmp_path, KV.replace("{check}", check)) == [(13, "SC005")]


# The launch passes `k`'s stride for `v`'s stride parameter (the kernel steps `v` by it).
KV_LAUNCH = (KV.replace("v_ptr + row * stride_km", "v_ptr + row * stride_vm")
             .replace("v.stride(0), out.stride(0)", "k.stride(0), out.stride(0)"))


@pytest.mark.parametrize("check,stays", [
    ("", True),
    ("    assert k.stride() == v.stride()", False),
    ("    assert v.stride(0) == k.stride(0)", False),
    ("    assert v.stride(1) == k.stride(1)", True),
], ids=["none", "assert-strides", "assert-dim", "other-dim"])
def test_stride_check_at_the_launch(tmp_path, check, stays):
    assert KV_LAUNCH != KV
    src = KV_LAUNCH.replace("{check}", check)
    launch = next(i for i, line in enumerate(src.splitlines(), 1) if "_kv_kernel[" in line)
    assert _sc005(tmp_path, src) == ([(launch, "SC005")] if stays else [])
