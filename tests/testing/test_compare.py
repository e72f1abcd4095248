"""What "the same result" means: torch.testing.assert_close's tolerances by dtype, or equal bits."""

import math

import pytest
import torch

from stridecheck.testing.compare import FEW_ULP, Tolerance, default_tolerance, difference

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def _assert_close_accepts(actual, expected) -> bool:
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("dtype", FLOATS + [torch.complex64], ids=str)
@pytest.mark.parametrize("side", [0.9, 1.1], ids=["inside", "outside"])
def test_default_tolerance_is_assert_close_s_at_its_edge(dtype, side):
    # Differences of 0.9 and 1.1 times the allowed atol + rtol * |expected|: the verdict must
    # be torch.testing.assert_close's (the public oracle of what the default means).
    rtol, atol = default_tolerance(dtype)
    expected = torch.tensor([0.0, 1.0, -3.0, 100.0], dtype=torch.float64)
    actual = expected + side * (atol + rtol * expected.abs())
    expected, actual = expected.to(dtype), actual.to(dtype)
    verdict = difference(expected, actual, Tolerance()) is None
    assert verdict == _assert_close_accepts(actual, expected)
    if dtype in (torch.float32, torch.float64):  # fine enough that 0.9 and 1.1 survive rounding
        assert verdict == (side < 1)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.bool], ids=str)
def test_integers_and_booleans_are_compared_exactly_by_default(dtype):
    assert default_tolerance(dtype) == (0.0, 0.0)
    a = torch.tensor([1, 0, 1, 1]).to(dtype)
    b = a.clone()
    b[2] = 0
    diff = difference(a, b, Tolerance())
    assert diff.index == (2,) and diff.count == 1


def test_float8_has_no_default_tolerance_in_torch_so_it_is_exact():
    assert default_tolerance(torch.float8_e4m3fn) == (0.0, 0.0)


@pytest.mark.parametrize("tolerance", [Tolerance(exact=True), Tolerance.from_arguments(0, 0, False)], ids=["exact", "zeros"])
def test_exact_means_equal_bits(tolerance):
    a = torch.tensor([1.0, 0.0, math.nan])
    assert difference(a, a.clone(), tolerance) is None  # NaN matches NaN
    one_ulp = torch.nextafter(a[:1], torch.tensor([2.0]))
    assert difference(a[:1], one_ulp, tolerance).max_ulp == 1
    assert difference(a[1:2], -a[1:2], tolerance).index == (0,)  # -0.0 is other bits
    assert difference(a[1:2], -a[1:2], Tolerance()) is None  # but the same number


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("steps", [1, 3])
def test_a_difference_is_measured_in_ulp_of_the_expected_dtype(dtype, steps):
    expected = torch.tensor([1.5, -40.0, 0.0], dtype=dtype)
    actual = expected.clone()
    for _ in range(steps):
        actual = torch.nextafter(actual, torch.full_like(actual, math.inf))
    diff = difference(expected, actual, Tolerance(exact=True))
    assert diff.count == 3 and diff.max_ulp == pytest.approx(steps)
    assert diff.within_few_ulp == (steps <= FEW_ULP)


def test_a_misplaced_element_is_not_within_a_few_ulp():
    expected = torch.tensor([0.25, 0.5])
    diff = difference(expected, expected.flip(0), Tolerance(exact=True))
    assert diff.max_abs == 0.25 and not diff.within_few_ulp


def test_nan_where_the_baseline_has_a_number_is_an_infinite_difference():
    diff = difference(torch.tensor([1.0, 2.0]), torch.tensor([1.0, math.nan]), Tolerance())
    assert diff.index == (1,) and math.isinf(diff.max_abs) and not diff.within_few_ulp


def test_shape_and_dtype_mismatches_are_named():
    assert difference(torch.zeros(2, 3), torch.zeros(3, 2), Tolerance()).mismatch == (
        "shape (2, 3) torch.float32",
        "shape (3, 2) torch.float32",
    )
    assert "int32" in difference(torch.zeros(2), torch.zeros(2, dtype=torch.int32), Tolerance()).mismatch[1]


@pytest.mark.parametrize(
    "atol,rtol,exact,expected",
    [
        (None, None, False, Tolerance()),
        (None, None, True, Tolerance(exact=True)),
        (0, 0, False, Tolerance(exact=True)),
        (1e-6, None, False, Tolerance(rtol=0.0, atol=1e-6)),
        (None, 1e-3, False, Tolerance(rtol=1e-3, atol=0.0)),
    ],
)
def test_keyword_combinations(atol, rtol, exact, expected):
    assert Tolerance.from_arguments(atol, rtol, exact) == expected


@pytest.mark.parametrize(
    "atol,rtol,exact,message",
    [(-1.0, None, False, "atol must be"), (None, math.nan, False, "rtol must be"), (1e-6, None, True, "exact=True")],
)
def test_bad_tolerances_are_clear_errors(atol, rtol, exact, message):
    with pytest.raises(ValueError, match=message):
        Tolerance.from_arguments(atol, rtol, exact)


def test_given_tolerances_apply_to_integers_too_as_in_torch():
    a, b = torch.tensor([100]), torch.tensor([101])
    assert difference(a, b, Tolerance(rtol=0.0, atol=1.0)) is None
    assert difference(a, b, Tolerance()) is not None


def test_describe_names_the_knob():
    assert "assert_close's default for float32" in Tolerance().describe(torch.float32)
    assert "exact=True" in Tolerance(exact=True).describe(torch.float32)
    assert "as given" in Tolerance(rtol=0.0, atol=1e-3).describe(torch.float16)
