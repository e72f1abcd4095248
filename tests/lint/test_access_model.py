"""The kernel side of the access model: discovery, parameter kinds, terms, sources, helpers."""

from __future__ import annotations

import textwrap

import pytest

from stridecheck.lint.analysis import AnalysisOptions, ParseFailure, build_module_model
from stridecheck.lint.model import IndexSource, ParamKind, StepKind


def model(src: str):
    return build_module_model(textwrap.dedent(src), path="k.py", module="k", options=AnalysisOptions())


def kernel(src: str, name: str | None = None):
    m = model(src)
    return m.kernels[0] if name is None else next(k for k in m.kernels if k.name == name)


HEADER = "import triton\nimport triton.language as tl\n"


@pytest.mark.parametrize(
    "imports, decorators",
    [
        ("import triton", "@triton.jit"),
        ("import triton", "@triton.jit(do_not_specialize=['n'])"),
        ("from triton import jit", "@jit"),
        ("from vllm.triton_utils import triton", "@triton.jit"),
        ("import triton", "@triton.autotune(configs=[], key=['n'])\n@triton.jit"),
        ("import triton", "@triton.heuristics({'B': lambda a: 4})\n@triton.jit"),
    ],
)
def test_kernel_discovery_by_any_spelling(imports, decorators):
    src = f"{imports}\n\n{decorators}\ndef k(x_ptr, n):\n    pass\n\ndef not_a_kernel(x):\n    pass\n"
    m = model(src)
    assert [k.name for k in m.kernels] == ["k"]
    assert m.kernels[0].span.line == src.splitlines().index("def k(x_ptr, n):") + 1


def test_jit_of_another_library_is_not_a_kernel():
    m = model("import numba\n\n@numba.jit\ndef f(x):\n    return x\n")
    assert m.kernels == []


def test_parse_failure_has_position():
    with pytest.raises(ParseFailure) as exc:
        model("import triton\n@triton.jit\ndef k(x_ptr\n")
    assert exc.value.line >= 3


KERNEL = HEADER + '''
@triton.jit
def k(
    # [num_reqs, num_steps, vocab]
    cache_ptr,
    cache_row_stride,
    step_ptr,
    n_vocab,
    width,
    seed,
    BLOCK: tl.constexpr,
):
    req = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    valid = offs < width
    step = tl.load(step_ptr)
    off = step * n_vocab
    p = cache_ptr + req * cache_row_stride
    tl.store(p + off + offs, tl.rand(seed, offs), mask=valid)
'''


def test_parameter_kinds_and_shape_comment():
    k = kernel(KERNEL)
    kinds = {p.name: p.kind for p in k.params}
    assert kinds == {
        "cache_ptr": ParamKind.POINTER,
        "cache_row_stride": ParamKind.STRIDE,
        "step_ptr": ParamKind.POINTER,
        "n_vocab": ParamKind.SIZE,  # a size name
        "width": ParamKind.SIZE,  # bounds a mask
        "seed": ParamKind.SCALAR,
        "BLOCK": ParamKind.CONSTEXPR,
    }
    assert k.param("cache_ptr").shape_comment == "[num_reqs, num_steps, vocab]"


def test_terms_follow_assignments_and_keep_the_products_span():
    k = kernel(KERNEL)
    store = next(a for a in k.accesses if a.op == "store")
    assert store.pointer == "cache_ptr" and store.writes
    assert store.mask_bounds == ("width",)
    by_text = {t.text: t for t in store.terms}
    assert set(by_text) == {"req * cache_row_stride", "step * n_vocab", "tl.arange(0, BLOCK)"}
    row, col, inner = by_text["req * cache_row_stride"], by_text["step * n_vocab"], by_text["tl.arange(0, BLOCK)"]
    assert row.step.kind == StepKind.STRIDE and row.index.sources == {IndexSource.PROGRAM_ID}
    assert col.step.kind == StepKind.SIZE and col.index.sources == {IndexSource.LOADED}
    assert col.index.loaded_from == ("step_ptr",)
    assert inner.step.kind == StepKind.UNIT and IndexSource.ARANGE in inner.index.sources
    # The product sits in `off = step * n_vocab`, two lines above the store: the span is there.
    lines = KERNEL.splitlines()
    assert lines[col.span.line - 1].strip() == "off = step * n_vocab"
    assert lines[col.span.line - 1][col.span.column - 1:col.span.end_column - 1] == "step * n_vocab"
    assert not row.is_int64 and not col.is_int64


def test_rand_offsets_and_stored_values_count_as_used():
    k = kernel(KERNEL)
    assert "seed" in k.used_params and "cache_row_stride" in k.used_params


def test_int64_promotion_is_tracked_through_assignments():
    k = kernel(HEADER + '''
@triton.jit
def k(x_ptr, x_stride, idx_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    i = tl.load(idx_ptr + row).to(tl.int64)
    j = tl.load(idx_ptr + row + 1)
    tl.store(x_ptr + row * x_stride + i * x_stride + j * x_stride, 0)
''')
    store = next(a for a in k.accesses if a.op == "store")
    flags = {t.text: t.is_int64 for t in store.terms}
    assert flags == {"row * x_stride": True, "i * x_stride": True, "j * x_stride": False}


def test_floor_divided_index_is_not_a_step():
    k = kernel(HEADER + '''
@triton.jit
def k(x_ptr, x_stride, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + (i // n) * n + (i % n), 0, mask=i < n * 4)
''')
    store = k.accesses[0]
    assert all(t.step.kind != StepKind.SIZE for t in store.terms)


def test_index_bounded_as_a_whole_stays_one_index():
    k = kernel(HEADER + '''
@triton.jit
def k(k_ptr, stride_k, table_ptr, page_size, seq_len, PAGE: tl.constexpr):
    page = tl.load(table_ptr + tl.program_id(0))
    tok = page * page_size + tl.arange(0, PAGE)
    x = tl.load(k_ptr + tok * stride_k, mask=tok < seq_len)
''')
    load = next(a for a in k.accesses if a.pointer == "k_ptr")
    assert len(load.terms) == 1
    assert load.terms[0].step.kind == StepKind.STRIDE
    assert {IndexSource.LOADED, IndexSource.ARANGE} <= load.terms[0].index.sources


def test_helper_inlined_with_the_callers_values():
    src = HEADER + '''
@triton.jit
def _put(ptr, stride, row, col, width, vals, offs):
    tl.store(ptr + row * stride + col * width + offs, vals)


@triton.jit
def k(cache_ptr, cache_stride, col, width, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    _put(cache_ptr, cache_stride, row, col, width, offs * 1.0, offs)
'''
    m = model(src)
    helper = next(k for k in m.kernels if k.name == "_put")
    caller = next(k for k in m.kernels if k.name == "k")
    assert helper.called_by == ("k",)
    assert [hc.callee for hc in caller.helper_calls] == ["_put"]
    assert caller.helper_calls[0].bindings["stride"] == "cache_stride"
    inlined = next(a for a in caller.accesses if a.via_helper == "_put")
    assert inlined.pointer == "cache_ptr"
    terms = {t.text: t for t in inlined.terms}
    assert terms["row * stride"].index.sources == {IndexSource.PROGRAM_ID}
    assert terms["row * stride"].step.params == ("cache_stride",)
    assert terms["col * width"].index.sources == {IndexSource.SCALAR_ARG}
    assert terms["col * width"].span.line == src.splitlines().index(
        "    tl.store(ptr + row * stride + col * width + offs, vals)") + 1
    # The helper on its own parameters: row is then a scalar argument.
    own = helper.accesses[0]
    assert own.pointer == "ptr" and own.via_helper is None


def test_block_pointer_strides_and_byte_records():
    k = kernel(HEADER + '''
@triton.jit
def k(a_ptr, stride_am, stride_ak, M, K, q_ptr, BM: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    bp = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                           offsets=(pid * BM, 0), block_shape=(BM, BK), order=(1, 0))
    a = tl.load(bp)
    q = q_ptr.to(tl.pointer_type(tl.uint8))
    tl.store(q + pid * K, 1)
''')
    bp = next(a for a in k.accesses if a.op == "block_ptr")
    assert bp.pointer == "a_ptr" and bp.descriptor_strides == ("stride_am", "stride_ak")
    assert [t.step.kind for t in bp.terms] == [StepKind.STRIDE, StepKind.STRIDE]
    rec = next(a for a in k.accesses if a.op == "store")
    assert rec.byte_record


def test_pointer_increment_in_a_loop():
    k = kernel(HEADER + '''
@triton.jit
def k(a_ptr, stride_ak, K, BK: tl.constexpr):
    offs_k = tl.arange(0, BK)
    ptrs = a_ptr + offs_k * stride_ak
    for kk in range(0, K, BK):
        a = tl.load(ptrs)
        ptrs += BK * stride_ak
''')
    loads = [a for a in k.accesses if a.op == "load"]
    assert loads and all(a.pointer == "a_ptr" for a in loads)
    assert k.param("K").kind == ParamKind.SIZE  # bounds a range
    assert k.param("stride_ak").kind == ParamKind.STRIDE


def test_stride_by_use_and_size_wins():
    k = kernel(HEADER + '''
@triton.jit
def k(x_ptr, rs, n_rows_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row >= n_rows_stride:
        return
    tl.store(x_ptr + row * rs + tl.arange(0, BLOCK), 0)
''')
    assert k.param("rs").kind == ParamKind.STRIDE  # multiplies an index, bounds nothing
    assert k.param("n_rows_stride").kind == ParamKind.SIZE  # bounds a comparison: size wins


def test_model_is_picklable_and_launches_are_filled():
    import pickle

    src = HEADER + '''
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0)


x = 1; y = 2
# a comment


def launch(x):
    k[(1,)](x, x.numel(), BLOCK=16)
'''
    m = model(src)
    again = pickle.loads(pickle.dumps(m))
    assert again.kernels[0].name == "k"
    assert [l.target for l in m.launches] == ["k"]
    # The launch's span lands on its own line and column.
    assert m.launches[0].span.line == src.splitlines().index("    k[(1,)](x, x.numel(), BLOCK=16)") + 1
    assert m.launches[0].span.column == 5


def test_non_ascii_columns_are_characters():
    src = HEADER + '''
@triton.jit
def k(x_ptr, x_stride, n):
    r = tl.program_id(0)
    tl.store(x_ptr + r * x_stride, 0)  # é
    s = "ééé"; tl.store(x_ptr + r * x_stride + 1, 0)
'''
    k = kernel(src)
    last = k.accesses[-1]
    t = next(t for t in last.terms if t.text == "r * x_stride")
    line = src.splitlines()[t.span.line - 1]
    assert line[t.span.column - 1:t.span.end_column - 1] == "r * x_stride"


def test_both_arms_of_an_if_reach_the_access():
    k = kernel(HEADER + '''
@triton.jit
def k(x_ptr, stride_x_spk, stride_x_m, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    m = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if SPLIT:
        ptrs = x_ptr + offs * stride_x_spk + m * stride_x_m
    else:
        ptrs = x_ptr + m * stride_x_m + offs
    x = tl.load(ptrs)
''')
    texts = {t.text for a in k.accesses for t in a.terms}
    assert {"offs * stride_x_spk", "m * stride_x_m", "tl.arange(0, BLOCK)"} <= texts
    assert "stride_x_spk" in k.used_params


def test_helper_call_that_python_could_not_bind_is_not_inlined():
    m = model(HEADER + '''
@triton.jit
def _put(ptr, stride, row, width):
    tl.store(ptr + row * stride, 0)


@triton.jit
def k(c_ptr, c_stride, width):
    _put(c_ptr, c_stride, tl.program_id(0))
''')
    caller = next(x for x in m.kernels if x.name == "k")
    assert not any(a.via_helper for a in caller.accesses)
    assert {"c_ptr", "c_stride"} <= caller.used_params  # handed to a call: counted as used


def test_a_multiplier_beside_sizes_is_a_size_and_loop_carried_counters_are_loops():
    k = kernel(HEADER + '''
@triton.jit
def k(buf_ptr, buf_stride, cache_steps, nheads, dim, T, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    step = 0
    for _ in range(T):
        tl.store(buf_ptr + b * cache_steps * nheads * dim + step * buf_stride + tl.arange(0, BLOCK), 0)
        step += 1
''')
    assert k.param("cache_steps").kind == ParamKind.SIZE or k.param("cache_steps").kind == ParamKind.SCALAR
    store = k.accesses[0]
    stepped = next(t for t in store.terms if t.text == "step * buf_stride")
    assert IndexSource.LOOP in stepped.index.sources


def test_term_dimension_counts_outer_terms_first():
    k = kernel(KERNEL)
    store = next(a for a in k.accesses if a.op == "store")
    dims = {t.text: store.term_dimension(t) for t in store.terms}
    assert dims == {"req * cache_row_stride": 0, "step * n_vocab": 1, "tl.arange(0, BLOCK)": 2}


def test_expression_deeper_than_the_stack_keeps_the_kernel_without_accesses():
    import ast
    import sys

    from stridecheck.lint.kernels import build_kernels

    deep = " + ".join(["x_stride"] * 700)
    src = HEADER + f"""
@triton.jit
def k(x_ptr, x_stride, n):
    tl.store(x_ptr + {deep}, 0)
"""
    tree = ast.parse(src)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)  # deeper than the stack: the walk runs out, the kernel stays
    try:
        (k,) = build_kernels(tree, src, AnalysisOptions())
    finally:
        sys.setrecursionlimit(limit)
    assert [p.name for p in k.params] == ["x_ptr", "x_stride", "n"]
    assert k.accesses == []
