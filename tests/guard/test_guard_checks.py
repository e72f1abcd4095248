"""@stride_guard on plain launchers: what it rejects (with which message) and what it accepts."""

from __future__ import annotations

import pytest
import torch

from stridecheck import StrideGuardError, Tensor, stride, stride_guard


def _sample(logits, idx_mapping, temperature, seed, pos, logits_stride=None, *, logits_cache=None, vocab_size=None):
    return "launched"


gumbel_sample = stride_guard(
    logits="T V",
    pos="T",
    logits_cache=Tensor("R S >=V", writes=True),
    logits_stride=stride("logits", 0),
    vocab_size="V",
)(_sample)
gumbel_sample.__name__ = "gumbel_sample"  # messages use the contract's name, fixed at decoration


def call(logits=None, pos=None, **kw):
    if logits is None:
        logits = torch.randn(4, 1031)
    if pos is None:
        pos = torch.zeros(logits.shape[0], dtype=torch.int64)
    return gumbel_sample(logits, None, None, None, pos, **kw)


def rejects(**kw) -> str:
    with pytest.raises(StrideGuardError) as info:
        call(**kw)
    return str(info.value)


# ----------------------------------------------------------------------------- rejections


def test_cache_one_column_narrower_than_logits():
    msg = rejects(logits_cache=torch.zeros(3, 2, 1030))
    assert msg == (
        "_sample: logits_cache dim 2 is 1030 but must be >= V = 1031 (V bound by logits dim 1); "
        "the logits_cache would be truncated — allocate it at least as wide as logits dim 1"
    )


def test_cache_with_inner_stride_two():
    msg = rejects(logits_cache=torch.zeros(3, 2, 2 * 1031)[:, :, ::2])
    assert "logits_cache dim 2 (the last) has stride 2 but must have stride 1" in msg
    assert "contiguous()" in msg  # the fix


def test_expanded_output_is_a_write_race():
    msg = rejects(logits_cache=torch.zeros(3, 1, 1031).expand(3, 2, 1031))
    assert "logits_cache is written but two of its elements share memory" in msg
    assert "dim 1 has stride 0 and size 2" in msg


def test_overlapping_output_without_stride_zero():
    # Rows 4 apart but 8 wide: every row shares 4 elements with the next.
    out = torch.zeros(64).as_strided((2, 3, 8), (24, 4, 1))
    msg = rejects(logits=torch.randn(4, 8), logits_cache=out)
    assert "share memory" in msg and "strides [24, 4, 1]" in msg


def test_tensors_on_two_devices():
    msg = rejects(pos=torch.zeros(4, dtype=torch.int64, device="meta"))
    assert msg == "_sample: pos is on meta but logits is on cpu; move all tensors to one device"


def test_wrong_stride_argument():
    logits = torch.randn(4, 1040)[:, :1031]
    msg = rejects(logits=logits, logits_stride=1031)
    assert msg == "_sample: logits_stride is 1031 but logits.stride(0) is 1040; pass logits.stride(0)"


def test_size_mismatch_names_where_the_size_was_bound():
    msg = rejects(pos=torch.zeros(5, dtype=torch.int64))
    assert msg.startswith("_sample: pos dim 0 is 5 but must be T = 4 (T bound by logits dim 0)")


def test_integer_argument_bound_to_a_name():
    msg = rejects(vocab_size=1000)
    assert "vocab_size is 1000 but must be V = 1031 (V bound by logits dim 1)" in msg


def test_wrong_number_of_dims():
    msg = rejects(logits_cache=torch.zeros(3, 1031))
    assert "logits_cache has 2 dims (shape [3, 1031]) but the spec 'R S >=V' needs 3" in msg


def test_not_a_tensor_is_a_clear_error():
    msg = rejects(logits=[[1.0, 2.0]], pos=torch.zeros(1))
    assert msg.startswith("_sample: logits must be a tensor of dims 'T V', got list")


def test_error_is_a_value_error():
    assert issubclass(StrideGuardError, ValueError)


def test_dtype_checked():
    @stride_guard(x=Tensor("N", dtype=(torch.float32, torch.bfloat16)))
    def f(x):
        return x

    f(torch.zeros(3))
    f(torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(StrideGuardError, match="x has dtype float16 but must be float32 or bfloat16"):
        f(torch.zeros(3, dtype=torch.float16))


def test_required_none_is_refused_and_optional_none_skips():
    @stride_guard(x=Tensor("N", required=True), y="N")
    def f(x, y=None):
        return 1

    assert f(torch.zeros(3)) == 1
    with pytest.raises(StrideGuardError, match="x is None but is required"):
        f(None)


def test_fixed_and_minimum_integer_sizes():
    @stride_guard(x="3 >=4")
    def f(x):
        return 1

    assert f(torch.zeros(3, 4)) == 1
    assert f(torch.zeros(3, 9)) == 1
    with pytest.raises(StrideGuardError, match="x dim 0 is 2 but must be 3"):
        f(torch.zeros(2, 4))
    with pytest.raises(StrideGuardError, match="x dim 1 is 3 but must be >= 4"):
        f(torch.zeros(3, 3))


def test_leading_ellipsis():
    @stride_guard(x="... H D", y="D")
    def f(x, y):
        return 1

    assert f(torch.zeros(8, 64), torch.zeros(64)) == 1
    assert f(torch.zeros(2, 3, 8, 64), torch.zeros(64)) == 1
    with pytest.raises(StrideGuardError, match="y dim 0 is 63 but must be D = 64"):
        f(torch.zeros(2, 3, 8, 64), torch.zeros(63))
    with pytest.raises(StrideGuardError, match="needs at least 2"):
        f(torch.zeros(64), torch.zeros(64))


def test_minimum_checked_once_bound_by_a_later_argument():
    # cache comes first in the signature, logits (which binds V) after it.
    @stride_guard(cache="R >=V", logits="T V")
    def f(cache, logits=None):
        return 1

    assert f(torch.zeros(2, 10), torch.zeros(3, 10)) == 1
    assert f(torch.zeros(2, 10)) == 1  # V never bound: nothing to compare with
    with pytest.raises(StrideGuardError, match="cache dim 1 is 10 but must be >= V = 11"):
        f(torch.zeros(2, 10), torch.zeros(3, 11))


def test_first_binding_wins_among_optional_arguments():
    @stride_guard(a="N", b="N", c="N")
    def f(a=None, b=None, c=None):
        return 1

    assert f(None, torch.zeros(4), torch.zeros(4)) == 1
    with pytest.raises(StrideGuardError, match=r"c dim 0 is 5 but must be N = 4 \(N bound by b dim 0\)"):
        f(None, torch.zeros(4), torch.zeros(5))


def test_inner_stride_opt_out():
    @stride_guard(x=Tensor("M N", inner_stride=None))
    def f(x):
        return 1

    assert f(torch.zeros(4, 6).t()) == 1


def test_writes_on_the_decorator():
    @stride_guard(out="M N", writes=("out",))
    def f(out):
        return 1

    assert f(torch.zeros(4, 2)) == 1
    with pytest.raises(StrideGuardError, match="out is written"):
        f(torch.zeros(1, 2).expand(4, 2))


def test_read_only_expanded_input_is_fine():
    @stride_guard(x="M N")
    def f(x):
        return 1

    assert f(torch.zeros(1, 5).expand(4, 5)) == 1


# ----------------------------------------------------------------------------- acceptances


@pytest.mark.parametrize(
    "cache",
    [
        pytest.param(torch.zeros(3, 2, 1031), id="contiguous"),
        pytest.param(torch.zeros(3, 2, 1032), id="one-column-wider"),
        pytest.param(torch.zeros(4, 3, 1100)[1:, ::2, 5:1036], id="slice"),
        pytest.param(torch.zeros(3, 2, 1040)[:, :, :1031], id="row-padded"),
        pytest.param(torch.zeros(3 * 2 * 1031 + 7)[7:].view(3, 2, 1031), id="storage-offset"),
        pytest.param(torch.zeros(0, 2, 1031), id="size-0"),
        pytest.param(torch.zeros(3, 1, 1031), id="size-1"),
        pytest.param(torch.zeros(3 * 1031).as_strided((3, 1, 1031), (1031, 7, 1)), id="size-1-odd-stride"),
        pytest.param(torch.zeros(2, 3, 1031).transpose(0, 1), id="permuted-outer"),
    ],
)
def test_accepts_valid_cache_layouts(cache):
    logits = torch.randn(4, 1040)[:, :1031]
    assert call(logits=logits, logits_cache=cache, logits_stride=logits.stride(0), vocab_size=1031) == "launched"


def test_accepts_size_zero_and_size_one_logits():
    assert call(logits=torch.randn(0, 1031)) == "launched"
    assert call(logits=torch.randn(4, 1)) == "launched"
    # Inner stride of a size-1 last dim is never stepped.
    assert call(logits=torch.randn(4, 3)[:, 1:2]) == "launched"
    # A stride argument for a size-1 dim is never used to step.
    one_row = torch.randn(1, 1031)
    assert call(logits=one_row, logits_stride=99) == "launched"


def test_accepts_empty_tensor_with_odd_strides():
    x = torch.zeros(0).as_strided((0, 5), (1, 2))
    assert call(logits=torch.randn(4, 5), logits_cache=torch.zeros(2, 2, 5), pos=None) == "launched"

    @stride_guard(x=Tensor("M N", writes=True))
    def f(x):
        return 1

    assert f(x) == 1


def test_wrapper_keeps_the_signature_and_identity():
    import inspect

    assert inspect.signature(gumbel_sample) == inspect.signature(_sample)
    assert gumbel_sample.__wrapped__ is _sample
    assert gumbel_sample.__stride_contract__.func_name == "_sample"
    # Keyword, positional and default handling are those of the original.
    logits = torch.randn(2, 3)
    assert gumbel_sample(logits, 0, 0, 0, torch.zeros(2), logits.stride(0), logits_cache=None) == "launched"
    with pytest.raises(TypeError):
        gumbel_sample(logits)


def test_positional_only_varargs_and_kwargs_pass_through():
    @stride_guard(x="N", y="N")
    def f(x, /, *rest, y=None, **extra):
        return (x.shape[0], rest, y is None, extra)

    assert f(torch.zeros(2), 1, 2, flag=3) == (2, (1, 2), True, {"flag": 3})
    with pytest.raises(StrideGuardError):
        f(torch.zeros(2), y=torch.zeros(3))
