"""The spec language: malformed or impossible contracts are refused at decoration, with the reason."""

from __future__ import annotations

import pytest
import torch

from stridecheck import StrideGuardError, Tensor, stride, stride_guard


def _f(x, y=None, n=None):
    return 1


@pytest.mark.parametrize(
    ("specs", "match"),
    [
        (dict(x="T >=V"), "'>=V' refers to V, which no argument binds"),
        (dict(z="T"), "no parameter named 'z'"),
        (dict(x="T ... V"), r"'\.\.\.' may only lead the spec"),
        (dict(x="T V+1"), "cannot read 'V\\+1'"),
        (dict(x="T >=-3"), "'>=' takes a name or an integer"),
        (dict(x=3), "a spec is a string"),
        (dict(n=stride("q", 0)), "names no parameter"),
        (dict(x=Tensor("T", dtype="float32")), "dtype must be a torch.dtype"),
    ],
)
def test_malformed_specs_are_refused_at_decoration(specs, match):
    with pytest.raises(StrideGuardError, match=match):
        stride_guard(**specs)(_f)


def test_writes_must_name_a_spec():
    with pytest.raises(StrideGuardError, match="writes names 'y', which has no spec"):
        stride_guard(x="T", writes=("y",))(_f)


def test_bare_decorator_on_a_plain_function_is_refused():
    with pytest.raises(StrideGuardError, match="a plain function needs specs"):
        stride_guard(_f)


def test_object_forms_validate_their_arguments():
    with pytest.raises(StrideGuardError):
        Tensor(["T"])
    with pytest.raises(StrideGuardError):
        Tensor("T", inner_stride=1.5)
    with pytest.raises(StrideGuardError):
        stride("x", "0")
    assert repr(Tensor("T V", writes=True)) == "Tensor('T V', writes=True)"
    assert repr(stride("x", 0)) == "stride('x', 0)"


def test_reserved_parameter_prefix():
    def g(_sg_x):
        return 1

    with pytest.raises(StrideGuardError, match="reserved"):
        stride_guard(_sg_x="N")(g)


@pytest.mark.parametrize(
    "make",
    [
        lambda: stride_guard(args="N")(lambda x, *args: None),
        lambda: stride_guard(kwargs="N")(lambda x, **kwargs: None),
        lambda: stride_guard(s=stride("kwargs", 0))(lambda s, **kwargs: None),
        lambda: stride_guard(x="N", s=stride("x", 0), writes=("s",))(lambda x, s: None),
    ],
    ids=["spec-on-varargs", "spec-on-varkw", "stride-of-varkw", "writes-on-stride-arg"],
)
def test_specs_that_can_never_hold_are_refused_at_decoration(make):
    # Fixed: accepted at decoration; a spec on *args then failed every call ("must be a tensor").
    with pytest.raises(StrideGuardError, match=r"stride_guard on <lambda>"):
        make()


def test_stride_of_a_dim_the_spec_cannot_have_is_refused_at_decoration():
    # Fixed: accepted at decoration; every call then failed.
    with pytest.raises(StrideGuardError, match=r"^stride_guard on <lambda>, s: stride\('x', 2\) names a dim that x \(spec 'M N', 2 dims\)"):
        stride_guard(x="M N", s=stride("x", 2))(lambda x, s: None)
    stride_guard(x="... N", s=stride("x", 2))(lambda x, s: None)  # '...': any number of dims, judged per call


def test_a_callable_without_a_signature_is_refused_clearly():
    # Fixed: inspect's ValueError ("no signature found for builtin") escaped at decoration.
    with pytest.raises(StrideGuardError, match=r"^stride_guard on add: cannot read its signature .*guard a Python function that calls it$"):
        stride_guard(input="N")(torch.add)
