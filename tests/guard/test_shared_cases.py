"""Bare @stride_guard over the project's shared bug reproductions (``../shared/cases``), an extra
layer that runs when the folder is beside the checkout and is skipped, saying so, when it is not.
The guard's own reproductions of each refusal kind are in the test_derived_*.py files."""

from __future__ import annotations

import pytest

from stridecheck import StrideGuardError, stride_guard
from tests.conftest import CASES
from tests.guard.conftest import load_case

# file -> the start of the refusal the guard must give before launching, or None: the launch
# goes ahead (a correct file, or a fault the layouts cannot show).
VERDICTS = {
    "constexpr_columns_gather": "_gather_rows_kernel: `src * NUM_COLUMNS` (line 17) steps x_ptr dim 0 by NUM_COLUMNS = 7, "
    "but x_ptr.stride(0) is 10",
    "contiguous_by_construction": None,
    "draft_cache_column": "_store_step_kernel: `step * n_vocab` (line 27) steps cache_ptr dim 1 by n_vocab = 300, but "
    "cache_ptr.stride(1) is 301",
    "draft_cache_column_fixed": None,
    "gemm_output_strides": "_matmul_kernel: `rm[:, None] * stride_am` (line 18) steps C dim 0 by stride_am = 3, but "
    "C.stride(0) is 7",
    "helper_function_offset": "_argmax_and_cache_kernel: `col * width` (line 10) steps cache_ptr dim 1 by width = 20, but "
    "cache_ptr.stride(1) is 24",
    # Fault in values, not layouts: 32-bit offsets overflow only past 2**31 elements.
    "int32_row_offset": None,
    "mask_wrong_tensor_stride": "_masked_count_kernel: `row * ids_stride` (line 22) steps keep_ptr dim 0 by ids_stride = 30, "
    "but keep_ptr.stride(0) is 40",
    "padded_vocab_rows": "_row_max_kernel: `row * vocab` (line 15) steps logits_ptr dim 0 by vocab = 200, but "
    "logits_ptr.stride(0) is 256",
    # Not visible from metadata: the swapped arguments are both strides of the (square) matrix.
    "positional_stride_swap": None,
    "qkv_pointer_names": "_add_qv_kernel: `h * stride_qh` (line 18) steps V dim 0 by stride_qh = 20, but V.stride(0) is 40",
    "shape_products_as_strides": "_gather_state_kernel: `slot * pool_slot_stride` (line 15) steps pool_ptr dim 0 by "
    "pool_slot_stride = 40, but pool_ptr.stride(0) is 80",
}


def test_every_case_file_has_a_verdict(shared_cases):
    assert sorted(p.stem for p in shared_cases.glob("*.py")) == sorted(VERDICTS)


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_bare_guard_on_a_shared_case(shared_cases, name):
    expected = VERDICTS[name]
    path = CASES / f"{name}.py"
    module = load_case(path)
    source = path.read_text()
    launched = [k for k, v in vars(module).items() if type(v).__module__.startswith("triton") and f"{k}[" in source]
    assert launched, f"{name}: no launched kernel found"
    for k in launched:
        guarded = stride_guard(getattr(module, k))
        assert guarded.contract.pointers, f"{name}: no pointer plan derived for {k}"
        setattr(module, k, guarded)
    if expected is not None:
        with pytest.raises(StrideGuardError) as info:
            module.run()
        assert str(info.value).startswith(expected)
    else:
        # The correct ones compute the right answer; the invisible faults still launch (and give
        # the wrong answer, which is what the layout tests are for).
        assert module.run() is (name != "positional_stride_swap")
