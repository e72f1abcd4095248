"""False default findings of SC007 fixed by kind (issue 18, linter precision)."""

from __future__ import annotations

import pytest

from tests.lint.test_precision_kinds_launch import _found


# -- an optional output checked where it is given, allocated where it is not

MM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               BLOCK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(K):
        a = tl.load(a_ptr + rm * stride_am + k * stride_ak, mask=rm < M)
        b = tl.load(b_ptr + k * stride_bk + rn * stride_bn, mask=rn < N)
        acc += a[:, None] * b[None, :]
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, c=None):
    assert a.shape[1] == b.shape[0]
    if c is not None:
{check}
    M, K = a.shape
    K, N = b.shape
    c = {alloc}
    _mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, a.stride(0), a.stride(1),
                                                         b.stride(0), b.stride(1), c.stride(0), c.stride(1), BLOCK=32)
    return c
'''
_CHECKED = "        assert a.shape[0] == c.shape[0]\n        assert b.shape[1] == c.shape[1]"
_ALLOC = "torch.empty((M, N), device=a.device) if c is None else c"


@pytest.mark.parametrize("alloc", [_ALLOC, "c if c is not None else torch.empty((M, N), device=a.device)"],
                         ids=["alloc-if-none", "keep-if-given"])
def test_an_optional_output_checked_when_given(tmp_path, alloc):
    assert _found(tmp_path, MM.replace("{check}", _CHECKED).replace("{alloc}", alloc), "SC007") == []


@pytest.mark.parametrize("check", ["        print(c.shape)", "        assert b.shape[1] == a.shape[0]"],
                         ids=["no-check", "checks-other-tensors"])
def test_an_optional_output_unchecked_when_given(tmp_path, check):
    assert _found(tmp_path, MM.replace("{check}", check).replace("{alloc}", _ALLOC), "SC007") == [(27, "SC007")]

