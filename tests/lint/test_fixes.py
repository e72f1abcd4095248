"""Fixes of SC004 and SC005 round-trip: fix, re-lint: the fixed findings are gone and nothing new
appears; a second fix changes nothing; the fixed file parses and keeps its comments."""

from __future__ import annotations


import libcst as cst
import pytest

from stridecheck.lint import analysis
from stridecheck.lint.fix_apply import apply_fixes
from tests.annotations import REPRODUCTIONS

OPTS = analysis.AnalysisOptions()


def lint(text: str, path: str = "m.py"):
    model = analysis.build_module_model(text, path=path, module=None, options=OPTS)
    return sorted(analysis.check_tree([model], OPTS), key=lambda f: f.sort_key())


def round_trip(text: str, unsafe: bool):
    before = lint(text)
    fixed = apply_fixes(text, before, unsafe=unsafe)
    cst.parse_module(fixed.text)
    after = lint(fixed.text)
    again = apply_fixes(fixed.text, after, unsafe=unsafe)
    return before, fixed, after, again


def _keys(findings):
    return {(f.code, f.message) for f in findings}


def test_shape_product_fix_round_trip():
    text = (REPRODUCTIONS / "kv_block_stride_from_shape.py").read_text()
    before, fixed, after, again = round_trip(text, unsafe=False)
    assert [f.code for f in fixed.applied] == ["SC004"]
    assert "key_cache,\n        key_cache.stride(0),  # expect: SC004" in fixed.text  # the comment survives
    assert not any(f.code == "SC004" for f in after)
    assert _keys(after) <= _keys(before)  # nothing new
    assert again.text == fixed.text and again.applied == []


def test_swapped_strides_fix_is_unsafe_and_round_trips():
    text = (REPRODUCTIONS / "swapped_weight_strides.py").read_text()
    safe_only = apply_fixes(text, lint(text), unsafe=False)
    assert safe_only.text == text  # reordering strides changes behaviour: never applied as safe
    before, fixed, after, again = round_trip(text, unsafe=True)
    assert [f.code for f in before if f.fix] == ["SC005", "SC005"]
    assert "w.stride(0),  # expect: SC005\n        w.stride(1),  # expect: SC005" in fixed.text
    assert not any(f.code == "SC005" for f in after)
    assert _keys(after) <= _keys(before)
    assert again.text == fixed.text


SRC = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _gather_kernel(out_ptr, pool_ptr, stride_pool_slot, slot_ptr, n_inner, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + i).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_inner
    x = tl.load(pool_ptr + slot * stride_pool_slot + offs, mask=mask)
    tl.store(out_ptr + i * n_inner + offs, x, mask=mask)


def gather(pool, slots):
    n_slots, heads, dim = pool.shape
    out = torch.empty(slots.numel(), heads, dim)
    _gather_kernel[(slots.numel(),)](out, pool, {arg}, slots, heads * dim, BLOCK=64)  # keep me
    return out
'''


@pytest.mark.parametrize(
    "arg, expected",
    [
        ("heads * dim", "pool.stride(0)"),
        ("dim * heads", "pool.stride(0)"),
        ("pool.shape[-1] * pool.shape[-2]", "pool.stride(-3)"),
    ],
)
def test_shape_fix_variants(arg, expected):
    text = SRC.replace("{arg}", arg)
    before, fixed, after, again = round_trip(text, unsafe=False)
    assert f"(out, pool, {expected}, slots, heads * dim, BLOCK=64)  # keep me" in fixed.text
    assert [f.code for f in after] == [] and again.text == fixed.text


@pytest.mark.parametrize("arg", ["dim", "heads", "n_slots * heads", "7"])
def test_no_fix_when_no_single_rewrite_is_right(arg):
    text = SRC.replace("{arg}", arg)
    found = lint(text)
    assert [f.code for f in found] == ["SC004"]
    assert found[0].fix is None
    assert apply_fixes(text, found, unsafe=True).text == text


def test_no_fix_when_the_pointer_gets_an_expression():
    text = SRC.replace("{arg}", "heads * dim").replace("(out, pool,", "(out, pool[1:],")
    found = [f for f in lint(text) if f.code == "SC004"]
    assert len(found) == 1 and found[0].fix is None
