"""The strided_tensors hypothesis strategy."""

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stridecheck.testing.layouts import poison_value
from stridecheck.strategies import strided_tensors
from stridecheck.testing import assert_layout_invariant

SHAPES = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)
DTYPES = st.sampled_from([torch.float32, torch.float16, torch.int32, torch.int64, torch.uint8, torch.bool])
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _addresses(t):
    """Every element's address offset (in elements) from the storage start."""
    offsets = [t.storage_offset()]
    for size, stride in zip(t.shape, t.stride()):
        offsets = [o + i * stride for o in offsets for i in range(size)]
    return offsets


def _check_valid(t, shape, dtype):
    assert tuple(t.shape) == shape and t.dtype == dtype
    assert all(s >= 0 for s in t.stride())
    addresses = _addresses(t)
    # No two elements share memory: each example is a legal output tensor too.
    assert len(set(addresses)) == len(addresses)
    # Every element lies inside the storage.
    assert all(0 <= a < t.untyped_storage().nbytes() // t.element_size() for a in addresses)


@FAST
@given(data=st.data(), shape=SHAPES, dtype=DTYPES)
def test_examples_are_valid_with_unit_inner_stride(data, shape, dtype):
    t = data.draw(strided_tensors(shape=shape, dtype=dtype))
    _check_valid(t, shape, dtype)
    if t.dim() and t.shape[-1] > 1:
        assert t.stride(-1) == 1


@FAST
@given(data=st.data(), shape=SHAPES)
def test_non_unit_inner_stride_on_request_still_valid(data, shape):
    t = data.draw(strided_tensors(shape=shape, unit_inner_stride=False, max_step=3))
    _check_valid(t, shape, torch.float32)


def test_strategy_covers_the_layout_kinds():
    """Over a few hundred draws of a [3, 4, 5] tensor every kind of layout appears (a property
    of the search space, checked by hypothesis.find, which fails if no example exists)."""
    from hypothesis import find

    strat = strided_tensors(shape=(3, 4, 5))
    kinds = {
        "contiguous": lambda t: t.is_contiguous() and t.storage_offset() == 0,
        "storage offset": lambda t: t.storage_offset() > 0,
        "padded rows": lambda t: t.stride(1) > 5 and t.stride(2) == 1,
        "outer slice": lambda t: t.stride(0) > t.shape[1] * t.stride(1),
        "permuted outer dims": lambda t: t.stride(0) < t.stride(1),
    }
    for name, pred in kinds.items():
        found = find(strat, pred, settings=settings(max_examples=500, database=None))
        assert pred(found), name
    inner = find(strided_tensors(shape=(3, 4), unit_inner_stride=False), lambda t: t.stride(-1) != 1,
                 settings=settings(max_examples=500, database=None))
    assert inner.stride(-1) != 1


@FAST
@given(data=st.data())
def test_gaps_hold_poison_and_values_are_not_poison(data):
    t = data.draw(strided_tensors(shape=(3, 4), dtype=torch.float32, max_pad=3))
    storage = torch.tensor([], dtype=t.dtype).set_(t.untyped_storage())
    inside = torch.zeros(storage.numel(), dtype=torch.bool)
    inside[_addresses(t)] = True
    assert bool(torch.isnan(storage[~inside]).all())
    assert not bool(torch.isnan(t).any())
    ints = data.draw(strided_tensors(shape=(3, 4), dtype=torch.int32))
    assert not bool((ints == poison_value(torch.int32)).any())  # values never look like poison
    zeros = data.draw(strided_tensors(shape=(3, 4), dtype=torch.int32, fill="zeros"))
    storage = torch.tensor([], dtype=zeros.dtype).set_(zeros.untyped_storage())
    inside = torch.zeros(storage.numel(), dtype=torch.bool)
    inside[_addresses(zeros)] = True
    assert bool((storage[~inside] == 0).all())


def test_shape_and_dtype_may_be_strategies():
    @settings(max_examples=40, deadline=None)
    @given(strided_tensors(shape=st.sampled_from([(2, 3), (5,)]), dtype=st.sampled_from([torch.int8, torch.bool])))
    def check(t):
        assert tuple(t.shape) in ((2, 3), (5,)) and t.dtype in (torch.int8, torch.bool)

    check()


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="negative size"):
        strided_tensors(shape=(2, -1))
    with pytest.raises(TypeError, match="shape must be"):
        strided_tensors(shape=3)
    with pytest.raises(TypeError, match="dtype must be"):
        strided_tensors(shape=(2,), dtype="float32")
    with pytest.raises(ValueError, match="max_step >= 1"):
        strided_tensors(shape=(2,), max_step=0)
    with pytest.raises(ValueError, match="fill"):
        strided_tensors(shape=(2,), fill="ones")


@settings(max_examples=25, deadline=None)
@given(strided_tensors(shape=(4, 6)))
def test_a_layout_invariant_function_passes_on_any_drawn_layout(x):
    # The strategy's tensors are ordinary inputs to the layout tests: torch reads strides right.
    report = assert_layout_invariant(lambda t: t.sum(dim=-1) * 0 + t[:, 0], x)
    assert report.failures == [] and not math.isnan(float(x.sum()))


def test_a_falsifying_example_shows_its_strides_and_storage_offset():
    # Issue 15: the values alone do not say which layout broke a test.
    @settings(max_examples=200, deadline=None, database=None)
    @given(strided_tensors(shape=(3, 4)))
    def needs_dense(x):
        assert x.is_contiguous() and x.storage_offset() == 0

    with pytest.raises(AssertionError) as info:
        needs_dense()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "strided_tensors drew shape (3, 4) torch.float32: strides (" in notes
    assert "storage offset " in notes and "memory order (0, 1)" in notes
