"""What a LayoutError says: neutral wording, who wrote what, the reference's verdict, the name,
and what a rounding-sized difference means under each comparison."""

import math

import pytest
import torch

from stridecheck.testing import LayoutError, assert_layout_invariant


def _read_rows_by_width(x):
    n, m = x.shape
    return torch.as_strided(x, (n, m), (m, 1), x.storage_offset()).clone()


def _failure(fn, *args, **kwargs):
    with pytest.raises(LayoutError) as info:
        assert_layout_invariant(fn, *args, **kwargs)
    return info.value


# --- neutral wording ---------------------------------------------------------------------------


def test_values_are_named_by_the_run_that_gave_them():
    x = torch.arange(12.0).reshape(3, 4)
    err = _failure(_read_rows_by_width, x, layouts="padded_last")
    (failure,) = err.report.failures
    assert failure.problems[0] == (
        "return value differs at [1, 0]: the contiguous baseline gave 4, x as padded_last gave nan "
        "(8 of 12 element(s) differ)"
    )
    assert "expected" not in str(err) and "got" not in str(err)


def test_the_header_counts_every_verdict():
    err = _failure(_read_rows_by_width, torch.randn(3, 4))
    first = str(err).splitlines()[0]
    assert first == "_read_rows_by_width: 4 layout variant(s) fail (1 passed, 0 declared unsupported, 1 not applicable)"
    assert "  x as padded_last (strides (7, 1)):" in str(err).splitlines()


def test_a_shape_that_depends_on_the_layout_is_named():
    err = _failure(lambda x: x if x.is_contiguous() else x.t(), torch.randn(3, 4), layouts="padded_last")
    assert err.report.failures[0].problems == (
        "return value: the contiguous baseline gave a tensor of shape (3, 4) torch.float32, "
        "x as padded_last gave shape (4, 3) torch.float32",
    )


# --- mutations: which run wrote which argument ------------------------------------------------


def _writes_only_when_dense(y, x):
    if y.is_contiguous():
        y.add_(x)
    return x.sum()


def _writes_only_when_not_dense(y, x):
    if not y.is_contiguous():
        y.add_(x)
    return x.sum()


def _writes_by_layout(y, x):
    y.add_(x if y.is_contiguous() else 2 * x)


def test_a_write_the_layout_run_did_not_make_is_named():
    y, x = torch.zeros(2, 3), torch.ones(2, 3)
    err = _failure(_writes_only_when_dense, y, x, layouts="padded_last")
    assert err.report.failures[0].problems == (
        "the contiguous baseline modified argument y (first change at [0, 0]: 0 -> 1; 6 of 6 element(s)), "
        "y as padded_last left it unchanged",
    )


def test_a_write_only_the_layout_run_made_is_named():
    y, x = torch.zeros(2, 3), torch.ones(2, 3)
    err = _failure(_writes_only_when_not_dense, y, x, layouts="padded_last")
    assert err.report.failures[0].problems == (
        "y as padded_last modified argument y (first change at [0, 0]: 0 -> 1; 6 of 6 element(s)), "
        "the contiguous baseline left it unchanged",
    )


def test_two_different_writes_are_compared_as_values():
    y, x = torch.zeros(2, 3), torch.ones(2, 3)
    err = _failure(_writes_by_layout, y, x, layouts="padded_last")
    (problem,) = err.report.failures[0].problems
    assert problem.startswith(
        "argument y after the call differs at [0, 0]: the contiguous baseline left 1, y as padded_last left 2"
    )
    assert problem.endswith("(both runs wrote it)")


# --- name= ---------------------------------------------------------------------------------


def test_name_titles_the_report():
    err = _failure(lambda x: _read_rows_by_width(x), torch.randn(3, 4), name="rows_by_width")
    assert str(err).startswith("rows_by_width: ")
    assert err.report.function == "rows_by_width"


def test_a_lambda_is_named_by_where_it_was_defined():
    fn = lambda x: _read_rows_by_width(x)  # noqa: E731 - the lambda is the subject
    err = _failure(fn, torch.randn(3, 4))
    assert str(err).startswith(f"<lambda at test_messages.py:{fn.__code__.co_firstlineno}>: ")


# --- reference= ------------------------------------------------------------------------------


def _wrong_when_dense(x):
    return x * (3.0 if x.is_contiguous() else 2.0)


def _wrong_when_padded(x):
    return x * (2.0 if x.is_contiguous() else 3.0)


def _wrong_everywhere_differently(x):
    return x * (3.0 if x.is_contiguous() else 4.0)


def _double(x):
    return x * 2.0


@pytest.mark.parametrize(
    "fn,agrees_with,says",
    [
        (_wrong_when_padded, "baseline", "agrees with the contiguous baseline: x as padded_last is wrong"),
        (_wrong_when_dense, "layout", "agrees with x as padded_last: the contiguous baseline is wrong"),
        (_wrong_everywhere_differently, "neither", "agrees with neither run: both are wrong"),
    ],
    ids=["layout-wrong", "baseline-wrong", "both-wrong"],
)
def test_the_reference_says_which_side_is_right(fn, agrees_with, says):
    err = _failure(fn, torch.randn(3, 4), layouts="padded_last", reference=_double)
    (failure,) = err.report.failures
    assert failure.reference_agrees_with == agrees_with and failure.confirmed
    assert says in failure.reference_detail
    assert failure.reference_detail.startswith("the reference (_double) ")
    assert f"    verdict: {failure.reference_detail}" in str(err).splitlines()


def _rounds_by_layout(x):
    # A float32 result one ulp off in one layout: a rounding, not a wrong element.
    y = x * 2.0
    return y if x.is_contiguous() else torch.nextafter(y, torch.full_like(y, math.inf))


def test_a_reference_agreeing_with_both_says_the_difference_is_rounding():
    err = _failure(_rounds_by_layout, torch.randn(3, 4), layouts="padded_last", exact=True, reference=_double)
    (failure,) = err.report.failures
    assert failure.reference_agrees_with == "both" and not failure.confirmed
    assert "not by a wrong result" in failure.reference_detail


def test_the_reference_sees_writes_a_side_effect_it_does_not_make():
    def zeroes_when_dense(x):
        if x.is_contiguous():
            x[0] = 0
        return x.sum(dim=-1)

    err = _failure(zeroes_when_dense, torch.ones(2, 3), layouts="padded_last", reference=lambda x: x.sum(dim=-1))
    (failure,) = err.report.failures
    # The reference writes nothing: the padded run, which left x alone, is the right one.
    assert failure.reference_agrees_with == "layout"


def test_a_reference_that_raises_gives_no_verdict():
    def broken(x):
        raise KeyError("no")

    err = _failure(_wrong_when_padded, torch.randn(3, 4), layouts="padded_last", reference=broken)
    (failure,) = err.report.failures
    assert failure.reference_agrees_with is None and not failure.confirmed
    assert failure.reference_detail == "the reference (test_a_reference_that_raises_gives_no_verdict.<locals>.broken) raised KeyError: 'no': no verdict"


def test_a_reference_of_another_structure_gives_no_verdict():
    err = _failure(_wrong_when_padded, torch.randn(3, 4), layouts="padded_last", reference=lambda x: None)
    (failure,) = err.report.failures
    assert failure.reference_agrees_with is None
    assert failure.reference_detail.endswith("gave a NoneType where the function gave a tensor: no verdict")


def test_the_reference_is_not_called_when_nothing_fails():
    calls = []
    assert_layout_invariant(_double, torch.randn(3, 4), reference=lambda x: calls.append(x))
    assert calls == []


def test_a_reference_in_another_dtype_is_compared_in_the_function_s_dtype():
    x = torch.randn(3, 4, dtype=torch.float16)
    err = _failure(_wrong_when_padded, x, layouts="padded_last", reference=lambda x: x.double() * 2.0)
    assert err.report.failures[0].reference_agrees_with == "baseline"


# --- the comparison: defaults, exact, and what a few-ulp failure says ---------------------


def _sequential_row_sums(x):
    total = x[:, 0].clone()
    for j in range(1, x.shape[1]):
        total = total + x[:, j]  # one float32 rounding per step
    return total


def _rounding_by_offset(x):
    # Another summation order where the storage offset is odd, as another compiled
    # specialisation of a reduction kernel sums: float32 sums an ulp or two apart.
    return _sequential_row_sums(x if x.storage_offset() % 2 == 0 else x.flip(-1))


@pytest.fixture
def rounding_input():
    # Positive values (no cancellation); with this seed the two orders differ in 3 rows by up to
    # 2 ulp (checked by the test below).
    return torch.rand(3, 16, generator=torch.Generator().manual_seed(0))


def test_the_rounding_example_differs_in_the_last_bits(rounding_input):
    forward, backward = _sequential_row_sums(rounding_input), _sequential_row_sums(rounding_input.flip(-1))
    assert not torch.equal(forward, backward)
    assert torch.allclose(forward, backward, rtol=1e-6, atol=0)


def test_rounding_differences_pass_by_default(rounding_input):
    report = assert_layout_invariant(_rounding_by_offset, rounding_input)
    assert not report.failures and "storage_offset" in {v.layout for v in report.passed}


@pytest.mark.parametrize(
    "keywords,knob",
    [
        ({"exact": True}, "The comparison was exact=True (equal bits); without exact=True"),
        ({"atol": 0.0, "rtol": 0.0}, "The comparison was exact=True (equal bits); without exact=True"),
        ({"atol": 1e-12, "rtol": 1e-12}, "The comparison was rtol=1e-12, atol=1e-12 (as given); pass larger atol=/rtol="),
    ],
    ids=["exact", "zeros", "tight"],
)
def test_a_few_ulp_failure_says_so_and_names_the_knob(rounding_input, keywords, knob):
    err = _failure(_rounding_by_offset, rounding_input, **keywords)
    assert err.report.failing_pairs == [("x", "storage_offset")]
    (problem,) = err.report.failures[0].problems
    assert "ulp of float32 apart: the size of a change of rounding" in problem
    assert knob in problem


def test_a_misplaced_element_gets_no_rounding_hint():
    err = _failure(_read_rows_by_width, torch.randn(3, 4), layouts="transposed", exact=True)
    assert "ulp" not in str(err)


def test_integer_outputs_are_exact_by_default():
    def count_positive(x):
        return (x > 0).sum(dim=-1) + (0 if x.is_contiguous() else 1)

    err = _failure(count_positive, torch.randn(3, 4), layouts="padded_last")
    assert "return value differs at [0]" in err.report.failures[0].problems[0]


def test_float16_outputs_get_float16_s_tolerance():
    def nudge(x):
        # 1e-4 relative: inside float16's rtol of 1e-3, far outside float32's.
        return x * (1.0 if x.is_contiguous() else 1.0001)

    assert not assert_layout_invariant(nudge, torch.randn(3, 4, dtype=torch.float64).half().float().half()).failures
    _failure(nudge, torch.randn(3, 4) + 10.0, layouts="padded_last")


def test_layout_error_shows_under_the_package_name():
    assert LayoutError.__module__ == "stridecheck.testing"
    err = _failure(_read_rows_by_width, torch.randn(3, 4), layouts="padded_last")
    assert isinstance(err, AssertionError)
