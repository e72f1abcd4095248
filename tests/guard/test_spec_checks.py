"""@stride_guard(...) on plain launchers: what each check rejects (with which message) and the layouts it accepts."""

from __future__ import annotations

import numpy as np
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
    # The fix for a written tensor allocates it: a .contiguous() copy would take the writes.
    assert "allocate logits_cache with unit inner stride (torch.empty(...))" in msg
    assert "contiguous()" not in msg


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


def test_varargs_and_varkw_around_guarded_parameters():
    @stride_guard(x="N", y="N")
    def launch(x, *rest, y=None, **options):
        return len(rest), sorted(options)

    assert launch(torch.zeros(3), 1, 2, y=torch.zeros(3), num_warps=4) == (2, ["num_warps"])
    with pytest.raises(StrideGuardError, match=r"^launch: y dim 0 is 4 but must be N = 3 \(N bound by x dim 0\)"):
        launch(torch.zeros(3), y=torch.zeros(4))


@stride_guard(x="V", vocab_size="V", x_stride=stride("x", 0))
def _bind_int(x, vocab_size, x_stride=None):
    return "ok"


@pytest.mark.parametrize("kind", [int, np.int64, np.int32, np.uint16])
def test_integer_arguments_of_any_integral_type_bind(kind):
    # Fixed: a NumPy integer (np.int64 from a shape computed in NumPy) was refused as
    # "must be a tensor of dims 'V'".
    assert _bind_int(torch.zeros(5), kind(5), kind(1)) == "ok"
    with pytest.raises(StrideGuardError, match=r"^_bind_int: vocab_size is 4 but must be V = 5 \(V bound by x dim 0\)"):
        _bind_int(torch.zeros(5), kind(4))


def test_wrong_int_binding_and_wrong_stride_argument_are_rejected():
    with pytest.raises(StrideGuardError, match=r"vocab_size is 6 but must be V = 5"):
        _bind_int(torch.zeros(5), 6)
    with pytest.raises(StrideGuardError, match=r"^_bind_int: x_stride is 2 but x.stride\(0\) is 1; pass x.stride\(0\)$"):
        _bind_int(torch.zeros(5), 5, 2)


@stride_guard(x="... N", out=Tensor("... N", writes=True), n="N")
def _shadowing(x, out, n, min=0.0, len=None, isinstance=None, int=None):  # noqa: A002 - the attack
    return "ok"


def test_parameters_named_like_builtins_keep_the_fast_path(slow_path_calls):
    # Fixed: the generated checks called len/min/isinstance/int, which these parameters shadow,
    # so every valid call fell to the slow explaining path.
    assert _shadowing(torch.zeros(2, 3), torch.zeros(2, 3), 3, min=-1.0, len=7, isinstance=1, int=2) == "ok"
    assert slow_path_calls == []
    with pytest.raises(StrideGuardError, match=r"out is written but two of its elements share memory"):
        _shadowing(torch.zeros(2, 3), torch.zeros(1, 3).expand(2, 3), 3, len=7)


def test_dim_named_like_the_device_slot_keeps_the_fast_path(slow_path_calls):
    # Fixed: the generator tracked the common device under the key "_dev", a legal dim name, so
    # a spec using `_dev` confused the two and sent every call to the slow path.
    @stride_guard(x="_dev", y="_dev")
    def f(x, y):
        return "ok"

    assert f(torch.zeros(3), torch.zeros(3)) == "ok"
    assert slow_path_calls == []
    with pytest.raises(StrideGuardError, match=r"y dim 0 is 4 but must be _dev = 3"):
        f(torch.zeros(3), torch.zeros(4))


@stride_guard(x="A B C", out=Tensor("A B C", writes=True))
def _three(x, out):
    return "ok"


@pytest.mark.parametrize(
    "x",
    [
        torch.empty(0).as_strided((0, 3, 4), (7, 0, 1)),  # no elements: strides never used
        torch.empty(0).as_strided((2, 0, 4), (1, 1, 3)),
        torch.empty(64).as_strided((1, 1, 4), (999, -0, 1)),  # size-1 dims: any stride
        torch.empty(64).as_strided((2, 3, 1), (1, 2, 5)),  # 1-element last dim, stride 5
        torch.empty(4, 6, 8).permute(1, 0, 2)[:, 1:3, :5],  # permuted outer dims, sliced
        torch.empty(2**20 + 8).as_strided((2, 2, 4), (2**19, 8, 1)),  # huge outer stride
    ],
    ids=["empty", "empty-mid", "size-one", "one-elem-last", "permuted", "huge-stride"],
)
def test_odd_but_valid_layouts_are_accepted(x):
    out = torch.empty(64 + 2**20).as_strided(x.shape, x.stride())
    assert _three(x, out) == "ok"


def test_inner_stride_is_judged_on_many_elements_not_on_one():
    one = torch.empty(16).as_strided((2, 2, 1), (2, 1, 3))
    many = torch.empty(16).as_strided((1, 2, 2), (8, 4, 2))
    assert _three(one, torch.zeros(2, 2, 1)) == "ok"
    with pytest.raises(StrideGuardError, match=r"^_three: x dim 2 \(the last\) has stride 2 but must have stride 1"):
        _three(many, torch.zeros(1, 2, 2))


@pytest.mark.parametrize(
    "out",
    [
        torch.empty(64).as_strided((2, 3, 4), (4, 4, 1)),  # rows overlap along dim 1
        torch.empty(64).as_strided((2, 3, 4), (12, 3, 1)),  # interleaved by one element
        torch.empty(64).as_strided((2, 3, 4), (0, 4, 1)),  # broadcast outer dim
        torch.empty(64).as_strided((2, 2, 2), (2, 1, 1)),  # two dims with one stride
    ],
    ids=["rows-overlap", "interleaved", "broadcast", "equal-strides"],
)
def test_overlapping_outputs_are_rejected(out):
    with pytest.raises(StrideGuardError, match=r"^_three: out is written but two of its elements share memory"):
        _three(torch.zeros(out.shape), out)


def test_expanded_written_last_dim_reports_the_write_race_not_the_inner_stride():
    # Fixed: the first message was the inner-stride one, whose suggested fix
    # (Tensor(..., inner_stride=None)) leaves a write race; the race is reported first now.
    @stride_guard(out=Tensor("N", writes=True))
    def f(out):
        return "ok"

    with pytest.raises(StrideGuardError) as info:
        f(torch.zeros(1).expand(4))
    assert str(info.value).startswith("f: out is written but two of its elements share memory: dim 0 has stride 0 and size 4")
    assert "allocate out with torch.empty(...)" in str(info.value)


@pytest.mark.parametrize(
    "spec, value, expected",
    [
        (
            "M 4",
            torch.zeros(2, 3),
            "f: x dim 1 is 3 but must be 4, as the spec 'M 4' says; pass a tensor of shape [2, 4]",
        ),
        (
            "M >=4",
            torch.zeros(2, 3),
            "f: x dim 1 is 3 but must be >= 4, as the spec 'M >=4' says; allocate x at least 4 wide along dim 1",
        ),
        ("3", 2, "f: x is 2 but must be 3, as the spec '3' says; pass 3"),
        (">=3", 2, "f: x is 2 but must be >= 3, as the spec '>=3' says; pass at least 3"),
        (
            "M N",
            np.zeros((2, 3)),
            "f: x must be a tensor of dims 'M N', got ndarray of shape [2, 3]; pass a torch.Tensor",
        ),
    ],
    ids=["fixed", "min-fixed", "int-fixed", "int-min", "not-a-tensor"],
)
def test_every_message_names_the_fix(spec, value, expected):
    # Fixed: fixed-size and minimum messages named no fix, and a non-tensor was shown by a repr
    # cut at 60 characters, newlines included.
    @stride_guard(x=spec)
    def f(x):
        return "ok"

    with pytest.raises(StrideGuardError) as info:
        f(value)
    assert str(info.value) == expected


def test_stride_of_a_missing_dim_names_the_shape_and_the_fix():
    @stride_guard(x="... N", s=stride("x", -2))
    def f(x, s):
        return "ok"

    assert f(torch.zeros(3, 8)[:, :4], 8) == "ok"
    with pytest.raises(StrideGuardError) as info:
        f(torch.zeros(4), 4)
    assert str(info.value) == "f: s claims x.stride(-2), which x does not have (Tensor of shape [4]); pass a tensor with that dim as x"


def test_a_name_bound_by_an_integer_argument_says_so():
    # Fixed: read "(V bound by V) ... allocate it at least as wide as V" when the integer
    # argument binding V was itself named V.
    @stride_guard(cache=Tensor("R >=V", writes=True), V="V")
    def f(cache, V):
        return "ok"

    assert f(torch.zeros(2, 5), 5) == "ok"
    with pytest.raises(StrideGuardError) as info:
        f(torch.zeros(2, 4), 5)
    assert str(info.value) == (
        "f: cache dim 1 is 4 but must be >= V = 5 (V bound by the integer argument V); the cache would be "
        "truncated — allocate it at least as wide as the integer argument V"
    )
