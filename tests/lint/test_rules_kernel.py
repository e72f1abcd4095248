"""SC001, SC002 and SC006 beyond the shared cases: each rule's positive forms and the normalised
forms (from ../shared/PRECISION.md) that must stay silent."""

from __future__ import annotations

import textwrap

from stridecheck.lint.analysis import AnalysisOptions, build_module_model, check_tree

HEADER = "import torch\nimport triton\nimport triton.language as tl\n"


def findings(src: str, code: str, *, preview: bool | None = False):
    src = textwrap.dedent(src)
    options = AnalysisOptions()
    m = build_module_model(src, path="k.py", module="k", options=options)
    got = [f for f in check_tree([m], options) if f.code == code]
    if preview is not None:
        got = [f for f in got if f.preview == preview]
    return [(f.span.line, src.splitlines()[f.span.line - 1][f.span.column - 1:f.span.end_column - 1]) for f in got]


def line_of(src: str, needle: str) -> int:
    return next(i for i, l in enumerate(textwrap.dedent(src).splitlines(), 1) if needle in l)


# ----------------------------------------------------------------------------- SC001

SLICE_BY_SCALAR = HEADER + '''
@triton.jit
def k(out_ptr, out_row_stride, col, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    base = out_ptr + row * out_row_stride
    dst = base + col * n_cols
    tl.store(dst + offs, 1.0, mask=offs < n_cols)
'''


def test_sc001_outer_slice_by_a_scalar_argument_points_at_the_product():
    assert findings(SLICE_BY_SCALAR, "SC001") == [(line_of(SLICE_BY_SCALAR, "dst = base"), "col * n_cols")]


def test_sc001_message_names_the_tensor_and_dimension():
    options = AnalysisOptions()
    m = build_module_model(SLICE_BY_SCALAR, path="k.py", module="k", options=options)
    (f,) = [f for f in check_tree([m], options) if f.code == "SC001"]
    assert f.message == (
        "`col * n_cols` steps `out_ptr` by the logical size `n_cols`; pass and use the tensor's "
        "stride (e.g. `out.stride(1)`)."
    )
    assert f.severity == "error" and not f.preview


def test_sc001_split_tile_stepped_by_size_and_stride():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(o_ptr, stride_om, head_size, M, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
        pid = tl.program_id(0)
        offs_m = tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, BLOCK_D)
        ptrs = o_ptr + pid * BLOCK_M * head_size + offs_m[:, None] * stride_om + offs_d[None, :]
        tl.store(ptrs, 0.0, mask=offs_d[None, :] < head_size)
    ''')
    assert findings(src, "SC001") == [(line_of(src, "ptrs = o_ptr"), "pid * BLOCK_M * head_size")]


def test_sc001_helper_finding_reported_once_for_two_callers():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def _put(ptr, ptr_stride, row, col, width, offs):
        tl.store(ptr + row * ptr_stride + col * width + offs, 0.0, mask=offs < width)


    @triton.jit
    def k1(c_ptr, c_stride, col, width, BLOCK: tl.constexpr):
        _put(c_ptr, c_stride, tl.program_id(0).to(tl.int64), col, width, tl.arange(0, BLOCK))


    @triton.jit
    def k2(c_ptr, c_stride, idx_ptr, width, BLOCK: tl.constexpr):
        col = tl.load(idx_ptr).to(tl.int64)
        _put(c_ptr, c_stride, tl.program_id(0).to(tl.int64), col, width, tl.arange(0, BLOCK))
    ''')
    assert findings(src, "SC001") == [(line_of(src, "tl.store(ptr + row"), "col * width")]


def test_sc001_silent_for_a_split_of_a_unit_stride_row():
    # `g * GROUP` tiles the same contiguous last dimension: the index comes from a program id.
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(x_ptr, x_stride, group_size, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        g = tl.program_id(1)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * x_stride + g * group_size + offs, mask=offs < group_size)
    ''')
    assert findings(src, "SC001") == []


def test_sc001_silent_when_the_launcher_makes_the_tensor_contiguous():
    src = SLICE_BY_SCALAR + '''
def launch(out, col):
    out = out.contiguous()
    k[(out.shape[0],)](out, out.stride(0), col, out.shape[1] // 4, BLOCK=64)
'''
    assert findings(src, "SC001") == []


def test_sc001_reads_a_launch_through_wrap_triton():
    # torch.library.wrap_triton(k)[grid](...) launches k (torchao's custom ops): the launcher's
    # allocation is seen; the same launcher passing a tensor of unknown layout still fires.
    allocated = SLICE_BY_SCALAR + '''
from torch.library import wrap_triton


def launch(x, col):
    out = x.new_zeros((x.shape[0], 256))
    wrap_triton(k)[(out.shape[0],)](out.view(torch.uint8), out.stride(0), col, out.shape[1] // 4, BLOCK=64)
    return out
'''
    assert findings(allocated, "SC001") == []
    unknown = allocated.replace("out = x.new_zeros((x.shape[0], 256))", "out = x")
    # A dtype view of an alias of the parameter: the analysis does not follow it to `x`, so its
    # layout is unknown and the finding is the preview tier's.
    assert [t for _, t in findings(unknown, "SC001", preview=None)] == ["col * n_cols"]
    aliased = unknown.replace("wrap_triton(k)[", "kk[").replace("    out = x\n", "    out = x\n    kk = wrap_triton(k)\n")
    assert [t for _, t in findings(aliased, "SC001", preview=None)] == ["col * n_cols"]
    assert findings(aliased.replace("    out = x\n", "    out = x.contiguous()\n"), "SC001") == []


def test_sc001_silent_when_the_size_is_built_from_a_stride():
    src = SLICE_BY_SCALAR + '''
def launch(out, col):
    k[(out.shape[0],)](out, out.stride(0), col, out.stride(1), BLOCK=64)
'''
    assert findings(src, "SC001") == []


def test_sc001_fires_when_the_launcher_passes_an_unknown_layout():
    src = SLICE_BY_SCALAR + '''
def launch(out, col):
    k[(out.shape[0],)](out, out.stride(0), col, out.shape[-1], BLOCK=64)
'''
    assert [t for _, t in findings(src, "SC001")] == ["col * n_cols"]


def test_sc001_silent_for_byte_records_rounded_indices_and_constexpr_tiling():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(q_ptr, q_stride, idx_ptr, rec_size, n, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        i = tl.load(idx_ptr + row)
        q = q_ptr.to(tl.pointer_type(tl.uint8))
        tl.store(q + row * q_stride + i * rec_size, 0)
        j = tl.load(idx_ptr + row + 1)
        tl.store(q_ptr + row * q_stride + (j // n) * n, 0)
        tl.store(q_ptr + row * q_stride + tl.program_id(1) * BLOCK + tl.arange(0, BLOCK), 0)
    ''')
    assert findings(src, "SC001") == []


def test_sc001_silent_without_a_stride_on_the_same_pointer():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(x_ptr, col_ptr, n_cols, BLOCK: tl.constexpr):
        col = tl.load(col_ptr)
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + col * n_cols + offs, 0, mask=offs < n_cols)
    ''')
    assert findings(src, "SC001") == []


# ----------------------------------------------------------------------------- SC002

UNUSED = HEADER + '''
@triton.jit
def k(out_ptr, out_stride, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * out_stride + cols, mask=cols < n_cols)
    tl.store(out_ptr + row * out_stride + cols, x, mask=cols < n_cols)
'''


def test_sc002_reported_on_the_parameter():
    assert findings(UNUSED, "SC002") == [(line_of(UNUSED, "def k("), "x_stride")]


def test_sc002_counts_helpers_rand_offsets_and_stored_values_as_used():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def _load_row(p, s, row, cols, n):
        return tl.load(p + row * s + cols, mask=cols < n)


    @triton.jit
    def k(out_ptr, out_stride, x_ptr, x_stride, seed, y_ptr, y_stride, z_ptr, stride_z, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        x = _load_row(x_ptr, x_stride, row, cols, n_cols)
        r = tl.rand(seed, row * y_stride + cols)
        tl.store(out_ptr + row * out_stride + cols, x + r, mask=cols < n_cols)
        tl.store(y_ptr + row, tl.load(y_ptr + row))
        tl.store(z_ptr + row, stride_z)
    ''')
    assert findings(src, "SC002", preview=None) == []


def test_sc002_silent_when_the_launcher_passes_a_constant_or_a_contiguous_owner():
    constant = UNUSED + '''
def launch(out, x):
    k[(x.shape[0],)](out, out.stride(0), x, 0, x.shape[1], BLOCK=64)
'''
    contiguous = UNUSED + '''
def launch(out, x):
    x = x.contiguous()
    k[(x.shape[0],)](out, out.stride(0), x, x.stride(0), x.shape[1], BLOCK=64)
'''
    assert findings(constant, "SC002", preview=None) == []
    assert findings(contiguous, "SC002", preview=None) == []


def test_sc002_last_dimension_goes_to_the_preview_tier():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(out_ptr, x_ptr, x_stride_0, x_stride_1, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * x_stride_0 + cols, mask=cols < n_cols)
        tl.store(out_ptr + row, tl.sum(x, axis=0))


    def launch(x):
        out = torch.empty(x.shape[0], device=x.device)
        k[(x.shape[0],)](out, x, x.stride(0), x.stride(-1), x.shape[1], BLOCK=64)
    ''')
    assert findings(src, "SC002", preview=False) == []
    assert findings(src, "SC002", preview=True) == [(line_of(src, "def k("), "x_stride_1")]


def test_sc002_silent_when_the_owner_is_never_addressed():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(out_ptr, x_desc, x_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        x = x_desc.load([row, 0])
        tl.store(out_ptr + row, tl.sum(x, axis=0))
    ''')
    assert findings(src, "SC002", preview=None) == []


# ----------------------------------------------------------------------------- SC006

def test_sc006_program_id_and_loaded_index_times_stride():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(x_ptr, x_stride, slot_ptr, pool_ptr, pool_stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        off = row * x_stride
        slot = tl.load(slot_ptr + row)
        x = tl.load(x_ptr + off + tl.arange(0, BLOCK))
        tl.store(pool_ptr + slot * pool_stride + tl.arange(0, BLOCK), x)
    ''')
    assert findings(src, "SC006") == [
        (line_of(src, "off = row"), "row * x_stride"),
        (line_of(src, "tl.store(pool_ptr"), "slot * pool_stride"),
    ]


def test_sc006_silent_once_promoted_and_for_constexpr_tiling():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(x_ptr, x_stride, slot_ptr, pool_ptr, pool_stride, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        slot = tl.load(slot_ptr + row).to(tl.int64)
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row.to(tl.int64) * x_stride + offs, mask=offs < n)
        tl.store(pool_ptr + slot * pool_stride + offs, x, mask=offs < n)
    ''')
    assert findings(src, "SC006") == []


def test_sc006_loop_counter_times_stride_is_not_reported():
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(x_ptr, x_stride, n_rows, BLOCK: tl.constexpr):
        for r in range(0, n_rows):
            tl.store(x_ptr + r * x_stride + tl.arange(0, BLOCK), 0)
    ''')
    assert findings(src, "SC006") == []


def test_sc002_dimension_never_indexed_goes_to_the_preview_tier():
    # A 1-D weight's row stride: the weight is addressed by its unit step only.
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(y_ptr, y_row_stride, w_ptr, w_row_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        w = tl.load(w_ptr + cols, mask=cols < n_cols)
        tl.store(y_ptr + row * y_row_stride + cols, w, mask=cols < n_cols)
    ''')
    assert findings(src, "SC002", preview=False) == []
    assert findings(src, "SC002", preview=True) == [(line_of(src, "def k("), "w_row_stride")]


def test_sc001_silent_when_every_launch_fills_the_stride_with_sizes():
    src = SLICE_BY_SCALAR + '''
def launch(out, col):
    rows, width = out.shape
    k[(rows,)](out, 4 * width, col, width, BLOCK=64)
'''
    assert findings(src, "SC001") == []


def test_sc002_tensor_addressed_wholesale_with_a_siblings_strides_is_lower_tier():
    # V read with K's strides in every dimension, none of V's own used: a shared layout by
    # design (launchers assert `k.stride() == v.stride()`). A mix of own and foreign is a slip.
    src = HEADER + textwrap.dedent('''
    @triton.jit
    def k(k_ptr, v_ptr, k_batch_stride, k_row_stride, v_batch_stride, v_row_stride, o_ptr, BLOCK: tl.constexpr):
        b = tl.program_id(0).to(tl.int64)
        r = tl.arange(0, BLOCK)
        kk = tl.load(k_ptr + b * k_batch_stride + r * k_row_stride)
        vv = tl.load(v_ptr + b * k_batch_stride + r * k_row_stride)
        tl.store(o_ptr + b, tl.sum(kk * vv, axis=0))
    ''')
    mixed = src.replace("vv = tl.load(v_ptr + b * k_batch_stride", "vv = tl.load(v_ptr + b * v_batch_stride")
    assert findings(src, "SC002", preview=False) == []
    assert sorted(t for _, t in findings(src, "SC002", preview=True)) == ["v_batch_stride", "v_row_stride"]
    assert findings(mixed, "SC002", preview=False) == [(line_of(mixed, "def k("), "v_row_stride")]
