"""Property tests: the guard never rejects a valid layout, and its fast per-call detector misses
nothing that the explaining checker (the ground truth behind every message) rejects."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stridecheck import StrideGuardError, Tensor, stride, stride_guard
from stridecheck.guard.spec_check import explain, overlaps
from stridecheck.strategies import strided_tensors

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
    logits = draw(strided_tensors((t, v)))
    pos = draw(strided_tensors((t,), torch.int64))
    cache = draw(strided_tensors((r, s, w)))
    out = draw(strided_tensors((t,), torch.int64))
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
@given(strided_tensors(st.lists(st.integers(0, 4), max_size=4).map(tuple)))
def test_overlap_test_is_exact_on_valid_layouts(x):
    assert not overlaps(tuple(x.shape), x.stride())


# ----------------------------------------------------------------------------- derived contracts


def _derived_kernel():
    import triton
    import triton.language as tl

    from stridecheck.guard import stride_guard as sg

    @triton.jit
    def _k(out_ptr, out_stride, x_ptr, x_stride, col, n, width, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        # `col * width` on purpose: the size-stepped term the derived contract must judge.
        v = tl.load(x_ptr + r * x_stride + col * width + offs, mask=offs < n)  # stridecheck: ignore[SC001]
        tl.store(out_ptr + r * out_stride + offs, v, mask=offs < n)

    return sg(_k)


DERIVED = None


@SETTINGS
@given(
    any_strided(3),
    any_strided(2),
    st.integers(0, 12),
    st.integers(0, 12),
    st.integers(0, 6),
    st.integers(0, 12),
)
def test_derived_fast_detector_agrees_with_check_derived(x, out, x_stride, out_stride, n, width):
    from stridecheck.guard.derive import check_derived

    global DERIVED
    if DERIVED is None:
        DERIVED = _derived_kernel()
    values = dict(out_ptr=out, out_stride=out_stride, x_ptr=x, x_stride=x_stride, col=0, n=n, width=width)
    expected = check_derived(DERIVED.contract, values)
    try:
        DERIVED._check(out, out_stride, x, x_stride, 0, n, width, BLOCK=8)
        raised = None
    except StrideGuardError as e:
        raised = str(e)
    assert raised == (expected[0].message if expected else None)


def _strided_store_kernel():
    import triton
    import triton.language as tl

    from stridecheck.guard import stride_guard as sg

    @triton.jit
    def _store_step(cache_ptr, cache_stride_0, cache_stride_1, step, x_ptr, x_stride, n, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + r * x_stride + offs, mask=offs < n)
        tl.store(cache_ptr + r * cache_stride_0 + step * cache_stride_1 + offs, v, mask=offs < n)

    return sg(_store_step)


STORE = None


@SETTINGS
@given(
    st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 6), st.integers(0, 3)).flatmap(
        lambda d: st.tuples(strided_tensors((d[0], d[1], d[2] + d[3])), strided_tensors((d[0], d[2])))
    )
)
def test_derived_contract_never_rejects_a_valid_layout(tensors):
    # A kernel that addresses every dim through its own stride must accept every valid layout
    # (padded, sliced, offset, outer dims permuted) of a cache at least as wide as the rows.
    global STORE
    if STORE is None:
        STORE = _strided_store_kernel()
    cache, x = tensors
    STORE._check(cache, cache.stride(0), cache.stride(1), 0, x, x.stride(0), x.shape[1], BLOCK=8)
