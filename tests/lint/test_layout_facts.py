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
    "    assert out.stride(0) == k.stride(0) == v.stride(0)",
], ids=["assert-strides", "assert-tuples", "assert-dim", "if-raise", "through-a-name", "torch-check",
        "none-or", "both-pinned", "helper-returns-false", "helper-returns-and", "all-generator", "chained"])
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


# ----------------------------------------------------------------------------- SC003: a size step
# that a check or allocation shows to be the tensor's stride

ROWS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _rows_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def rows(x, out):
{pre}
    _rows_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=128)
    return out
'''


def _codes(tmp_path, src, code):
    return [(f.span.line, f.code) for f in lint_tree(tmp_path, {"m.py": src}, preview=True) if f.code == code]


@pytest.mark.parametrize("pre", [
    "    assert x.stride(0) == x.shape[1]",
    "    n = x.shape[1]\n    if x.stride(0) != n:\n        raise ValueError('rows must be packed')",
    "    assert_size_stride(x, (x.shape[0], x.shape[1]), (x.shape[1], 1))",
    "    x = torch.empty_strided((x.shape[0], x.shape[1]), (x.shape[1], 1), device=x.device)",
], ids=["assert", "if-raise", "assert-size-stride", "empty-strided-packed"])
def test_known_stride_silences_sc003(tmp_path, pre):
    assert _codes(tmp_path, ROWS.replace("{pre}", pre), "SC003") == []


@pytest.mark.parametrize("pre", [
    "    pass",
    "    assert x.stride(0) == x.shape[0]",  # another value
    "    assert x.stride(-1) == x.shape[1]",  # the innermost stride, which the unit step takes for 1
    # strides of its own, not the size the kernel steps by: a live bug, now shown (was taken as packed)
    "    x = torch.empty_strided((x.shape[0], x.shape[1]), (x.shape[1] + 8, 1), device=x.device)",
], ids=["none", "other-value", "innermost", "empty-strided-padded"])
def test_near_miss_keeps_sc003(tmp_path, pre):
    assert _codes(tmp_path, ROWS.replace("{pre}", pre), "SC003") == [(12, "SC003")]


# ----------------------------------------------------------------------------- SC004: a size passed
# for a stride that a check or allocation fixes to that size

MM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, K, N, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
               BLOCK: tl.constexpr):
    m = tl.program_id(0)
    k = tl.arange(0, BLOCK)
    n = tl.program_id(1)
    a = tl.load(a_ptr + m * stride_am + k * stride_ak, mask=k < K)
    b = tl.load(b_ptr + k * stride_bk + n * stride_bn, mask=k < K)
    tl.store(c_ptr + m * stride_cm + n, tl.sum(a * b, axis=0))


def mm(a, b, c):
{pre}
    M, K = a.shape
    N = b.shape[1]
    _mm_kernel[(M, N)](a, b, c, K, N, a.stride(0), a.stride(1), {bk}, b.stride(1), c.stride(0), BLOCK=64)
    return c
'''


@pytest.mark.parametrize("pre,bk", [
    ("    assert b.stride(0) == b.shape[1]", "b.shape[1]"),
    ("    assert_size_stride(b, (a.shape[1], b.shape[1]), (b.shape[1], 1))", "b.shape[1]"),
    # a transposed allocation: strides (1, K); the literal 1 is stride_bk's
    ("    b = torch.empty(b.shape[1], a.shape[1]).T", "1"),
    ("    bt = torch.empty(b.shape[1], a.shape[1])\n    b = bt.T", "1"),
    ("    b = torch.empty((b.shape[1], a.shape[1])).transpose(0, 1)", "1"),
], ids=["assert", "assert-size-stride", "T-of-allocation", "T-of-named-allocation", "transpose-of-allocation"])
def test_known_stride_silences_sc004(tmp_path, pre, bk):
    assert _codes(tmp_path, MM.replace("{pre}", pre).replace("{bk}", bk), "SC004") == []


@pytest.mark.parametrize("pre,bk", [
    ("    pass", "b.shape[1]"),
    ("    assert b.stride(1) == b.shape[1]", "b.shape[1]"),  # another dimension, passed as b.stride(1)
    ("    b = torch.empty(b.shape[1], a.shape[1]).T", "b.shape[1]"),  # stride_bk of the transpose is 1
    ("    b = torch.empty(b.shape[1], a.shape[1]).T", "a.shape[1]"),  # that is stride 1, passed already
], ids=["none", "other-dim", "T-wrong-value", "T-value-of-the-other-dim"])
def test_near_miss_keeps_sc004(tmp_path, pre, bk):
    src = MM.replace("{pre}", pre).replace("{bk}", bk)
    launch = next(i for i, line in enumerate(src.splitlines(), 1) if "_mm_kernel[" in line)
    assert _codes(tmp_path, src, "SC004") == [(launch, "SC004")]


# ----------------------------------------------------------------------------- SC002: an unused
# stride that a check fixes

SCALE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(out_ptr, x_ptr, y_ptr, stride_xm, stride_xn, stride_ym, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_ym + cols, mask=mask)
    y = tl.load(y_ptr + row * stride_ym + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * y, mask=mask)


def scale(x, y):
    out = torch.empty(x.shape, device=x.device)
{pre}
    _scale_kernel[(x.shape[0],)](out, x, y, x.stride(0), x.stride(1), y.stride(0), x.shape[1], BLOCK=128)
    return out
'''


def _sc002(tmp_path, pre):
    from tests.lint.test_rules_launch import OPTS, analysis, module_name

    path = tmp_path / "s.py"
    path.write_text(SCALE.replace("{pre}", pre))
    model = analysis.build_module_model(path.read_text(), path=str(path), module=module_name(str(path)), options=OPTS)
    return sorted(f.message.split("`")[1] for f in analysis.check_tree([model], OPTS) if f.code == "SC002")


@pytest.mark.parametrize("pre,unused", [
    ("    pass", ["stride_xm", "stride_xn"]),
    ("    assert x.stride(1) == 1", ["stride_xm"]),  # the inner stride is fixed; the row stride is not
    ("    assert x.stride(0) == y.stride(0)", ["stride_xn"]),  # x's row stride is y's, which steps it
    ("    assert x.stride(0) == y.stride(0) and x.stride(1) == 1", []),
    ("    assert x.stride() == y.stride()", []),
    ("    assert_size_stride(x, (x.shape[0], x.shape[1]), (x.shape[1], 1))", []),
    ("    assert x.stride(1) == 1 or x.shape[1] == 1", ["stride_xm", "stride_xn"]),  # an `or` fixes nothing
], ids=["none", "unit", "row-equal", "both-dims", "same-strides", "assert-size-stride", "or"])
def test_fixed_stride_and_sc002(tmp_path, pre, unused):
    assert _sc002(tmp_path, pre) == unused


def test_fixed_stride_holds_only_where_every_branch_fixes_it(tmp_path):
    """A stride fixed on one branch of an `if` is not fixed after it; fixed on both, it is."""
    one = "    if x.shape[0] > 1:\n        assert x.stride(0) == x.shape[1]"
    both = one + "\n    else:\n        assert x.stride(0) == x.shape[1] and x.stride(1) == 1"
    assert _codes(tmp_path, ROWS.replace("{pre}", one), "SC003") == [(12, "SC003")]
    assert _codes(tmp_path, ROWS.replace("{pre}", both), "SC003") == []


def test_a_fact_about_a_rebound_name_is_dropped(tmp_path):
    """`x = torch.empty_strided((m, x.shape[1] // 2), (x.shape[1], 1))` fixes the row stride to the
    old x's width; the launch's `x.shape[1]` is the new x's, half of it: a live bug, reported."""
    pre = "    x = torch.empty_strided((x.shape[0], x.shape[1] // 2), (x.shape[1], 1))"
    assert _codes(tmp_path, ROWS.replace("{pre}", pre), "SC003") == [(12, "SC003")]
