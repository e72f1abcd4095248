"""@stride_guard on Triton kernels (CPU interpreter): the spec form, and the bare form whose
contract is derived from the kernel's source, over every reproduction in ../shared/cases."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch
import triton
import triton.language as tl

from stridecheck import StrideGuardError, Tensor, stride, stride_guard
from tests.conftest import CASES
from stridecheck.guard.derive import derive_contract
from stridecheck.guard import GuardedKernel


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
    x = torch.randn(5, 40)[:, 3:33]
    out = torch.full((5, 36), -1.0)[:, :30]
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
    x = torch.randn(5, 40)[:, :30]
    out = torch.empty(5, 30)
    with pytest.raises(StrideGuardError, match=r"^_copy_rows: x_stride is 30 but x_ptr.stride\(0\) is 40; pass x_ptr.stride\(0\)$"):
        copy_rows_spec[(5,)](out, out.stride(0), x, 30, 30, BLOCK=32)


def test_bare_form_rejects_a_wrong_stride_argument():
    x = torch.randn(5, 40)[:, :30]
    out = torch.empty(5, 30)
    with pytest.raises(StrideGuardError) as info:
        copy_rows_bare[(5,)](out, out.stride(0), x, 30, 30, BLOCK=32)
    assert str(info.value).startswith("_copy_rows: x_stride = 30 steps x_ptr in `row * x_stride`")
    assert "strides [40, 1]" in str(info.value) and "pass x_ptr.stride(0) = 40" in str(info.value)


def test_bare_form_rejects_a_store_wider_than_the_output():
    x = torch.randn(5, 30)
    out = torch.empty(5, 29)
    with pytest.raises(StrideGuardError, match="masked by `< n_cols` = 30 along its last dim, which hold only 29"):
        copy_rows_bare[(5,)](out, out.stride(0), x, x.stride(0), 30, BLOCK=32)


def test_bare_form_rejects_inner_stride_and_overlapping_output():
    x = torch.randn(30, 5).t()
    out = torch.empty(5, 30)
    with pytest.raises(StrideGuardError, match=r"x_ptr is addressed as `... \+ tl.arange\(0, BLOCK\)`.*stride\(1\) is 5"):
        copy_rows_bare[(5,)](out, out.stride(0), x, x.stride(0), 30, BLOCK=32)
    out = torch.empty(1, 30).expand(5, 30)
    with pytest.raises(StrideGuardError, match="out_ptr is stored through but two of its elements share memory"):
        copy_rows_bare[(5,)](out, 30, torch.randn(5, 30), 30, 30, BLOCK=32)


def test_bare_form_accepts_size_one_dims_with_any_stride():
    x = torch.randn(1, 30)
    out = torch.empty(1, 30)
    copy_rows_bare[(1,)](out, 12345, x, 777, 30, BLOCK=32)  # one row: its stride is never stepped
    assert torch.equal(out, x)


@triton.jit
def _gather_rows(out_ptr, pool_ptr, slot_stride, n_inner, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_inner
    tl.store(out_ptr + i * n_inner + offs, tl.load(pool_ptr + i * slot_stride + offs, mask=mask), mask=mask)


gather_rows = stride_guard(_gather_rows)


def test_flattened_inner_dims_must_be_packed():
    pool = torch.randn(3, 4, 8)
    out = torch.empty(3, 4, 8)
    gather_rows[(3,)](out, pool, pool.stride(0), 32, BLOCK=32)
    assert torch.equal(out, pool)
    padded = torch.randn(3, 4, 10)[:, :, :8]  # `offs` walks [4, 8] flattened: rows 10 apart break it
    with pytest.raises(StrideGuardError, match=r"pool_ptr dim 1 has no term of its own.*stride\(1\) == 8, but it is 10"):
        gather_rows[(3,)](out, padded, padded.stride(0), 32, BLOCK=32)


def test_contract_is_derived_once_per_kernel():
    assert derive_contract(_copy_rows, _copy_rows.fn) is copy_rows_bare.contract
    assert "x_ptr" in copy_rows_bare.contract.describe()


@triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n_cols"])
@triton.jit
def _copy_rows_tuned(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(out_ptr + row * out_stride + cols, tl.load(x_ptr + row * x_stride + cols, mask=mask), mask=mask)


@pytest.mark.parametrize("bare", [False, True])
def test_autotuned_kernel(bare):
    k = stride_guard(_copy_rows_tuned) if bare else stride_guard(x_ptr="M N", x_stride=stride("x_ptr", 0))(_copy_rows_tuned)
    x = torch.randn(4, 40)[:, :30]
    out = torch.empty(4, 30)
    k[(4,)](out, out.stride(0), x, x.stride(0), 30)  # BLOCK comes from the autotuner
    assert torch.equal(out, x)
    with pytest.raises(StrideGuardError, match="x_stride"):
        k[(4,)](out, out.stride(0), x, 30, 30)


# ----------------------------------------------------------------------------- the shared cases

# file -> (rejected before launch?, the argument the message must name)
CASE_VERDICTS = {
    "contiguous_by_construction": (False, None),
    "draft_cache_column": (True, "`step * n_vocab` (line 27) steps cache_ptr dim 1 by n_vocab = 300, but cache_ptr.stride(1) is 301"),
    "draft_cache_column_fixed": (False, None),
    "helper_function_offset": (True, "`col * width` (line 10) steps cache_ptr dim 1 by width = 20, but cache_ptr.stride(1) is 24"),
    # Fault in values, not layouts: 32-bit offsets overflow only past 2**31 elements.
    "int32_row_offset": (False, None),
    "mask_wrong_tensor_stride": (True, "ids_stride = 30 steps keep_ptr in `row * ids_stride`"),
    "padded_vocab_rows": (True, "`row * vocab` (line 15) steps logits_ptr dim 0 by vocab = 200, but logits_ptr.stride(0) is 256"),
    # Not visible from metadata: the swapped arguments are both strides of the (square) matrix.
    "positional_stride_swap": (False, None),
    "shape_products_as_strides": (True, "pool_slot_stride = 40 steps pool_ptr"),
}


def _load_case(name: str):
    path = CASES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_guard_case_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_case_file_has_a_verdict():
    assert sorted(p.stem for p in CASES.glob("*.py")) == sorted(CASE_VERDICTS)


@pytest.mark.parametrize("name", sorted(CASE_VERDICTS))
def test_bare_guard_on_the_shared_cases(name):
    rejected, message = CASE_VERDICTS[name]
    module = _load_case(name)
    kernels = [k for k, v in vars(module).items() if type(v).__module__.startswith("triton") and hasattr(v, "run")]
    launched = [k for k in kernels if f"{k}[" in open(module.__file__).read()]
    assert launched, f"{name}: no launched kernel found"
    for k in launched:
        guarded = stride_guard(getattr(module, k))
        assert guarded.contract.pointers, f"{name}: no pointer plan derived for {k}"
        setattr(module, k, guarded)
    if rejected:
        with pytest.raises(StrideGuardError) as info:
            module.run()
        assert message in str(info.value)
    else:
        result = module.run()
        # The correct ones compute the right answer; the invisible faults still launch (and give
        # the wrong answer, which is what the layout tests are for).
        expected = name not in ("positional_stride_swap",)
        assert result is expected


def test_disabled_returns_the_kernel_itself(monkeypatch):
    monkeypatch.setenv("STRIDECHECK_GUARD", "0")
    assert stride_guard(_copy_rows) is _copy_rows
    assert stride_guard(x_ptr="M N")(_copy_rows) is _copy_rows


def test_warn_mode_on_a_derived_contract_logs_once_and_launches(monkeypatch, caplog):
    import logging

    monkeypatch.setenv("STRIDECHECK_GUARD", "warn")
    k = stride_guard(_copy_rows)
    x = torch.randn(3, 40)[:, :30]
    out = torch.zeros(3, 30)
    with caplog.at_level(logging.WARNING, logger="stridecheck.guard"):
        for _ in range(2):
            k[(3,)](out, out.stride(0), x, x.stride(0), 30, BLOCK=32)  # valid: no warning
        assert torch.equal(out, x)
        for _ in range(3):
            k[(3,)](out, out.stride(0), x, 30, 30, BLOCK=32)  # wrong stride: warned once, launched
    msgs = [r.getMessage() for r in caplog.records if r.name == "stridecheck.guard"]
    assert len(msgs) == 1 and msgs[0].startswith("_copy_rows: x_stride = 30 steps x_ptr")
    assert not torch.equal(out, x)  # it did launch, reading rows 30 apart


def test_guarded_kernel_copies_and_reports_missing_attributes():
    import copy

    twin = copy.copy(copy_rows_bare)
    assert twin.kernel is _copy_rows
    with pytest.raises(AttributeError):
        copy_rows_bare.no_such_attribute  # noqa: B018 - the forwarded lookup must fail cleanly
