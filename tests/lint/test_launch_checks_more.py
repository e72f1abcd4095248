"""Width checks the launch side reads beyond ``t.size(i)`` / ``t.shape[i]`` compared with a size:
whole-shape comparisons with a list or tuple (``list(out.shape) != [n, w]``, ``tuple(t.shape[1:])
== expect`` with ``expect`` bound on every path), conjuncts of an ``and`` assert, and checks made
only where the tensor is not None. Near misses (another tensor, an ``or``, a check on one path
only) must still leave SC007 firing."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from stridecheck.lint.launches import collect
from tests.lint.test_rules_launch import lint_tree

# A row copy: the store into `o` is bounded by `n_cols` only, which every launcher below takes
# from `a`, so SC007 fires unless the launcher checks `o`'s width.
KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _rows(a_ptr, o_ptr, n_cols, stride_am, stride_om, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(a_ptr + row * stride_am + offs, mask=mask)
    tl.store(o_ptr + row * stride_om + offs, x, mask=mask)

'''

LAUNCH = "    _rows[(n,)](a, o, a.shape[1], a.stride(0), o.stride(0), BLOCK=128)\n"


def _source(body: str, params: str = "a, o") -> str:
    return KERNEL + f"\ndef launch({params}):\n" + textwrap.indent(textwrap.dedent(body), "    ") + LAUNCH


def _sc007(tmp_path: Path, body: str, params: str = "a, o") -> list[int]:
    return [f.span.line for f in lint_tree(tmp_path, {"mod.py": _source(body, params)}, preview=True)
            if f.code == "SC007"]


def _checks(body: str, params: str = "a, o") -> set[tuple[str, int | None, str]]:
    src = _source(body, params)
    (launch,) = collect(ast.parse(src), src).launches
    return {(c.tensor, c.dim, c.against) for c in launch.width_checks}


def test_the_kernel_alone_fires(tmp_path):
    # The baseline every silent case below is measured against.
    assert _sc007(tmp_path, "n, w = a.shape\n")


SILENT = {
    "list_of_shape_vs_list_literal": """
        n, w = a.shape
        if list(o.shape) != [n, w]:
            raise ValueError("o has the wrong shape")
    """,
    "allocated_or_checked_by_list": """
        n, w = a.shape
        if o is None:
            o = torch.empty((n, w), device=a.device)
        else:
            if list(o.shape) != [n, w]:
                raise ValueError("o has the wrong shape")
    """,
    "tuple_of_shape_slice_vs_name_bound_on_both_arms": """
        n, w = a.shape
        if flag:
            expect = (w,)
        else:
            expect = (w, 4)
        if tuple(o.shape[1:]) != expect:
            raise ValueError("o has the wrong shape")
    """,
    "size_call_in_assert": """
        n, w = a.shape
        assert o.size() == (n, w)
    """,
    "torch_size_in_assert": """
        n, w = a.shape
        assert torch.Size([n, w]) == o.shape
    """,
    "and_chained_assert_under_not_none": """
        n, w = a.shape
        if o is not None:
            assert n == o.shape[0] and w - 1 <= o.shape[1]
    """,
    "ge_on_the_right_under_not_none_negated": """
        n, w = a.shape
        if o is None:
            pass
        else:
            assert o.shape[1] >= w
    """,
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_sc007_silent_after_a_whole_shape_or_conjunct_check(tmp_path, name):
    params = "a, o, flag" if "flag" in SILENT[name] else "a, o"
    assert _sc007(tmp_path, SILENT[name], params) == []


FIRES = {
    "check_of_another_tensor": """
        n, w = a.shape
        if list(b.shape) != [n, w]:
            raise ValueError("b has the wrong shape")
    """,
    "or_in_assert": """
        n, w = a.shape
        assert flag or list(o.shape) == [n, w]
    """,
    "or_of_width_checks_in_assert": """
        n, w = a.shape
        assert o.shape[1] == w or flag
    """,
    "and_in_a_raising_if": """
        n, w = a.shape
        if flag and o.shape[1] != w:
            raise ValueError("o is too narrow")
    """,
    "check_on_one_path_only": """
        n, w = a.shape
        if flag:
            if list(o.shape) != [n, w]:
                raise ValueError("o has the wrong shape")
    """,
    "name_bound_to_a_tuple_on_one_path_only": """
        n, w = a.shape
        expect = (n, w) if flag else None
        if tuple(o.shape) != expect:
            raise ValueError("o has the wrong shape")
    """,
    "whole_shape_equal_in_a_raising_if": """
        n, w = a.shape
        if list(o.shape) == [n, w]:
            raise ValueError("o must not be that shape")
    """,
    "check_under_is_none": """
        n, w = a.shape
        if o is None:
            assert o.shape[1] == w
    """,
}


@pytest.mark.parametrize("name", sorted(FIRES))
def test_sc007_still_fires_on_near_misses(tmp_path, name):
    params = "a, o, b, flag"
    assert _sc007(tmp_path, FIRES[name], params) != []


def test_whole_shape_checks_each_listed_dim():
    checks = _checks("""
        n, w = a.shape
        if list(o.shape) != [n, w]:
            raise ValueError("o has the wrong shape")
    """)
    assert {("o", 0, "n"), ("o", 1, "w")} <= checks


def test_shape_slice_checks_dims_from_its_start():
    checks = _checks("""
        n, w = a.shape
        assert tuple(o.shape[1:]) == (w,)
    """)
    assert ("o", 1, "w") in checks
    assert not any(c[0] == "o" and c[1] == 0 for c in checks)


def test_negative_slice_start_counts_from_the_end():
    checks = _checks("""
        n, w = a.shape
        assert list(o.shape[-1:]) == [w]
    """)
    assert ("o", -1, "w") in checks


def test_name_bound_on_two_arms_checks_the_dims_both_agree_on():
    checks = _checks("""
        n, w = a.shape
        if flag:
            expect = (n, w)
        else:
            expect = (n, w, 4)
        if tuple(o.shape) != expect:
            raise ValueError("o has the wrong shape")
    """, "a, o, flag")
    dims = {c[1]: c[2] for c in checks if c[0] == "o"}
    assert dims == {0: "n", 1: "w"}


def test_name_bound_differently_checks_only_agreeing_positions():
    checks = _checks("""
        n, w = a.shape
        if flag:
            expect = (n, w)
        else:
            expect = (n, 2 * w)
        if tuple(o.shape) != expect:
            raise ValueError("o has the wrong shape")
    """, "a, o, flag")
    assert {c[1] for c in checks if c[0] == "o"} == {0}


def test_a_starred_element_hides_the_positions():
    checks = _checks("""
        n, w = a.shape
        assert list(o.shape) == [*lead, w]
    """, "a, o, lead")
    assert not any(c[0] == "o" for c in checks)


def test_each_conjunct_of_an_and_assert_is_a_check():
    checks = _checks("""
        n, w = a.shape
        assert n == o.shape[0] and w - 1 <= o.shape[1]
    """)
    assert {("o", 0, "n"), ("o", 1, "w - 1")} <= checks


def test_no_check_from_either_arm_of_an_or():
    checks = _checks("""
        n, w = a.shape
        assert n == o.shape[0] or w == o.shape[1]
    """)
    assert not any(c[0] == "o" for c in checks)


# ----------------------------------------------------------------------------- unit strides (SC004)

# `a` is addressed with both of its strides; the launchers below pass a literal 1 as the inner one.
STRIDED_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _strided(a_ptr, o_ptr, n_cols, stride_am, stride_an, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(a_ptr + row * stride_am + offs * stride_an, mask=mask)
    tl.store(o_ptr + row * n_cols + offs, x, mask=mask)

'''

STRIDED_LAUNCH = "    _strided[(n,)](a, o, w, {outer}, 1, BLOCK=128)\n"


def _strided_source(body: str, outer: str = "a.stride(0)") -> str:
    return (STRIDED_KERNEL + "\ndef launch(a, o, flag):\n    n, w = a.shape\n"
            + textwrap.indent(textwrap.dedent(body), "    ") + STRIDED_LAUNCH.format(outer=outer))


def _sc004(tmp_path: Path, body: str, outer: str = "a.stride(0)") -> list[str]:
    return [f.message for f in lint_tree(tmp_path, {"mod.py": _strided_source(body, outer)}, preview=True)
            if f.code == "SC004"]


def test_literal_one_as_a_stride_fires_unpinned(tmp_path):
    assert _sc004(tmp_path, "pass\n")


UNIT_SILENT = {
    "stride_call": "assert a.stride(-1) == 1\n",
    "stride_tuple_subscript": "assert a.stride()[-1] == 1\n",
    "positive_dim_in_a_raising_if": """
        if a.stride(1) != 1:
            raise ValueError("a must be unit-stride in its last dimension")
    """,
    "one_on_the_left_among_conjuncts": "assert a.ndim == 2 and 1 == a.stride()[1]\n",
}


@pytest.mark.parametrize("name", sorted(UNIT_SILENT))
def test_sc004_silent_for_a_literal_one_the_launcher_pins(tmp_path, name):
    assert _sc004(tmp_path, UNIT_SILENT[name]) == []


UNIT_FIRES = {
    "another_tensor_pinned": "assert o.stride()[-1] == 1\n",
    "or": "assert flag or a.stride()[-1] == 1\n",
    "pinned_on_one_path_only": """
        if flag:
            assert a.stride()[-1] == 1
    """,
    "pinned_to_another_value": "assert a.stride()[-1] == 2\n",
    "not_equal_asserted": "assert a.stride()[-1] != 1\n",
    "rebound_after_the_check": """
        assert a.stride()[-1] == 1
        a = a.t()
    """,
}


@pytest.mark.parametrize("name", sorted(UNIT_FIRES))
def test_sc004_still_fires_when_the_stride_is_not_pinned(tmp_path, name):
    assert _sc004(tmp_path, UNIT_FIRES[name]) != []


def test_sc004_fires_when_the_pinned_stride_goes_elsewhere(tmp_path):
    # The pinned stride is passed as the outer one: the literal 1 is not it.
    assert _sc004(tmp_path, "assert a.stride()[-1] == 1\n", outer="a.stride(-1)") != []


@pytest.mark.parametrize("form, dim", [("a.stride(-1)", -1), ("a.stride()[-1]", -1), ("a.stride()[0]", 0)])
def test_unit_strides_recorded_on_the_tensor(form, dim):
    src = _strided_source(f"assert {form} == 1\n")
    (launch,) = collect(ast.parse(src), src).launches
    assert launch.args[0].tensor == "a" and launch.args[0].unit_strides == (dim,)
    assert launch.args[1].unit_strides == ()
