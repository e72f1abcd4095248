"""Property tests of spec contracts: the guard never rejects a valid layout, and its fast per-call
detector misses nothing that the explaining checker (the ground truth behind every message) rejects."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stridecheck import StrideGuardError, Tensor, stride, stride_guard
from stridecheck.guard.spec_check import explain, overlaps
from tests.guard.conftest import packed_layout

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@stride_guard(
    logits="T V",
    pos="T",
    cache=Tensor("R S >=V", writes=True),
    out=Tensor("T", writes=True),
    logits_stride=stride("logits", 0),
    cache_stride=stride("cache", 1),
)
def launch(logits, pos, cache, out, logits_stride, cache_stride):
    return True


@st.composite
def valid_calls(draw):
    t = draw(st.integers(0, 5))
    v = draw(st.integers(0, 9))
    r = draw(st.integers(0, 3))
    s = draw(st.integers(0, 3))
    w = v + draw(st.integers(0, 3))
    logits = draw(packed_layout((t, v)))
    pos = draw(packed_layout((t,), torch.int64))
    cache = draw(packed_layout((r, s, w)))
    out = draw(packed_layout((t,), torch.int64))
    return logits, pos, cache, out


@SETTINGS
@given(valid_calls())
def test_never_rejects_a_valid_layout(call):
    logits, pos, cache, out = call
    assert launch(logits, pos, cache, out, logits.stride(0), cache.stride(1)) is True


@st.composite
def any_strided(draw, ndim):
    """Tensors of arbitrary (also invalid: stride 0, overlapping, inner stride != 1) layouts,
    usually of ``ndim`` dims."""
    nd = draw(st.one_of(st.just(ndim), st.just(ndim), st.just(ndim), st.integers(0, 3)))
    shape = tuple(draw(st.integers(0, 4)) for _ in range(nd))
    strides = list(draw(st.integers(0, 12)) for _ in range(nd))
    if nd and draw(st.booleans()):
        strides[-1] = 1  # most real tensors: make the later checks reachable
    offset = draw(st.integers(0, 3))
    need = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0)
    dtype = draw(st.sampled_from([torch.float32, torch.int64]))
    device = draw(st.sampled_from(["cpu", "cpu", "cpu", "meta"]))
    return torch.zeros(need, dtype=dtype, device=device).as_strided(shape, tuple(strides), offset)


@SETTINGS
@given(
    any_strided(2),
    st.one_of(st.none(), any_strided(1)),
    st.one_of(st.none(), any_strided(3)),
    st.one_of(st.none(), any_strided(1)),
    st.one_of(st.none(), st.integers(0, 12)),
    st.one_of(st.none(), st.integers(0, 12)),
)
def test_fast_detector_agrees_with_the_explaining_checker(logits, pos, cache, out, ls, cs):
    values = dict(logits=logits, pos=pos, cache=cache, out=out, logits_stride=ls, cache_stride=cs)
    expected = explain(launch.__stride_contract__, values)
    try:
        launch(**values)
        raised = None
    except StrideGuardError as e:
        raised = str(e)
    if expected:
        assert raised == expected[0].message
    else:
        assert raised is None


def _brute_force_overlaps(shape, strides) -> bool:
    offsets = [0]
    for n, s in zip(shape, strides):
        offsets = [o + i * s for o in offsets for i in range(n)]
    return len(offsets) != len(set(offsets))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10)), max_size=4))
def test_overlap_test_is_sufficient(dims):
    shape = tuple(n for n, _ in dims)
    strides = tuple(s for _, s in dims)
    # Sufficient: whenever two elements really share memory, it says so.
    if _brute_force_overlaps(shape, strides):
        assert overlaps(shape, strides)


@SETTINGS
@given(st.lists(st.integers(0, 4), max_size=4).flatmap(packed_layout))
def test_overlap_test_is_exact_on_valid_layouts(x):
    assert not overlaps(tuple(x.shape), x.stride())


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
    if not overlaps(shape, strides):
        assert not really


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
    expected = explain(guarded.__stride_contract__, dict(zip(params, args)))
    try:
        guarded(*args)
        raised = None
    except StrideGuardError as e:
        raised = str(e)
    assert raised == (expected[0].message if expected else None)
