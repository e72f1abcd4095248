"""One check function: a derived guard's verdict at a launch is :func:`check_launch`'s, kept in a
table keyed by the launch's layout signature (shapes, strides, devices, the values the checks
read, constexprs included). A repeated signature costs a lookup; a new one the straight-line test
that only accepts, or check_launch. On random layouts, the guarded launch and check_launch agree,
first launch and repeated."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stridecheck import StrideGuardError, stride_guard
from stridecheck.guard.check import MISSING, check_launch
from tests.guard.conftest import any_layout, packed_layout
from tests.guard.test_derived_branches import _modulate
from tests.guard.test_derived_regrouping import _channels_of_group
from tests.guard.test_derived_steps import _k_major, _row_tiles, _store_step
from tests.guard.test_derived_widths import _gather_rows
from tests.guard.test_kernel_launch import _copy_rows


def _counting(kernel):
    """The guard of ``kernel`` with its check_launch path counted."""
    guarded = stride_guard(kernel)
    ns = guarded._check.__globals__
    calls = []
    real = ns["_sg_full"]

    def full(values):
        calls.append(1)
        return real(values)

    ns["_sg_full"] = full
    return guarded, calls


def test_a_repeated_signature_is_a_lookup():
    # A valid grouping the straight-line test cannot accept: check_launch runs once, then the table.
    guarded, calls = _counting(_channels_of_group)
    x = torch.randn(2, 6, 5)
    dx = torch.zeros(2, 3, 10)
    for _ in range(5):
        guarded._check(x, dx, x.stride(0), x.stride(1), HIDDEN=5, CPG=2, BLOCK=8)
    assert len(calls) == 1
    assert len(guarded._check.__stride_guard_table__) == 1
    # A constexpr no check reads (a tile size) is not part of the signature; one a check reads is.
    guarded._check(x, dx, x.stride(0), x.stride(1), HIDDEN=5, CPG=2, BLOCK=16)
    assert len(calls) == 1
    modulate, calls = _counting(_modulate)
    x = torch.randn(3, 4)
    for has_shift in (False, True, False):
        modulate._check(x, 4, x, 4, x, 4, x, 4, HAS_SHIFT=has_shift, BLOCK=4)
    assert len(modulate._check.__stride_guard_table__) == 2


def test_a_refused_signature_is_refused_from_the_table():
    guarded, calls = _counting(_copy_rows)
    x = torch.randn(5, 40)[:, :30]
    out = torch.empty(5, 30)
    messages = set()
    for _ in range(3):
        with pytest.raises(StrideGuardError) as info:
            guarded._check(out, 30, x, 30, 30, BLOCK=32)
        messages.add(str(info.value))
    assert len(calls) == 1 and len(messages) == 1


def test_the_table_is_bounded():
    guarded, _ = _counting(_copy_rows)
    guarded._check.__globals__["_sg_size"] = 4
    for n in range(1, 11):
        x = torch.randn(2, n)
        guarded._check(x, n, x, n, n, BLOCK=16)
    assert 1 <= len(guarded._check.__stride_guard_table__) <= 4


def _values(contract, args, kwargs) -> dict:
    values = {p: MISSING for p in contract.params}
    values.update(zip(contract.params, args))
    values.update(kwargs)
    return values


def _verdict(guarded, args, kwargs):
    try:
        guarded._check(*args, **kwargs)
        return None
    except StrideGuardError as e:
        return str(e)


_KERNELS = {
    "copy_rows": stride_guard(_copy_rows),
    "store_step": stride_guard(_store_step),
    "channels_of_group": stride_guard(_channels_of_group),
    "modulate": stride_guard(_modulate),
    "gather_rows": stride_guard(_gather_rows),
    "k_major": stride_guard(_k_major),
    "row_tiles": stride_guard(_row_tiles),
}


@st.composite
def _launches(draw):
    name = draw(st.sampled_from(sorted(_KERNELS)))
    guarded = _KERNELS[name]
    pointers = {p.name for p in guarded.contract.pointers}
    args, kwargs = [], {}
    for p in guarded.contract.params:
        if p in pointers:
            nd = draw(st.integers(1, 3))
            shape = tuple(draw(st.integers(0, 4)) for _ in range(nd))
            args.append(draw(st.one_of(any_layout(nd), packed_layout(shape), st.none())))
        elif p.isupper() or p.startswith("B"):
            kwargs[p] = draw(st.sampled_from([1, 2, 4, 8])) if p != "HAS_SHIFT" else draw(st.booleans())
        else:
            args.append(draw(st.integers(0, 12)))
    return guarded, args, kwargs


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_launches())
def test_the_guarded_launch_and_check_launch_agree(launch):
    guarded, args, kwargs = launch
    expected = check_launch(guarded.contract, _values(guarded.contract, args, kwargs))
    want = expected[0].message if expected else None
    assert _verdict(guarded, args, kwargs) == want  # a new signature
    assert _verdict(guarded, args, kwargs) == want  # the same, from the table


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_launches(), st.data())
def test_a_second_layout_with_the_same_values_gets_its_own_verdict(launch, data):
    # The repeated-launch path compares the tensors against the last layout seen with the same
    # other values: a different layout (other tensors, same scalars) must never take its verdict.
    guarded, args, kwargs = launch
    pointers = {p.name for p in guarded.contract.pointers}
    _verdict(guarded, args, kwargs)
    other = list(args)
    for i, p in enumerate(guarded.contract.params[: len(args)]):
        if p in pointers and args[i] is not None:
            nd = args[i].dim()
            other[i] = data.draw(st.one_of(any_layout(nd), packed_layout(tuple(args[i].shape))))
    expected = check_launch(guarded.contract, _values(guarded.contract, other, kwargs))
    assert _verdict(guarded, other, kwargs) == (expected[0].message if expected else None)


def test_a_repeated_layout_is_compared_in_one_call_and_keeps_no_tensor():
    # torch's TensorGuards compares type, dispatch keys, dtype, device, requires_grad, sizes
    # and strides, in C++, against a layout kept at its second sighting.
    import gc
    import weakref

    from stridecheck.guard.kernel import _tensor_guards

    if _tensor_guards() is None:
        pytest.skip("this torch has no torch._C._dynamo.guards.TensorGuards: the Python key serves alone")
    guarded, calls = _counting(_copy_rows)
    x, out = torch.randn(5, 30), torch.empty(5, 30)
    guarded._check(out, 30, x, 30, 30, BLOCK=32)
    table = guarded._check.__stride_guard_table__
    fast = guarded._check.__stride_guard_fast__
    assert not fast and len(table) == 1  # seen once: the key alone (building a comparison costs more)
    guarded._check(out, 30, x, 30, 30, BLOCK=32)
    assert [len(v) for v in fast.values()] == [1]  # seen twice: kept for the comparison
    before = len(calls)
    table.clear()  # from here on, an answer can only come from the comparison
    # New tensor objects of the same layout: answered without the key or check_launch.
    guarded._check(torch.empty(5, 30), 30, torch.randn(5, 30), 30, 30, BLOCK=32)
    assert len(calls) == before and not table
    # Another layout with the same scalars: not answered by the comparison (refused, correctly).
    with pytest.raises(StrideGuardError):
        guarded._check(out, 30, torch.randn(5, 40)[:, :30], 30, 30, BLOCK=32)
    assert len(calls) == before + 1 and len(table) == 1
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None  # the comparison holds metadata, not the tensors


def test_the_comparison_can_be_switched_off(monkeypatch):
    from stridecheck.guard.kernel import _tensor_guards

    monkeypatch.setenv("STRIDECHECK_GUARD_TENSOR_GUARDS", "0")
    _tensor_guards.cache_clear()
    try:
        guarded = stride_guard(_copy_rows)
        x = torch.randn(5, 30)
        guarded._check(x, 30, x, 30, 30, BLOCK=32)
        assert guarded._check.__stride_guard_fast__ is None
        assert len(guarded._check.__stride_guard_table__) == 1
    finally:
        monkeypatch.delenv("STRIDECHECK_GUARD_TENSOR_GUARDS")
        _tensor_guards.cache_clear()


def test_layouts_that_take_turns_are_kept_up_to_a_bound_and_never_rebuilt():
    from stridecheck.guard.kernel import FAST_PER_KEY, _tensor_guards

    if _tensor_guards() is None:
        pytest.skip("this torch has no torch._C._dynamo.guards.TensorGuards")
    guarded = stride_guard(_copy_rows)
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]
    xs = [torch.zeros(4, 8, dtype=d) for d in dtypes]
    outs = [torch.zeros_like(x) for x in xs]
    for _ in range(3):
        for x, out in zip(xs, outs):
            guarded._check(out, 8, x, 8, 8, BLOCK=8)
    (kept,) = guarded._check.__stride_guard_fast__.values()  # one set of other values
    assert len(kept) == FAST_PER_KEY
    first = list(kept)
    for x, out in zip(xs, outs):
        guarded._check(out, 8, x, 8, 8, BLOCK=8)
    assert kept == first  # the first layouts stay; the others are answered by the key


def test_none_and_repeated_tensors_are_compared_by_identity_first():
    from stridecheck.guard.kernel import _tensor_guards

    if _tensor_guards() is None:
        pytest.skip("this torch has no torch._C._dynamo.guards.TensorGuards")
    guarded = stride_guard(_copy_rows)
    fast = guarded._check.__stride_guard_fast__

    def expect(args):
        found = check_launch(guarded.contract, _values(guarded.contract, args, {"BLOCK": 8}))
        return found[0].message if found else None

    x, out = torch.randn(4, 8), torch.empty(4, 8)
    launches = [
        [None, 8, x, 8, 8],  # a None output
        [x, 8, x, 8, 8],  # in place: one tensor for both pointers
        [out, 8, x, 8, 8],  # two tensors, the same layout
        [out, 8, torch.randn(4, 16)[:, :8], 8, 8],  # x strided: refused
    ]
    for _ in range(3):  # seen, kept, then answered by the kept comparison
        for args in launches:
            assert _verdict(guarded, args, {"BLOCK": 8}) == expect(args)
    (kept,) = fast.values()
    assert len(kept) == 4
    # New objects, same patterns and layouts: each answered by its own entry (the table stays
    # empty), still right.
    table = guarded._check.__stride_guard_table__
    table.clear()
    y, o = torch.randn(4, 8), torch.empty(4, 8)
    for args in ([None, 8, y, 8, 8], [y, 8, y, 8, 8], [o, 8, y, 8, 8]):
        assert _verdict(guarded, args, {"BLOCK": 8}) == expect(args)
    assert len(kept) == 4 and not table


def test_values_that_compare_equal_get_one_verdict_in_any_order():
    # A table entry is found by equality (True == 1 == 1.0 == np.int64(1) share a hash), so the
    # check must read them alike: a bool as 0 / 1 (Triton's i1), an integral float as its integer,
    # a NumPy scalar as its Python value.
    import numpy as np

    x = torch.randn(5, 40)[:, :30]
    out = torch.empty(5, 30)
    for order in ([30, 30.0, np.int64(30)], [30.0, np.int64(30), 30], [np.int64(30), 30, 30.0]):
        guarded = stride_guard(_copy_rows)
        for stride_value in order * 2:
            args = [out, 30, x, stride_value, 30]
            expected = check_launch(guarded.contract, _values(guarded.contract, args, {"BLOCK": 32}))
            assert expected, "x_stride 30 against x.stride(0) 40 is refused, whatever its type"
            assert _verdict(guarded, args, {"BLOCK": 32}) == expected[0].message
    narrow = torch.randn(5, 2)[:, :1]
    one = torch.empty(5, 1)
    for order in ([True, 1], [1, True]):
        guarded = stride_guard(_copy_rows)
        for stride_value in order * 2:
            args = [one, 1, narrow, stride_value, 1]
            expected = check_launch(guarded.contract, _values(guarded.contract, args, {"BLOCK": 1}))
            assert _verdict(guarded, args, {"BLOCK": 1}) == (expected[0].message if expected else None)
            assert expected  # a row stride of 1 (True) for rows 2 apart
    xx, scale, y = torch.randn(3, 4), torch.randn(3, 4), torch.empty(3, 4)
    for order in ([np.True_, True], [True, np.True_]):
        guarded = stride_guard(_modulate)
        for flag in order * 2:
            args = [xx, 4, scale, 4, scale, 0, y, 4]
            kwargs = {"HAS_SHIFT": flag, "BLOCK": 4}
            expected = check_launch(guarded.contract, _values(guarded.contract, args, kwargs))
            assert expected  # the shift read with stride 0 under HAS_SHIFT
            assert _verdict(guarded, args, kwargs) == expected[0].message
