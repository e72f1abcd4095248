"""No guard message advises a copy (``.contiguous()``) for a tensor the kernel writes (the writes
would go to the copy) or for one that is already contiguous (a copy changes nothing); for those it
advises passing the right stride or allocating the tensor. Checked on random layouts, both forms."""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stridecheck import Tensor, stride, stride_guard
from stridecheck.guard.check import check_launch
from stridecheck.guard.spec_check import explain
from tests.guard.conftest import any_layout, refusal
from tests.guard.test_derived_table import _launches, _values


def _copy_advised_wrongly(violations, tensors: dict, written: set) -> list[str]:
    bad = []
    for v in violations:
        name = v.key[0]
        t = tensors.get(name)
        if ".contiguous()" in v.message and (name in written or (hasattr(t, "is_contiguous") and t.is_contiguous())):
            bad.append(v.message)
    return bad


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_launches())
def test_derived_messages_never_advise_a_copy_of_a_written_or_contiguous_tensor(launch):
    guarded, args, kwargs = launch
    values = _values(guarded.contract, args, kwargs)
    written = {p.name for p in guarded.contract.pointers if any(a.writes for a in p.accesses)}
    assert _copy_advised_wrongly(check_launch(guarded.contract, values), values, written) == []


@stride_guard(x="T V", out=Tensor("T V", writes=True), cache=Tensor("R >=V", writes=True), x_stride=stride("x", 0))
def _launch(x, out, cache, x_stride):
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_layout(2), any_layout(2), any_layout(2), st.integers(0, 12))
def test_spec_messages_never_advise_a_copy_of_a_written_or_contiguous_tensor(x, out, cache, x_stride):
    values = dict(x=x, out=out, cache=cache, x_stride=x_stride)
    assert _copy_advised_wrongly(explain(_launch.__stride_contract__, values), values, {"out", "cache"}) == []


@triton.jit
def _row_max(logits_ptr, out_ptr, vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    v = tl.load(logits_ptr + row * vocab + offs, mask=offs < vocab, other=float("-inf"))  # stridecheck: ignore[SC001]
    tl.store(out_ptr + row, tl.max(v, axis=0))


def test_a_read_tensor_that_is_not_contiguous_is_told_it_may_be_copied():
    # The one case where a copy is a fix: a padded input read with a logical size as its stride.
    k = stride_guard(_row_max)
    logits = torch.randn(4, 256)[:, :200]
    msg = refusal(k._check, logits, torch.empty(4), 200, BLOCK=256)
    assert msg.endswith(
        "a logical size used as a stride — pass logits_ptr.stride(0) to the kernel and step by it, or pass "
        "logits_ptr.contiguous() (its dim 0 is then 200 apart)"
    )
    # Contiguous and too narrow instead: a copy would change nothing, and none is advised.
    msg = refusal(k._check, torch.randn(4, 128), torch.empty(4), 100, BLOCK=256)
    assert "contiguous()" not in msg and "pass logits_ptr.stride(0) to the kernel and step by it" in msg
