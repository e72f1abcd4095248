"""@stride_guard on Triton kernels (CPU interpreter): the guarded kernel launches like the kernel,
in both forms (specs, and bare: the contract derived from the kernel's source), as a Python
object (attributes, pickling, stacking), under an autotuner and in every mode."""

from __future__ import annotations

import copy
import pickle
import threading

import pytest
import torch
import triton
import triton.language as tl

from stridecheck import StrideGuardError, Tensor, stride, stride_guard
from stridecheck.guard import GuardedKernel
from stridecheck.guard.derive import derive_contract
from tests.guard.conftest import DEV, SlowSet, refusal


@triton.jit
def _copy_rows(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + row * out_stride + cols, tl.load(x_ptr + row * x_stride + cols, mask=mask), mask=mask)


copy_rows_spec = stride_guard(
    out_ptr=Tensor("M N", writes=True),
    x_ptr="M N",
    out_stride=stride("out_ptr", 0),
    x_stride=stride("x_ptr", 0),
    n_cols="N",
)(_copy_rows)
copy_rows_bare = stride_guard(_copy_rows)


@pytest.mark.parametrize("kernel", [copy_rows_spec, copy_rows_bare], ids=["spec", "bare"])
def test_guarded_kernel_launches_like_the_kernel(kernel):
    assert isinstance(kernel, GuardedKernel)
    x = torch.randn(5, 40, device=DEV)[:, 3:33]
    out = torch.full((5, 36), -1.0, device=DEV)[:, :30]
    kernel[(5,)](out, out.stride(0), x, x.stride(0), 30, BLOCK=32)
    assert torch.equal(out, x)
    # Attributes are the kernel's.
    assert kernel.arg_names == _copy_rows.arg_names
    assert kernel.fn is _copy_rows.fn
    assert kernel.__name__ == "_copy_rows"
    # .run is checked too.
    with pytest.raises(StrideGuardError):
        kernel.run(out, out.stride(0), x, 30, 30, BLOCK=32, grid=(5,), warmup=False)


def test_spec_form_rejects_a_wrong_stride_argument():
    x = torch.randn(5, 40, device=DEV)[:, :30]
    out = torch.empty(5, 30, device=DEV)
    msg = refusal(copy_rows_spec[(5,)], out, out.stride(0), x, 30, 30, BLOCK=32)
    assert msg == "_copy_rows: x_stride is 30 but x_ptr.stride(0) is 40; pass x_ptr.stride(0)"


def test_bare_form_names_the_index_whose_address_differs():
    x = torch.randn(5, 40, device=DEV)[:, :30]
    out = torch.empty(5, 30, device=DEV)
    msg = refusal(copy_rows_bare[(5,)], out, out.stride(0), x, 30, 30, BLOCK=32)
    assert msg == (
        "_copy_rows: `row * x_stride` (line 27) steps x_ptr dim 0 by x_stride = 30, but x_ptr.stride(0) is 40 "
        "(shape [5, 30], strides [40, 1]): x_ptr[1, 0] is at offset 40, but `row * x_stride` reaches offset 30 "
        "when its index is 1 (no element of x_ptr: a gap between its elements); pass x_ptr.stride(0) = 40 as x_stride"
    )


def test_contract_is_derived_once_per_kernel():
    assert derive_contract(_copy_rows, _copy_rows.fn) is copy_rows_bare.contract
    text = copy_rows_bare.contract.describe()
    assert "x_ptr line 27 (load): `row * x_stride` steps by x_stride" in text
    assert "stored below n_cols" in text


@triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n_cols"])
@triton.jit
def _copy_rows_tuned(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + row * out_stride + cols, tl.load(x_ptr + row * x_stride + cols, mask=mask), mask=mask)


@pytest.mark.parametrize("bare", [False, True], ids=["spec", "bare"])
def test_autotuned_kernel(bare):
    k = stride_guard(_copy_rows_tuned) if bare else stride_guard(x_ptr="M N", x_stride=stride("x_ptr", 0))(_copy_rows_tuned)
    x = torch.randn(4, 40, device=DEV)[:, :30]
    out = torch.empty(4, 30, device=DEV)
    k[(4,)](out, out.stride(0), x, x.stride(0), 30)  # BLOCK comes from the autotuner
    assert torch.equal(out, x)
    assert "x_stride" in refusal(k[(4,)], out, out.stride(0), x, 30, 30)


def test_disabled_returns_the_kernel_itself(monkeypatch):
    monkeypatch.setenv("STRIDECHECK_GUARD", "0")
    assert stride_guard(_copy_rows) is _copy_rows
    assert stride_guard(x_ptr="M N")(_copy_rows) is _copy_rows


def test_warn_mode_logs_once_and_launches(warn_mode, warned):
    k = stride_guard(_copy_rows)
    x = torch.randn(3, 40, device=DEV)[:, :30]
    out = torch.zeros(3, 30, device=DEV)
    for _ in range(2):
        k[(3,)](out, out.stride(0), x, x.stride(0), 30, BLOCK=32)  # valid: no warning
    assert torch.equal(out, x)
    for _ in range(3):
        k[(3,)](out, out.stride(0), x, 30, 30, BLOCK=32)  # wrong stride: warned once, launched
    assert len(warned()) == 1 and warned()[0].startswith("_copy_rows: `row * x_stride` (line 27) steps x_ptr dim 0")
    assert not torch.equal(out, x)  # it did launch, reading rows 30 apart


def test_warn_once_holds_under_threads(warn_mode, warned):
    # The check-then-add of warn-once must be one step: threads failing together log once.
    k = stride_guard(_copy_rows)
    k._check.__globals__["_sg_report"].warned = SlowSet()
    x = torch.randn(3, 40, device=DEV)[:, :30]
    barrier = threading.Barrier(6)

    def worker():
        barrier.wait()
        k._check(torch.zeros(3, 30, device=DEV), 30, x, 30, 30, BLOCK=32)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(warned()) == 1


def test_guarded_kernel_copies_and_reports_missing_attributes():
    twin = copy.copy(copy_rows_bare)
    assert twin.kernel is _copy_rows
    with pytest.raises(AttributeError):
        copy_rows_bare.no_such_attribute  # noqa: B018 - the forwarded lookup must fail cleanly


@stride_guard
@triton.jit
def pickled_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_module_level_guarded_kernel_pickles_by_reference():
    # The generated check and the triton function do not pickle by value: a guarded kernel
    # pickles as a function does, by module and name.
    assert pickle.loads(pickle.dumps(pickled_kernel)) is pickled_kernel
    assert copy.deepcopy(pickled_kernel) is pickled_kernel
    x = torch.ones(4, device=DEV)
    pickled_kernel[(1,)](x, 4, BLOCK=4)
    assert torch.equal(x, torch.full((4,), 2.0, device=DEV))


def test_guarding_a_guarded_kernel_chains_both_checks():
    both = stride_guard(x_ptr=Tensor("M N", dtype=torch.float32))(copy_rows_bare)
    assert isinstance(both, GuardedKernel) and both.kernel is copy_rows_bare
    assert both.arg_names == _copy_rows.arg_names
    x = torch.randn(3, 8, device=DEV)
    out = torch.empty(3, 8, device=DEV)
    both[(3,)](out, 8, x, 8, 8, BLOCK=8)
    assert "x_ptr has dtype float64 but must be float32" in refusal(both[(3,)], out, 8, x.double(), 8, 8, BLOCK=8)
    assert "`row * x_stride`" in refusal(both[(3,)], out, 8, x, 7, 8, BLOCK=8)  # the inner (derived) check


@triton.jit
def _no_contract(x_ptr, n):
    pass


def test_a_kernel_with_nothing_to_derive_accepts_every_launch():
    k = stride_guard(_no_contract)
    assert k.contract.pointers == []
    k[(1,)](torch.zeros(3, 4, device=DEV).t(), 5)
    k[(1,)](torch.zeros(1, device=DEV).expand(7), 5)
