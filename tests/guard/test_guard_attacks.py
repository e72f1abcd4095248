"""Adversarial inputs for @stride_guard on plain launchers: layouts and calls it must accept,
ones it must reject, decoration-time refusals, and the wrapper's behaviour as a Python object
(methods, pickling, signatures, threads). Each test here failed before the fix it names."""

from __future__ import annotations

import inspect
import logging
import pickle
import threading
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import stridecheck.guard.spec_check as plan
from stridecheck import StrideGuardError, Tensor, stride, stride_guard
from stridecheck.guard.traced import generate_traced


@pytest.fixture
def slow_path_calls(monkeypatch):
    """Counts calls that the fast detector hands to the explaining checker."""
    calls = []
    real = plan.explain

    def counting(contract, values):
        calls.append(contract.func_name)
        return real(contract, values)

    monkeypatch.setattr(plan, "explain", counting)
    return calls


# ----------------------------------------------------------------------------- methods


class _Launchers:
    @stride_guard(x="N", out=Tensor("N", writes=True))
    @staticmethod
    def static(x, out):
        return ("static", x.shape[0])

    @stride_guard(x="N")
    @classmethod
    def klass(cls, x):
        return (cls.__name__, x.shape[0])

    @stride_guard(x="M N")
    def method(self, x, *, scale=2):
        return (type(self).__name__, x.shape[0] * scale)


def test_staticmethod_keeps_its_binding():
    # Fixed: the guard returned a plain function, which the class made an instance method, so
    # `obj.static(x, out)` passed `self` as x.
    x, out = torch.zeros(3), torch.zeros(3)
    assert _Launchers.static(x, out) == ("static", 3)
    assert _Launchers().static(x, out) == ("static", 3)
    with pytest.raises(StrideGuardError, match=r"^static: out is written but two of its elements share memory"):
        _Launchers().static(torch.zeros(3), torch.zeros(3, 2)[:, 0].as_strided((3,), (0,)))


def test_classmethod_is_guarded():
    # Fixed: refused with "can only wrap a function or a Triton kernel".
    assert _Launchers.klass(torch.zeros(4)) == ("_Launchers", 4)
    assert _Launchers().klass(torch.zeros(4)) == ("_Launchers", 4)
    with pytest.raises(StrideGuardError, match=r"^klass: x has 2 dims"):
        _Launchers.klass(torch.zeros(2, 2))


def test_method_self_and_keyword_only_default():
    assert _Launchers().method(torch.zeros(2, 3)) == ("_Launchers", 4)
    assert _Launchers().method(torch.zeros(2, 3), scale=5) == ("_Launchers", 10)
    with pytest.raises(StrideGuardError, match=r"^method: x dim 1 \(the last\) has stride 2"):
        _Launchers().method(torch.zeros(2, 6)[:, ::2])


# ----------------------------------------------------------------------------- decoration-time refusals


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


def test_varargs_and_varkw_around_guarded_parameters():
    @stride_guard(x="N", y="N")
    def launch(x, *rest, y=None, **options):
        return len(rest), sorted(options)

    assert launch(torch.zeros(3), 1, 2, y=torch.zeros(3), num_warps=4) == (2, ["num_warps"])
    with pytest.raises(StrideGuardError, match=r"^launch: y dim 0 is 4 but must be N = 3 \(N bound by x dim 0\)"):
        launch(torch.zeros(3), y=torch.zeros(4))


# ----------------------------------------------------------------------------- integers


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


# ----------------------------------------------------------------------------- generated code vs. parameter names


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


def test_traced_variant_survives_parameters_named_like_builtins():
    # The torch.compile stand-in raised TypeError ('int' object is not callable) on a valid call.
    traced, _ = generate_traced(_shadowing.__wrapped__, _shadowing.__stride_contract__)
    assert traced(torch.zeros(2, 3), torch.zeros(2, 3), 3, min=-1.0, len=7, isinstance=1, int=2) == "ok"


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


# ----------------------------------------------------------------------------- layouts it must accept / reject


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


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 4), st.integers(0, 9)), min_size=1, max_size=3),
)
def test_overlap_verdict_matches_brute_force_when_it_accepts(dims):
    # The written-argument check may call an exotic layout overlapping, but must never accept one
    # that really overlaps: enumerate every element's offset and compare.
    shape = [s for s, _ in dims]
    strides = [t for _, t in dims]
    offsets = [0]
    for sz, t in zip(shape, strides):
        offsets = [o + i * t for o in offsets for i in range(sz)]
    really = len(set(offsets)) < len(offsets)
    if not plan.overlaps(shape, strides):
        assert not really


# ----------------------------------------------------------------------------- the wrapper as an object


def test_pickle_and_signature_of_a_guarded_function():
    assert pickle.loads(pickle.dumps(_bind_int)) is _bind_int
    sig = inspect.signature(_bind_int)
    assert str(sig) == "(x, vocab_size, x_stride=None)"
    assert str(inspect.signature(_bind_int, follow_wrapped=False)) == "(x, vocab_size, x_stride=None)"
    assert _bind_int.__name__ == "_bind_int" and _bind_int.__wrapped__.__name__ == "_bind_int"


def test_repeated_decoration_checks_both_contracts():
    @stride_guard(x="N")
    @stride_guard(x=Tensor("N", dtype=torch.float32))
    def f(x):
        return "ok"

    assert f(torch.zeros(3)) == "ok"
    with pytest.raises(StrideGuardError, match=r"x has dtype int64 but must be float32"):
        f(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(StrideGuardError, match=r"x has 2 dims"):
        f(torch.zeros(3, 3))


def test_generator_launcher_checks_at_call_time():
    @stride_guard(x="N")
    def steps(x):
        yield from range(x.shape[0])

    assert list(steps(torch.zeros(3))) == [0, 1, 2]
    with pytest.raises(StrideGuardError, match=r"^steps: x has 2 dims"):
        steps(torch.zeros(3, 3))  # before any next()


def test_default_none_tensor_and_required():
    @stride_guard(x="N", out=Tensor("N", writes=True), bias=Tensor("N", required=True))
    def f(x, bias, out=None):
        return "ok"

    assert f(torch.zeros(3), torch.zeros(3)) == "ok"
    with pytest.raises(StrideGuardError, match=r"^f: bias is None but is required by the guard; pass it$"):
        f(torch.zeros(3), None)


class _SlowSet(set):
    """A set whose membership test yields the GIL, widening any check-then-add race."""

    def __contains__(self, key):
        result = super().__contains__(key)
        time.sleep(0.005)
        return result


def test_warn_once_holds_under_threads(monkeypatch, caplog):
    # Fixed: the warn-once test and the insertion were separate steps, so threads that failed
    # the same check together each logged it.
    monkeypatch.setenv("STRIDECHECK_GUARD", "warn")

    @stride_guard(x="N", y="N")
    def f(x, y):
        return "launched"

    f.__globals__["_sg_report"].warned = _SlowSet()
    barrier = threading.Barrier(8)
    results = []

    def worker():
        barrier.wait()
        results.append(f(torch.zeros(3), torch.zeros(4)))

    with caplog.at_level(logging.WARNING, logger="stridecheck.guard"):
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    msgs = [r.getMessage() for r in caplog.records if r.name == "stridecheck.guard"]
    assert results == ["launched"] * 8
    assert msgs == ["f: y dim 0 is 4 but must be N = 3 (N bound by x dim 0); pass arguments whose sizes agree, as the spec 'N' says"]


def test_expanded_written_last_dim_reports_the_write_race_not_the_inner_stride():
    # Fixed: the first message was the inner-stride one, whose suggested fix
    # (Tensor(..., inner_stride=None)) leaves a write race; the race is reported first now.
    @stride_guard(out=Tensor("N", writes=True))
    def f(out):
        return "ok"

    with pytest.raises(StrideGuardError) as info:
        f(torch.zeros(1).expand(4))
    assert str(info.value).startswith("f: out is written but two of its elements share memory: dim 0 has stride 0 and size 4")
    assert "out.clone()" in str(info.value)


# ----------------------------------------------------------------------------- messages


def test_stride_of_a_dim_the_spec_cannot_have_is_refused_at_decoration():
    # Fixed: accepted at decoration; every call then failed.
    with pytest.raises(StrideGuardError, match=r"^stride_guard on <lambda>, s: stride\('x', 2\) names a dim that x \(spec 'M N', 2 dims\)"):
        stride_guard(x="M N", s=stride("x", 2))(lambda x, s: None)
    stride_guard(x="... N", s=stride("x", 2))(lambda x, s: None)  # '...': any number of dims, judged per call


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


# ----------------------------------------------------------------------------- other callables


def _scaled(x, y, scale):
    return ("ok", scale)


class _CallableLauncher:
    def __call__(self, x):
        return "ok"


def test_partials_and_callable_objects_are_named_in_messages():
    # Fixed: messages named them by repr (`functools.partial(<function _scaled at 0x7f...>, ...)`,
    # `<..._CallableLauncher object at 0x7f...>`).
    import functools

    g = stride_guard(x="N", y="N")(functools.partial(_scaled, scale=2))
    assert g(torch.zeros(2), torch.zeros(2)) == ("ok", 2)
    assert g.__name__ == "_scaled"
    with pytest.raises(StrideGuardError, match=r"^_scaled: y dim 0 is 3 but must be N = 2"):
        g(torch.zeros(2), torch.zeros(3))
    h = stride_guard(x="N M")(_CallableLauncher())
    assert h(torch.zeros(2, 2)) == "ok"
    with pytest.raises(StrideGuardError, match=r"^_CallableLauncher: x has 1 dims"):
        h(torch.zeros(2))


def test_a_callable_without_a_signature_is_refused_clearly():
    # Fixed: inspect's ValueError ("no signature found for builtin") escaped at decoration.
    with pytest.raises(StrideGuardError, match=r"^stride_guard on add: cannot read its signature .*guard a Python function that calls it$"):
        stride_guard(input="N")(torch.add)


# ----------------------------------------------------------------------------- detector vs. explain on random contracts

_TOKENS = st.sampled_from(["A", "B", "2", "*", ">=A", ">=B", ">=2", "1"])


@st.composite
def _random_contract_and_call(draw):
    names = [f"p{i}" for i in range(draw(st.integers(1, 4)))]
    specs = {}
    for name in names:
        ellipsis = draw(st.booleans())
        text = " ".join((["..."] if ellipsis else []) + draw(st.lists(_TOKENS, min_size=0 if ellipsis else 1, max_size=3)))
        form = draw(st.sampled_from(["str", "tensor", "int"]))
        if form == "tensor":
            specs[name] = Tensor(
                text,
                writes=draw(st.booleans()),
                inner_stride=draw(st.sampled_from([1, None])),
                required=draw(st.booleans()),
            )
        elif form == "int":
            specs[name] = draw(st.sampled_from(["A", "B", ">=A", "3"]))
        else:
            specs[name] = text
    if draw(st.booleans()):
        specs["s"] = stride(draw(st.sampled_from(names)), draw(st.integers(-1, 1)))
    args = []
    for _ in names:
        kind = draw(st.sampled_from(["none", "int", "bool", "tensor", "tensor"]))
        if kind == "none":
            args.append(None)
        elif kind == "int":
            args.append(draw(st.integers(0, 4)))
        elif kind == "bool":
            args.append(draw(st.booleans()))
        else:
            nd = draw(st.integers(0, 3))
            shape = draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd))
            strides = draw(st.lists(st.integers(0, 5), min_size=nd, max_size=nd))
            args.append(torch.empty(200).as_strided(shape, strides))
    args.append(draw(st.one_of(st.none(), st.integers(0, 6))))
    return specs, names + ["s"], args


@settings(max_examples=400, deadline=None)
@given(_random_contract_and_call())
def test_fast_detector_agrees_with_explain_on_random_contracts(case):
    # The generated per-call code tracks bindings through optional arguments, '...', ints and
    # deferred minimums statically; it must flag every call explain() rejects, so that the
    # guard's verdict (and its first message) is explain()'s on every call.
    specs, params, args = case
    namespace: dict = {}
    exec(f"def f({', '.join(params)}): return 'ok'", namespace)
    try:
        guarded = stride_guard(**specs)(namespace["f"])
    except StrideGuardError:
        return  # a contract refused at decoration (e.g. a name only in >= form)
    expected = plan.explain(guarded.__stride_contract__, dict(zip(params, args)))
    try:
        guarded(*args)
        raised = None
    except StrideGuardError as e:
        raised = str(e)
    assert raised == (expected[0].message if expected else None)


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


def test_a_guarded_coroutine_function_is_still_one():
    # Fixed: the wrapper was a plain function returning the coroutine, so
    # inspect.iscoroutinefunction (asyncio frameworks, pytest-asyncio) said False.
    import asyncio

    @stride_guard(x="N", y="N")
    async def launch(x, y):
        await asyncio.sleep(0)
        return x.shape[0]

    assert inspect.iscoroutinefunction(launch)
    assert asyncio.run(launch(torch.zeros(3), torch.zeros(3))) == 3
    with pytest.raises(StrideGuardError, match=r"^launch: y dim 0 is 4 but must be N = 3"):
        asyncio.run(launch(torch.zeros(3), torch.zeros(4)))
