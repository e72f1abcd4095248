"""Kinds the recall work of issue 16 taught the linter, and the neighbours they must leave alone.

* A product scaled by a constant (`row * stride // 2`) keeps its stride: a derived buffer (packed
  4-bit values, group scales) stepped by its source tensor's stride is that stride borrowed, and
  the source's layout, where the launch takes the stride, is the evidence for the tier. A scaled
  product with no stride in it is still one index.
* A stride of one dimension stepping an index that walks several dimensions of the tensor
  flattened (a grid of `b * s` rows) is that dimension's alone; an index rebuilt from the program
  id (`pid - pid_c * n`) walks one dimension and says nothing.
* A stride dropped only where a test (through a local name, into a helper) shows it is 1.
* A store at a column loaded from an id table, bounded by nothing.
"""

from __future__ import annotations

import textwrap

from stridecheck.lint import analysis
from stridecheck.lint.model import StepKind
from tests.lint.test_rules_launch import lint_tree

OPTS = analysis.AnalysisOptions()

HEADER = '''
import torch
import triton
import triton.language as tl
'''


def _found(tmp_path, src: str, code: str, preview: bool = False) -> list[tuple[int, bool]]:
    found = lint_tree(tmp_path, {"m.py": HEADER + textwrap.dedent(src)}, preview=preview)
    return [(f.span.line, f.preview) for f in found if f.code == code]


def _line(src: str, needle: str) -> int:
    lines = (HEADER + textwrap.dedent(src)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


# ----------------------------------------------------------------------------- scaled strides

SCALED = '''
@triton.jit
def _half_rows(out_ptr, stride_o, src_ptr, stride_s, n, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    v = tl.load(src_ptr + r * stride_s // 2 + c, mask=c < n)
    tl.store(out_ptr + r * stride_o + c, v, mask=c < n)


def half_rows(x, halves):
    out = torch.empty(x.shape[0], x.shape[1] // 2)
    _half_rows[(x.shape[0],)](out, out.stride(0), halves, {stride}, x.shape[1] // 2, BLOCK=64)
    return out
'''


def test_a_scaled_stride_of_the_source_steps_a_derived_buffer(tmp_path):
    src = SCALED.format(stride="x.stride(0)")
    assert _found(tmp_path, src, "SC005") == [(_line(src, "r * stride_s // 2"), False)]


def test_the_buffers_own_stride_scaled_is_silent(tmp_path):
    assert _found(tmp_path, SCALED.format(stride="halves.stride(0)"), "SC005", preview=True) == []


def test_a_scaled_product_without_a_stride_stays_one_index():
    text = HEADER + textwrap.dedent('''
    @triton.jit
    def _k(x_ptr, n_cols, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        c = tl.arange(0, BLOCK)
        tl.store(x_ptr + r * n_cols // 2 + c, 0.0)
    ''')
    model = analysis.build_module_model(text, path="m.py", module="m", options=OPTS)
    (acc,) = model.kernels[0].accesses
    first = acc.terms[0]
    assert first.step.kind is StepKind.UNIT and "n_cols" in first.index.text


# ----------------------------------------------------------------------------- flattened rows

FLAT = '''
@triton.jit
def _rows(x_ptr, stride_row, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    tl.store(x_ptr + row * stride_row + c, 0.0, mask=c < n)


def zero_rows(x):
    b, s, v = x.shape
    _rows[(b * s,)](x, x.stride({dim}), v, BLOCK=64)
'''


def test_the_inner_stride_of_flattened_rows_with_an_unchecked_layout(tmp_path):
    src = FLAT.format(dim=1)
    assert _found(tmp_path, src, "SC005") == [(_line(src, "x.stride(1)"), False)]


def test_the_inner_stride_of_flattened_rows_of_a_contiguous_tensor_is_silent(tmp_path):
    src = FLAT.format(dim=1).replace("    b, s, v = x.shape", "    x = x.contiguous()\n    b, s, v = x.shape")
    assert _found(tmp_path, src, "SC005", preview=True) == []


def test_the_outer_stride_of_flattened_rows_is_wrong_even_when_packed(tmp_path):
    src = FLAT.format(dim=0).replace("    b, s, v = x.shape", "    x = x.contiguous()\n    b, s, v = x.shape")
    assert _found(tmp_path, src, "SC005") == [(_line(src, "x.stride(0)"), False)]


def test_a_conditional_contiguous_copy_leaves_the_callers_layout_on_the_other_path(tmp_path):
    src = FLAT.format(dim=1).replace(
        "    b, s, v = x.shape", "    if x.stride(-1) != 1:\n        x = x.contiguous()\n    b, s, v = x.shape")
    assert _found(tmp_path, src, "SC005") == [(_line(src, "x.stride(1)"), False)]


def test_an_index_rebuilt_from_the_program_id_walks_one_dimension(tmp_path):
    src = '''
    @triton.jit
    def _rows(x_ptr, stride_b, stride_s, n_b, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        pid_s = pid // n_b
        pid_b = pid - pid_s * n_b
        c = tl.arange(0, BLOCK)
        tl.store(x_ptr + pid_b * stride_b + pid_s * stride_s + c, 0.0, mask=c < n)


    def zero_rows(x):
        b, s, v = x.shape
        _rows[(b * s,)](x, x.stride(0), x.stride(1), b, v, BLOCK=64)
    '''
    assert _found(tmp_path, src, "SC005", preview=True) == []


def test_a_conversion_on_one_arm_keeps_the_tensors_strides(tmp_path):
    # `out` is `c` or a dtype conversion of it: a stride of `c` is its own.
    src = '''
    @triton.jit
    def _fill(out_ptr, stride_cm, n, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        c = tl.arange(0, BLOCK)
        tl.store(out_ptr + r * stride_cm + c, 0.0, mask=c < n)


    def fill(c):
        stride_cm = c.stride(0)
        out = c.to(torch.float32) if c.dtype == torch.bfloat16 else c
        _fill[(c.shape[0],)](out, stride_cm, c.shape[1], BLOCK=64)
        return out
    '''
    assert _found(tmp_path, src, "SC005", preview=True) == []


# ----------------------------------------------------------------------------- loaded columns

BAN = '''
@triton.jit
def _ban(logits_ptr, stride_row, ids_ptr, stride_ids, n_ids, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, BLOCK)
    ok = j < n_ids
    tok = tl.load(ids_ptr + row * stride_ids + j, mask=ok, other=0)
    tl.store(logits_ptr + row * stride_row + tok, float("-inf"), mask=ok)


def ban(logits, ids):
    {check}
    _ban[(logits.shape[0],)](logits, logits.stride(0), ids, ids.stride(0), ids.shape[1], BLOCK=64)
'''


def test_a_store_at_unbounded_loaded_columns(tmp_path):
    src = BAN.format(check="pass")
    assert _found(tmp_path, src, "SC007") == [(_line(src, "_ban[("), False)]


def test_loaded_columns_checked_by_the_launcher_are_silent(tmp_path):
    src = BAN.format(check="assert int(ids.max()) < logits.shape[1]")
    assert _found(tmp_path, src, "SC007", preview=True) == []


# ----------------------------------------------------------------------------- a stride tested to be 1

def test_a_stride_dropped_under_a_local_test_that_it_is_one_is_silent(tmp_path):
    # The unit-step read runs only where `stride_xn == 1`, through a local test of it.
    src = '''
    @triton.jit
    def _rowmax(x_ptr, out_ptr, stride_xm, stride_xn, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        aligned = (stride_xn == 1) & (n % BLOCK == 0)
        if aligned:
            x = tl.load(x_ptr + row * stride_xm + offs)
        else:
            x = tl.load(x_ptr + row * stride_xm + offs * stride_xn, mask=offs < n, other=float("-inf"))
        tl.store(out_ptr + row, tl.max(x, axis=0))


    def rowmax(inputs):
        x = inputs.float() if inputs.dtype != torch.float32 else inputs
        out = torch.empty(x.shape[0])
        _rowmax[(x.shape[0],)](x, out, x.stride(0), x.stride(1), x.shape[1], BLOCK=64)
        return out
    '''
    assert _found(tmp_path, src, "SC005", preview=True) == []
    unguarded = src.replace("        if aligned:", "        if n > 0:")
    assert _found(tmp_path, unguarded, "SC005") == [(_line(unguarded, "tl.load(x_ptr + row * stride_xm + offs)"), False)]
