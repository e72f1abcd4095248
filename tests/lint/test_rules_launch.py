"""SC003, SC004, SC005, SC007: positive and negative forms beyond the shared cases, including
launches across modules, keyword launches, autotuned kernels and tuple-unpacked shapes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stridecheck.lint import analysis
from stridecheck.lint.engine import module_name

OPTS = analysis.AnalysisOptions()
LAUNCH_CODES = {"SC003", "SC004", "SC005", "SC007"}


def lint_tree(tmp_path: Path, files: dict[str, str], preview: bool = False, rules=LAUNCH_CODES):
    """Write ``files`` under ``tmp_path`` and lint them as one tree; findings of ``rules`` (the
    launch rules unless told)."""
    models = []
    for rel, src in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(src)
        path.write_text(text)
    for rel in files:
        path = tmp_path / rel
        models.append(
            analysis.build_module_model(path.read_text(), path=str(path), module=module_name(str(path)), options=OPTS)
        )
    found = analysis.check_tree(models, OPTS)
    return sorted(
        (f for f in found if f.code in rules and (preview or not f.preview)),
        key=lambda f: (f.path, f.span.line, f.code),
    )


def codes(findings, tmp_path=None):
    return [(Path(f.path).name, f.span.line, f.code) for f in findings]


# ----------------------------------------------------------------------------- SC003

ROWS_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _rows_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row, tl.sum(x, axis=0))
'''


def _rows_launcher(prelude: str) -> str:
    return ROWS_KERNEL + textwrap.dedent(
        f'''

        def row_sums(x):
            {prelude}
            n_rows, n_cols = x.shape
            out = torch.empty(n_rows)
            _rows_kernel[(n_rows,)](out, x, n_cols, BLOCK=triton.next_power_of_2(n_cols))
            return out
        '''
    )


@pytest.mark.parametrize("prelude", ["x = x[:, :10]", "x = x.t()", "x = x.transpose(0, 1)", "x = x[..., 1:]"])
def test_sc003_fires_when_a_launch_passes_a_strided_view(tmp_path, prelude):
    found = lint_tree(tmp_path, {"m.py": _rows_launcher(prelude)})
    assert [(f.code, f.severity, f.preview) for f in found] == [("SC003", "warning", False)]
    assert found[0].span.line == 12  # the product `row * n_cols`
    assert "row * n_cols" in found[0].message and "strided view" in found[0].message


@pytest.mark.parametrize("prelude", ["pass", "x = torch.empty_like(x)", "y = x.contiguous()"])
def test_sc003_public_entry_points_argument_unchecked_is_the_default_tier(tmp_path, prelude):
    # `row_sums(x)` is a public function: whatever its callers pass reaches the kernel (certain latent).
    found = lint_tree(tmp_path, {"m.py": _rows_launcher(prelude)})
    assert [(f.code, f.severity, f.preview) for f in found] == [("SC003", "warning", False)]
    assert "public entry point" in found[0].message


@pytest.mark.parametrize("prelude", ["pass", "x = torch.empty_like(x)", "y = x.contiguous()", "x = x[1:]"])
def test_sc003_tensor_of_unknown_layout_is_the_lower_tier(tmp_path, prelude):
    # A private launcher's argument, its callers out of sight (or a view whose origin is lost):
    # on real code mostly made contiguous further up.
    src = _rows_launcher(prelude).replace("def row_sums(", "def _row_sums(")
    if prelude.startswith("x = x[1:]"):
        src = _rows_launcher(prelude)
    assert lint_tree(tmp_path, {"m.py": src}) == []
    found = lint_tree(tmp_path, {"m.py": src}, preview=True)
    assert [(f.code, f.severity, f.preview) for f in found] == [("SC003", "info", True)]
    assert "assumes packed inner dimensions" in found[0].message


@pytest.mark.parametrize(
    "prelude",
    [
        "x = x.contiguous()",
        "x = torch.randn(4, 8)",
        "assert x.is_contiguous()",
        "if not x.is_contiguous():\n                raise ValueError('x must be contiguous')",
        "if not x.is_contiguous():\n                x = x.contiguous()",
        "x = torch.empty_like(x.contiguous())",
        "x = torch.empty_like(x, memory_format=torch.contiguous_format)",
    ],
)
def test_sc003_silent_when_every_launch_passes_a_contiguous_tensor(tmp_path, prelude):
    assert lint_tree(tmp_path, {"m.py": _rows_launcher(prelude)}) == []


def test_sc003_one_loose_launch_among_contiguous_ones_fires(tmp_path):
    src = _rows_launcher("x = x.contiguous()") + textwrap.dedent(
        '''

        def row_sums_view(x):
            out = torch.empty(x.shape[0])
            _rows_kernel[(x.shape[0],)](out, x[:, 1:], x.shape[1] - 1, BLOCK=16)
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    assert [f.code for f in found] == ["SC003"] and "x[:, 1:]" in found[0].message


def test_sc003_without_a_launch_is_preview_info_only(tmp_path):
    assert lint_tree(tmp_path, {"m.py": ROWS_KERNEL}) == []
    found = lint_tree(tmp_path, {"m.py": ROWS_KERNEL}, preview=True)
    assert [(f.code, f.severity, f.preview) for f in found] == [("SC003", "info", True)]
    assert "assumes packed inner dimensions" in found[0].message


def test_sc003_across_modules(tmp_path):
    launcher_bad = '''
    from .kernels import _rows_kernel
    import torch


    def row_sums(x):
        out = torch.empty(x.shape[0])
        _rows_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=64)
    '''
    files = {"pkg/__init__.py": "", "pkg/kernels.py": ROWS_KERNEL, "pkg/ops.py": launcher_bad.replace("out, x, x.shape[1]", "out, x[:, 1:], x.shape[1]")}
    found = lint_tree(tmp_path, files)
    assert codes(found) == [("kernels.py", 12, "SC003")]
    files["pkg/ops.py"] = launcher_bad.replace("out, x, x.shape[1]", "out, x.contiguous(), x.shape[1]")
    assert lint_tree(tmp_path, files, preview=True) == []


def test_sc003_never_for_unit_steps_or_stride_stepped_pointers(tmp_path):
    src = '''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _k(out_ptr, x_ptr, x_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_stride + cols, mask=mask)
        first = tl.load(x_ptr + row * x_stride)
        tl.store(out_ptr + row, tl.sum(x, axis=0) + first)
        tl.store(out_ptr + cols, x, mask=mask)


    def f(x):
        out = torch.empty(x.shape[1])
        _k[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=64)
    '''
    assert lint_tree(tmp_path, {"m.py": src}, preview=True) == []


# ----------------------------------------------------------------------------- SC004

GATHER_KERNEL = '''
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
'''


@pytest.mark.parametrize(
    "arg, fixed",
    [
        ("heads * dim", "pool.stride(0)"),
        ("dim", None),  # would be the stride of dimension 1, but the kernel steps the slot (dimension 0)
        ("pool.shape[1] * pool.shape[2]", None),  # dims 1 and 2 are trailing only if ndim == 3: unknown
        ("pool.size(-1) * pool.size(-2)", "pool.stride(-3)"),
        ("pool[0].numel()", None),
        ("1", None),
        ("4096", None),
    ],
)
def test_sc004_shapes_and_literals_into_a_stride(tmp_path, arg, fixed):
    src = GATHER_KERNEL + textwrap.dedent(
        f'''

        def gather(pool, slots):
            n_slots, heads, dim = pool.shape
            out = torch.empty(slots.numel(), heads, dim)
            _gather_kernel[(slots.numel(),)](out, pool, {arg}, slots, heads * dim, BLOCK=64)
            return out
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    if arg == "pool[0].numel()":
        assert found == []  # `pool[0]` is a view, not a named tensor: numel of an expression is still a count
        return
    assert [f.code for f in found] == ["SC004"]
    f = found[0]
    assert f.span.line == 20 and f.severity == "error"
    line = src.splitlines()[f.span.line - 1]
    assert line[f.span.column - 1 : f.span.end_column - 1] == arg
    if fixed is None:
        assert f.fix is None
    else:
        assert f.fix is not None and f.fix.safety == "safe"
        assert [e.replacement for e in f.fix.edits] == [fixed]


def test_sc004_silent_for_strides_zero_and_unknown_names(tmp_path):
    for arg in ("pool.stride(0)", "0", "slot_stride", "pool.stride(1) * heads"):
        src = GATHER_KERNEL + textwrap.dedent(
            f'''

            def gather(pool, slots, slot_stride):
                n_slots, heads, dim = pool.shape
                out = torch.empty(slots.numel(), heads, dim)
                _gather_kernel[(slots.numel(),)](out, pool, {arg}, slots, heads * dim, BLOCK=64)
            '''
        )
        assert lint_tree(tmp_path, {"m.py": src}) == [], arg


@pytest.mark.parametrize("prelude", ["pool = pool.contiguous()", "pool = torch.empty(8, 4, 16)"])
def test_sc004_silent_when_the_strides_tensor_is_contiguous(tmp_path, prelude):
    # A packed tensor's strides are the products of its inner sizes: the argument is exact.
    src = GATHER_KERNEL + textwrap.dedent(
        f'''

        def gather(pool, slots):
            {prelude}
            n_slots, heads, dim = pool.shape
            out = torch.empty(slots.numel(), heads, dim)
            _gather_kernel[(slots.numel(),)](out, pool, heads * dim, slots, heads * dim, BLOCK=64)
        '''
    )
    assert lint_tree(tmp_path, {"m.py": src}) == []


def test_sc004_only_for_parameters_named_as_strides(tmp_path):
    # `IL` multiplies an index, so the kernel uses it as a step, but it is a size by name and by
    # what the launch passes: stepping by it is an implicit-contiguity question, not SC004.
    src = GATHER_KERNEL.replace("stride_pool_slot", "IL") + textwrap.dedent(
        '''

        def gather(pool, slots):
            n_slots, heads, dim = pool.shape
            out = torch.empty(slots.numel(), heads, dim)
            _gather_kernel[(slots.numel(),)](out, pool, heads * dim, slots, heads * dim, BLOCK=64)
        '''
    )
    assert [f.code for f in lint_tree(tmp_path, {"m.py": src})] in ([], ["SC003"])


def test_sc004_keyword_launch_across_modules_with_module_alias(tmp_path):
    ops = '''
    import torch
    import pkg.kernels as K


    def gather(pool, slots):
        n_slots, heads, dim = pool.shape
        out = torch.empty(slots.numel(), heads, dim)
        K._gather_kernel[(slots.numel(),)](
            out_ptr=out,
            pool_ptr=pool,
            stride_pool_slot=heads * dim,
            slot_ptr=slots,
            n_inner=heads * dim,
            BLOCK=64,
        )
    '''
    found = lint_tree(tmp_path, {"pkg/__init__.py": "", "pkg/kernels.py": GATHER_KERNEL, "pkg/ops.py": ops})
    assert codes(found) == [("ops.py", 12, "SC004")]
    assert found[0].fix is not None and found[0].fix.edits[0].replacement == "pool.stride(0)"


def test_sc004_autotuned_kernel(tmp_path):
    src = GATHER_KERNEL.replace(
        "@triton.jit", '@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n_inner"])\n@triton.jit'
    ) + textwrap.dedent(
        '''

        def gather(pool, slots):
            n, h, d = pool.shape
            out = torch.empty(slots.numel(), h, d)
            _gather_kernel[(slots.numel(),)](out, pool, h * d, slots, h * d)
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    assert [f.code for f in found] == ["SC004"]


# ----------------------------------------------------------------------------- SC005

TWO_TENSOR_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _mul_kernel(out_ptr, stride_out, x_ptr, stride_x, y_ptr, stride_y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask)
    y = tl.load(y_ptr + row * {y_stride} + cols, mask=mask)
    tl.store(out_ptr + row * stride_out + cols, x * y, mask=mask)
'''


def test_sc005_in_kernel_other_pointers_stride(tmp_path):
    src = TWO_TENSOR_KERNEL.replace("{y_stride}", "stride_x") + textwrap.dedent(
        '''

        def mul(x, y):
            out = torch.empty_like(x)
            _mul_kernel[(x.shape[0],)](out, out.stride(0), x, x.stride(0), y, y.stride(0), x.shape[1], BLOCK=64)
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    assert [(f.span.line, f.code) for f in found] == [(13, "SC005")]
    assert "stride_x" in found[0].message and "y_ptr" in found[0].message


def test_sc005_in_kernel_silent_when_the_launch_feeds_the_right_tensor(tmp_path):
    # The parameter's name lies: every launch hands it y's stride.
    src = TWO_TENSOR_KERNEL.replace("{y_stride}", "stride_x").replace("y_ptr + row", "y_ptr + row") + textwrap.dedent(
        '''

        def mul(x, y):
            out = torch.empty_like(x)
            _mul_kernel[(x.shape[0],)](out, out.stride(0), y, y.stride(0), y, y.stride(0), x.shape[1], BLOCK=64)
        '''
    )
    found = [f for f in lint_tree(tmp_path, {"m.py": src}) if f.span.line == 13]
    assert found == []


def test_sc005_launch_passes_another_tensors_stride(tmp_path):
    src = TWO_TENSOR_KERNEL.replace("{y_stride}", "stride_y") + textwrap.dedent(
        '''

        def mul(x, y):
            out = torch.empty_like(x)
            _mul_kernel[(x.shape[0],)](out, out.stride(0), x, x.stride(0), y, x.stride(0), x.shape[1], BLOCK=64)
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    assert [(f.span.line, f.code) for f in found] == [(19, "SC005")]
    line = src.splitlines()[18]
    f = found[0]
    assert line[f.span.column - 1 : f.span.end_column - 1] == "x.stride(0)"
    assert f.span.column > line.index("y, ")  # the second x.stride(0), the one for y


@pytest.mark.parametrize(
    "prelude, args",
    [
        ("x2 = x.view(-1, x.shape[-1])", "x2, x.stride(0)"),  # a view of the same storage
        ("x = x.contiguous(); y = y.contiguous()", "y, x.stride(0)"),  # both packed, same shape
        ("pass", "y, y.stride(0)"),
    ],
)
def test_sc005_launch_silent_forms(tmp_path, prelude, args):
    src = TWO_TENSOR_KERNEL.replace("{y_stride}", "stride_y") + textwrap.dedent(
        f'''

        def mul(x, y):
            {prelude}
            out = torch.empty_like(x)
            _mul_kernel[(x.shape[0],)](out, out.stride(0), x, x.stride(0), {args}, x.shape[1], BLOCK=64)
        '''
    )
    assert lint_tree(tmp_path, {"m.py": src}) == []


MATVEC = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _matvec_kernel(y_ptr, a_ptr, x_ptr, n_rows, n_cols, stride_am, stride_ak, BLOCK: tl.constexpr):
    m = tl.program_id(0).to(tl.int64)
    k = tl.arange(0, BLOCK)
    mask = k < n_cols
    a = tl.load(a_ptr + m * stride_am + k * stride_ak, mask=mask, other=0.0)
    x = tl.load(x_ptr + k, mask=mask, other=0.0)
    tl.store(y_ptr + m, tl.sum(a * x, axis=0))
'''


def test_sc005_swapped_strides_with_tuple_unpacked_shapes_and_keywords(tmp_path):
    src = MATVEC + textwrap.dedent(
        '''

        def matvec(a, x):
            rows, cols = a.shape
            y = torch.empty(rows)
            x = x.contiguous()
            _matvec_kernel[(rows,)](y, a, x, rows, cols, stride_ak=a.stride(0), stride_am=a.stride(1), BLOCK=64)
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    assert [f.code for f in found] == ["SC005", "SC005"]
    fix = found[0].fix
    assert fix is not None and fix.safety == "unsafe" and found[1].fix == fix
    assert sorted(e.replacement for e in fix.edits) == ["a.stride(0)", "a.stride(1)"]


def test_sc005_transposed_on_purpose_is_silent(tmp_path):
    # The launcher reads `a` transposed: the shapes it shows are of a.T, so nothing contradicts it.
    src = MATVEC + textwrap.dedent(
        '''

        def matvec_t(a, x):
            cols, rows = a.shape
            y = torch.empty(rows)
            x = x.contiguous()
            _matvec_kernel[(rows,)](y, a, x, rows, cols, a.stride(1), a.stride(0), BLOCK=64)
        '''
    )
    assert lint_tree(tmp_path, {"m.py": src}) == []


def test_sc005_dimension_unknown_without_shapes_is_silent(tmp_path):
    src = MATVEC + textwrap.dedent(
        '''

        def matvec(a, x, rows, cols):
            y = torch.empty(rows)
            _matvec_kernel[(rows,)](y, a, x.contiguous(), rows, cols, a.stride(1), a.stride(0), BLOCK=64)
        '''
    )
    assert lint_tree(tmp_path, {"m.py": src}) == []


# ----------------------------------------------------------------------------- SC007

COPY_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(cache_ptr, cache_stride, logits_ptr, logits_stride, n_vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    valid = offs < n_vocab
    vals = tl.load(logits_ptr + row * logits_stride + offs, mask=valid)
    tl.store(cache_ptr + row * cache_stride + offs, vals, mask=valid)
'''


def _copy_launcher(prelude: str, decorator: str = "", size: str = "n_vocab") -> str:
    return COPY_KERNEL + textwrap.dedent(
        f'''

        {decorator}
        def copy_into(cache, logits):
            n_rows, n_vocab = logits.shape
            {prelude}
            _copy_kernel[(n_rows,)](
                cache, cache.stride(0), logits, logits.stride(0), {size}, BLOCK=triton.next_power_of_2(n_vocab)
            )
        '''
    )


def test_sc007_fires_at_the_launch_line(tmp_path):
    src = _copy_launcher("pass")
    found = lint_tree(tmp_path, {"m.py": src})
    assert [f.code for f in found] == ["SC007"]
    assert src.splitlines()[found[0].span.line - 1].strip().startswith("_copy_kernel[(n_rows,)](")
    assert "cache" in found[0].message and "n_vocab" in found[0].message


@pytest.mark.parametrize(
    "prelude, decorator, size",
    [
        ("assert cache.shape[-1] >= n_vocab", "", "n_vocab"),
        ("assert cache.size(1) == logits.size(1), 'widths differ'", "", "n_vocab"),
        ("if cache.shape[1] < n_vocab: raise ValueError('narrow')", "", "n_vocab"),
        ("cache = torch.empty(n_rows, n_vocab)", "", "n_vocab"),
        ("cache = logits.new_zeros(n_rows, n_vocab)", "", "n_vocab"),
        ("pass", '@stride_guard(cache="R >=V", logits="R V")', "n_vocab"),
        ("pass", "", "cache.shape[1]"),  # bounded by the written tensor's own width
    ],
)
def test_sc007_silent_forms(tmp_path, prelude, decorator, size):
    src = _copy_launcher(prelude, decorator, size)
    assert lint_tree(tmp_path, {"m.py": src}) == []


def test_sc007_optional_buffer_checked_or_allocated_on_every_path(tmp_path):
    checked = "if cache is not None:\n        assert cache.shape == logits.shape\n    else:\n        cache = torch.empty_like(logits)"
    unchecked = "if cache is None:\n        cache = torch.empty_like(logits)"
    for prelude, expected in ((checked, []), (unchecked, ["SC007"])):
        src = _copy_launcher("PRELUDE").replace("PRELUDE", prelude)
        assert [f.code for f in lint_tree(tmp_path, {"m.py": src})] == expected, prelude


@pytest.mark.parametrize(
    "prelude, expected",
    [
        # views of an allocation made in the launcher cover what the allocation covers
        ("cache = logits.new_empty(n_rows, n_vocab).as_strided((n_rows, n_vocab), (1, n_rows))", []),
        ("cache = torch.empty(n_rows * n_vocab).view(n_rows, n_vocab)", []),
        ("cache = torch.empty_like(logits)\n    cache = cache.as_strided(cache.size(), (1, n_rows))", []),
        ("cache = torch.empty_like(logits)\n    cache = cache.as_strided((n_rows, 8), (1, n_rows))", ["SC007"]),
        ("cache = cache.as_strided(cache.shape, (1, n_rows))", ["SC007"]),  # nothing allocated
        # both arms of a conditional expression
        ("cache = torch.empty_like(logits) if cache is None else logits", []),
        ("cache = None if n_rows else torch.empty(n_rows, n_vocab)", []),
        ("cache = torch.empty_like(logits) if n_rows else cache", ["SC007"]),
    ],
)
def test_sc007_allocated_views_and_conditional_buffers(tmp_path, prelude, expected):
    src = _copy_launcher("PRELUDE").replace("PRELUDE", prelude)
    assert [f.code for f in lint_tree(tmp_path, {"m.py": src})] == expected, prelude


def test_sc007_in_place_launch_is_silent(tmp_path):
    src = _copy_launcher("cache = logits")
    assert lint_tree(tmp_path, {"m.py": src}) == []


def test_sc007_across_modules(tmp_path):
    ops = '''
    from pkg.kernels import _copy_kernel


    def copy_into(cache, logits):
        n, v = logits.shape
        _copy_kernel[(n,)](cache, cache.stride(0), logits, logits.stride(0), v, BLOCK=1024)
    '''
    found = lint_tree(tmp_path, {"pkg/__init__.py": "", "pkg/kernels.py": COPY_KERNEL, "pkg/ops.py": ops})
    assert codes(found) == [("ops.py", 7, "SC007")]


def test_sc003_silent_when_every_caller_in_the_module_passes_a_contiguous_tensor(tmp_path):
    src = ROWS_KERNEL + textwrap.dedent(
        '''

        def _row_sums(x):
            out = torch.empty(x.shape[0])
            _rows_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=64)
            return out


        class RowSums(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return _row_sums(x.contiguous())
        '''
    )
    assert lint_tree(tmp_path, {"m.py": src}, preview=True) == []
    loose = src.replace("_row_sums(x.contiguous())", "_row_sums(x)")
    assert [f.code for f in lint_tree(tmp_path, {"m.py": loose}, preview=True)] == ["SC003"]


DESC_KERNEL = '''
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _copy_desc_kernel(x_desc, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = x_desc.load([row, 0])
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + cols, x.reshape([BLOCK]), mask=cols < n_cols)
'''


@pytest.mark.parametrize(
    "prelude, strides, expected",
    [
        ("pass", "[n_cols, 1]", ["SC004"]),
        ("pass", "[x.stride(0), 1]", []),
        ("x = x.contiguous()", "[n_cols, 1]", []),
    ],
)
def test_sc004_host_side_tensor_descriptor(tmp_path, prelude, strides, expected):
    src = DESC_KERNEL + textwrap.dedent(
        f'''

        def copy_rows(x):
            {prelude}
            n_rows, n_cols = x.shape
            desc = TensorDescriptor(x, [n_rows, n_cols], {strides}, [1, 64])
            out = torch.empty(n_cols)
            _copy_desc_kernel[(n_rows,)](desc, out, n_cols, BLOCK=64)
        '''
    )
    found = lint_tree(tmp_path, {"m.py": src})
    assert [f.code for f in found] == expected
    if expected:
        line = src.splitlines()[found[0].span.line - 1]
        assert line[found[0].span.column - 1 : found[0].span.end_column - 1] == "n_cols"


def test_sc004_unpaired_stride_silent_when_every_pointer_it_steps_is_contiguous(tmp_path):
    src = '''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _pool_bwd(grad_ptr, idx_ptr, out_stride_h, n, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        g = tl.load(grad_ptr + row * out_stride_h + cols, mask=cols < n)
        tl.store(idx_ptr + row * out_stride_h + cols, g, mask=cols < n)


    def pool_bwd(grad, idx):
        {prelude}
        h, w = grad.shape
        _pool_bwd[(h,)](grad, idx, w, w, BLOCK=64)
    '''
    loose = lint_tree(tmp_path, {"m.py": src.replace("{prelude}", "pass")})
    assert "SC004" in [f.code for f in loose]
    packed = src.replace("{prelude}", "grad = grad.contiguous(); idx = idx.contiguous()")
    assert [f.code for f in lint_tree(tmp_path, {"m.py": packed}) if f.code == "SC004"] == []


def test_allocation_through_a_function_of_another_module(tmp_path):
    alloc = '''
    import torch


    def alloc_output(x, contiguous=False):
        if contiguous:
            return x.new_empty(x.shape)
        return torch.empty_like(x, memory_format=torch.contiguous_format)


    def not_an_allocator(x):
        return x[:, :4]
    '''
    ops = '''
    import torch
    from .alloc import alloc_output, not_an_allocator
    from .kernels import _gather_kernel


    def gather(pool, slots):
        n_slots, heads, dim = pool.shape
        pool = {make}(pool)
        _gather_kernel[(slots.numel(),)](torch.empty(3), pool, heads * dim, slots, heads * dim, BLOCK=64)
    '''
    files = {"pkg/__init__.py": "", "pkg/kernels.py": GATHER_KERNEL, "pkg/alloc.py": alloc}
    files["pkg/ops.py"] = ops.replace("{make}", "alloc_output")
    assert [f.code for f in lint_tree(tmp_path, files) if f.code == "SC004"] == []
    files["pkg/ops.py"] = ops.replace("{make}", "not_an_allocator")
    # What `not_an_allocator` returns is not followed: a layout nothing shows, the preview tier's.
    assert [f.code for f in lint_tree(tmp_path, files) if f.code == "SC004"] == []
    assert [f.code for f in lint_tree(tmp_path, files, preview=True) if f.code == "SC004"] == ["SC004"]


def test_sc005_pointer_table_from_an_unknown_call_is_not_judged(tmp_path):
    src = TWO_TENSOR_KERNEL.replace("{y_stride}", "stride_y") + textwrap.dedent(
        '''

        def mul(x, ys):
            y = _pointer_table(ys)
            out = torch.empty_like(x)
            _mul_kernel[(x.shape[0],)](out, out.stride(0), x, x.stride(0), y, ys[0].stride(0), x.shape[1], BLOCK=64)
        '''
    )
    assert [f.code for f in lint_tree(tmp_path, {"m.py": src}) if f.code == "SC005"] == []


@pytest.mark.parametrize(
    "caller, tier",
    [
        # every caller allocates the written tensor from the extents of the bound's tensor
        ("cache = torch.empty_like(logits)", "preview"),
        ("n, v = logits.shape\n    cache = torch.zeros(n, v)", "preview"),
        ("cache = logits.new_empty(logits.size(0), logits.size(1))", "preview"),
        # from another tensor's extents: the caller ties the two, the width is its contract
        ("cache = torch.zeros(4, other.shape[1])", "preview"),
        # from constants: whether it is wide enough is exactly what the launcher never checks
        ("cache = torch.zeros(4, 301)", "default"),
        ("n_rows, width = 4, 301\n    cache = torch.zeros(n_rows, width)", "default"),
        # from a parameter: sized by the caller's own caller, out of view
        ("cache = torch.zeros(rows, 301)", "preview"),
        # a caller that makes a copy passes on its own argument's width
        ("cache = other.contiguous()", "default"),
        # a view of its own argument: how wide that is, nothing in view shows
        ("cache = other[:, :8]", "preview"),
    ],
)
def test_sc007_tier_follows_how_the_callers_size_the_written_tensor(tmp_path, caller, tier):
    launcher = _copy_launcher("pass").replace("def copy_into(", "def _copy_into(")
    user = f"\n\ndef step(logits, other, rows=4):\n    {caller}\n    _copy_into(cache, logits)\n    return cache\n"
    found = [f for f in lint_tree(tmp_path, {"m.py": launcher + user}, preview=True) if f.code == "SC007"]
    assert len(found) == 1, found
    assert found[0].preview == (tier == "preview"), found[0].message


@pytest.mark.parametrize(
    "call, tier",
    [
        ("_copy_into(logits)", "preview"),  # every caller leaves `cache` to None: the launcher allocates it
        ("_copy_into(logits, cache=torch.zeros(4, 301))", "default"),  # a caller's own width
    ],
)
def test_sc007_an_optional_output_that_callers_leave_to_its_default(tmp_path, call, tier):
    launcher = _copy_launcher("PRELUDE").replace("PRELUDE", "if cache is None:\n        cache = torch.empty_like(logits)")
    launcher = launcher.replace("def copy_into(cache, logits):", "def _copy_into(logits, cache=None):")
    user = f"\n\ndef step(logits):\n    return {call}\n"
    found = [f for f in lint_tree(tmp_path, {"m.py": launcher + user}, preview=True) if f.code == "SC007"]
    assert len(found) == 1, found
    assert found[0].preview == (tier == "preview"), found[0].message


def test_sc005_a_mask_on_one_index_does_not_bound_another(tmp_path):
    # `s_idx < S` bounds the row index; the column index walks `tl.arange(0, D)` and is stepped by
    # the column stride, which the launch passes rightly (a Hadamard-style kernel).
    src = '''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _cols_kernel(x_ptr, out_ptr, stride_s, stride_d, S, D: tl.constexpr, CHUNK: tl.constexpr):
        s_start = tl.program_id(0) * CHUNK
        d_idx = tl.arange(0, D)
        for s_offset in range(CHUNK):
            s_idx = s_start + s_offset
            s_mask = s_idx < S
            x = tl.load(x_ptr + s_idx * stride_s + d_idx * stride_d, mask=s_mask, other=0.0)
            tl.store(out_ptr + s_idx * D + d_idx, x, mask=s_mask)


    def cols(x):
        out = torch.empty(x.shape[0], x.shape[1], device=x.device)
        _cols_kernel[(triton.cdiv(x.shape[0], 4),)](x, out, x.stride(0), x.stride(1), x.shape[0], D=x.shape[1], CHUNK=4)
        return out
    '''
    assert [f.code for f in lint_tree(tmp_path, {"m.py": src}) if f.code == "SC005"] == []
    # The mask bounds the column index itself: the column stride must be dimension 1's.
    masked = src.replace("mask=s_mask, other=0.0)", "mask=d_idx < n_cols, other=0.0)").replace(
        "S, D: tl.constexpr", "S, n_cols, D: tl.constexpr").replace("x.shape[0], D=", "x.shape[0], x.shape[1], D=")
    assert [f.code for f in lint_tree(tmp_path, {"m.py": masked}) if f.code == "SC005"] == []
    swapped = masked.replace("x.stride(0), x.stride(1)", "x.stride(1), x.stride(0)")
    assert "SC005" in [f.code for f in lint_tree(tmp_path, {"m.py": swapped})]


@pytest.mark.parametrize(
    "split, reported",
    [
        ("x, y = xy.chunk(2, dim=-1)", False),  # column halves: the innermost stride stays 1
        ("x, y = xy.split(n, dim=-1)", False),
        ("x, y = xy.view(xy.shape[0], n, 2).unbind(-1)", True),  # interleaved: innermost stride 2
    ],
)
def test_sc003_implicit_unit_step_on_parts_of_a_tensor(tmp_path, split, reported):
    src = f'''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _mul_kernel(x_ptr, y_ptr, out_ptr, stride_x, stride_y, n, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n)
        y = tl.load(y_ptr + row * stride_y + cols, mask=cols < n)
        tl.store(out_ptr + row * n + cols, x * y, mask=cols < n)


    def mul(xy):
        n = xy.shape[-1] // 2
        {split}
        out = torch.empty(xy.shape[0], n, device=xy.device)
        _mul_kernel[(xy.shape[0],)](x, y, out, x.stride(0), y.stride(0), n, BLOCK=triton.next_power_of_2(n))
        return out
    '''
    found = [f for f in lint_tree(tmp_path, {"m.py": src}, preview=True) if f.code == "SC003"]
    assert bool(found) == reported, [f.message for f in found]
    if reported:
        assert "implicit stride of 1" in found[0].message and not found[0].preview


def test_sc003_implicit_unit_step_on_a_transposed_allocation(tmp_path):
    # Column-major scales made in the launcher: strides (1, m). The kernel's unit step walks the
    # rows, whose stride is 1; the columns are stepped by the passed stride.
    src = '''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _scales_kernel(s_ptr, stride_col, m, BLOCK: tl.constexpr):
        g = tl.program_id(0)
        rows = tl.arange(0, BLOCK)
        tl.store(s_ptr + g * stride_col + rows, tl.zeros([BLOCK], tl.float32), mask=rows < m)


    def scales(m, groups):
        s = torch.empty(groups, m).transpose(0, 1)
        _scales_kernel[(groups,)](s, s.stride(1), m, BLOCK=triton.next_power_of_2(m))
        return s
    '''
    assert [f for f in lint_tree(tmp_path, {"m.py": src}, preview=True) if f.code == "SC003"] == []


@pytest.mark.parametrize(
    "pointer_arg, reported",
    [
        ("x.storage.data", False),  # a wrapper's strides are those of the tensor it holds
        ("y.storage.data", True),  # another object's tensor
    ],
)
def test_sc005_a_wrapper_and_the_tensor_it_holds(tmp_path, pointer_arg, reported):
    src = f'''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _sum_kernel(out_ptr, b_ptr, stride_bm, stride_bn, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        b = tl.load(b_ptr + row * stride_bm + cols * stride_bn, mask=cols < n)
        tl.store(out_ptr + row, tl.sum(b, axis=0))


    def row_sums(x, y):
        out = torch.empty(x.shape[0], device=x.device)
        _sum_kernel[(x.shape[0],)](out, {pointer_arg}, x.stride(0), x.stride(1), x.shape[1], BLOCK=128)
        return out
    '''
    found = [f for f in lint_tree(tmp_path, {"m.py": src}, preview=True) if f.code == "SC005"]
    assert bool(found) == reported, [f.message for f in found]
