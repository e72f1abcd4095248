"""A parameter's role comes from its use and its launches, not from its name or ``tl.constexpr``
(issue 16): pointers by the addresses they start, sizes by the masks they bound and the shapes
launches bind them to, strides by the strides launches pass; and launch expressions read as
Python evaluates them."""

from __future__ import annotations

import pytest

from stridecheck.lint.analysis import AnalysisOptions, build_module_model
from stridecheck.lint.model import ParamKind

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"


def kinds(src: str) -> dict[str, str]:
    m = build_module_model(HEADER + src, path="k.py", module="k", options=AnalysisOptions())
    return {p.name: p.kind.value for p in m.kernels[0].params}


def line_of(src: str, needle: str) -> int:
    import textwrap

    return next(i for i, line in enumerate(textwrap.dedent(src).splitlines(), 1) if needle in line)


def where(findings, code=None):
    return sorted((f.path, f.span.line, f.code) for f in findings if code is None or f.code == code)


@pytest.mark.parametrize("names", [("Q", "K", "V", "Out"), ("A", "B", "C", "D"), ("x_ptr", "k_ptr", "v", "o")])
def test_pointers_by_the_addresses_they_start_whatever_their_names(names):
    a, b, c, d = names
    src = f"""
@triton.jit
def k({a}, {b}, {c}, {d}, N, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    row = tl.program_id(0).to(tl.int64)
    x = tl.load({a} + row * stride + offs, mask=offs < N)
    y = tl.load({b} + row * stride + offs, mask=offs < N)
    z = tl.load({c} + row * stride + offs, mask=offs < N)
    tl.store({d} + row * stride + offs, x + y + z, mask=offs < N)
"""
    got = kinds(src)
    assert [got[n] for n in names] == ["pointer"] * 4
    assert got["N"] == "size" and got["stride"] == "stride" and got["BLOCK"] == "constexpr"


def test_a_pointer_advanced_in_place_in_a_loop_is_a_pointer_not_a_counter():
    got = kinds("""
@triton.jit
def k(K, V, N, stride_kn, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for _ in range(0, N, BLOCK):
        acc += tl.load(K + offs)
        K += BLOCK * stride_kn
    tl.store(V + offs, acc)
""")
    assert got["K"] == "pointer" and got["V"] == "pointer"


@pytest.mark.parametrize(
    "use, expected",
    [
        ("mask = offs < NUM_COLUMNS", "size"),  # bounds a mask
        ("offs2 = tl.arange(0, NUM_COLUMNS)", "constexpr"),  # the extent of an arange: a tile
    ],
)
def test_a_constexpr_takes_the_role_its_use_shows(use, expected):
    got = kinds(f"""
@triton.jit
def k(x_ptr, idx_ptr, NUM_COLUMNS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    {use}
    src = tl.load(idx_ptr + tl.program_id(0))
    tl.store(x_ptr + src * NUM_COLUMNS + offs, 1.0)
""")
    assert got["NUM_COLUMNS"] == expected


def test_a_constexpr_named_and_used_as_a_stride_is_a_stride():
    got = kinds("""
@triton.jit
def k(x_ptr, start_ptr, stride_x_token: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.load(start_ptr + tl.program_id(0))
    tl.store(x_ptr + start * stride_x_token + tl.arange(0, BLOCK), 1.0)
""")
    assert got["stride_x_token"] == "stride"


def test_launches_decide_what_the_kernel_leaves_open(lint_files):
    # `width` multiplies a loaded column and bounds nothing: only the launch says it is a shape
    # (a size beside a stride: SC001); fed `.stride(1)` it is a stride and nothing is wrong.
    kernel = HEADER + """
@triton.jit
def _k(cache_ptr, cache_stride_0, col_ptr, width, BLOCK: tl.constexpr):
    req = tl.program_id(0).to(tl.int64)
    col = tl.load(col_ptr).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    tl.store(cache_ptr + req * cache_stride_0 + col * width + offs, 1.0)
"""
    as_shape = kernel + """
def store(cache, col, logits):
    _k[(cache.shape[0],)](cache, cache.stride(0), col, logits.shape[1], BLOCK=128)
"""
    as_stride = kernel + """
def store(cache, col, logits):
    _k[(cache.shape[0],)](cache, cache.stride(0), col, cache.stride(1), BLOCK=128)
"""
    assert where(lint_files({"a/m.py": as_shape}), "SC001") == [("a/m.py", line_of(as_shape, "col * width"), "SC001")]
    assert where(lint_files({"b/m.py": as_stride}), "SC001") == []


def test_a_parameter_bound_to_a_tensor_is_a_pointer_for_the_launch_rules(lint_files):
    # `A`, `B`: single letters that the size names would have taken; the kernel's addresses are
    # in helpers out of view. Bound to tensors at the launch, their strides pair with them, and
    # a positional stride of `b` landing in `stride_ak` is another tensor's stride (SC005).
    src = HEADER + """
@triton.jit
def _mm(A, B, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, BLOCK: tl.constexpr):
    pass


def mm(a: torch.Tensor, b: torch.Tensor):
    M, K = a.shape
    _, N = b.shape
    _mm[(1,)](a, b, M, N, K, a.stride(0), b.stride(1), b.stride(0), b.stride(1), BLOCK=16)
"""
    got = lint_files({"m.py": src})
    assert ("m.py", line_of(src, "_mm[(1,)]"), "SC005") in where(got)


@pytest.mark.parametrize(
    "arg, fires",
    [
        ("1 if grad.numel() > 1 else 0", True),  # a literal on the path that matters
        ("0 if grad.numel() == 1 else 0", False),  # 0 broadcasts: never a wrong stride
        ("grad.stride(0)", False),
    ],
)
def test_a_conditional_literal_into_a_stride_is_a_literal(lint_files, arg, fires):
    src = HEADER + f"""
@triton.jit
def _mul(x_ptr, x_stride, g_ptr, g_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    g = tl.load(g_ptr + row * g_stride)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride + offs, mask=offs < n_cols)
    tl.store(x_ptr + row * x_stride + offs, x * g, mask=offs < n_cols)


def scale_rows(x, grad):
    _mul[(x.shape[0],)](x, x.stride(0), grad, {arg}, x.shape[1], BLOCK=128)
"""
    assert (("m.py", line_of(src, "_mul[("), "SC004") in where(lint_files({"m.py": src}))) is fires


def test_shape_products_through_an_alias_of_the_shape(lint_files):
    src = HEADER + """
@triton.jit
def _copy(src_ptr, dst_ptr, PAGE_STRIDE: tl.constexpr, PAGE: tl.constexpr):
    page = tl.load(dst_ptr).to(tl.int64)
    vals = tl.load(src_ptr + page * PAGE_STRIDE + tl.arange(0, PAGE))
    tl.store(dst_ptr + page * PAGE_STRIDE + tl.arange(0, PAGE), vals)


def copy_pages(kv_cache, out):
    s = kv_cache.shape
    page_stride = s[1] * s[2] * s[3]
    _copy[(1,)](kv_cache, out, page_stride, PAGE=s[2] * s[3])
"""
    assert ("m.py", line_of(src, "_copy[(1,)]"), "SC004") in where(lint_files({"m.py": src}))


RATIO_CHECK = """
@triton.jit
def k(Y, Idx, sy_k, sy_m, M, BLOCK_M: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.device_assert(sy_k // sy_m == tl.cdiv(sy_k, sy_m))
    tl.store(Y + tl.load(Idx) * sy_k + offs_m * sy_m, 0.0, mask=offs_m < M)
"""


def test_a_cdiv_inside_an_assertion_gives_no_size_role():
    # `tl.cdiv(sy_k, sy_m)` in a device_assert checks a ratio of strides; sy_k multiplies an index
    # beside another stride, so it is a stride (python `assert` and `tl.static_assert` alike).
    assert kinds(RATIO_CHECK)["sy_k"] == "stride"
    py = RATIO_CHECK.replace("    tl.device_assert(sy_k // sy_m == tl.cdiv(sy_k, sy_m))\n",
                             "    assert sy_k // sy_m == tl.cdiv(sy_k, sy_m)\n")
    assert kinds(py)["sy_k"] == "stride"


def test_a_cdiv_that_counts_iterations_still_makes_a_size():
    src = RATIO_CHECK.replace("    tl.device_assert(sy_k // sy_m == tl.cdiv(sy_k, sy_m))\n",
                              "    for i in range(tl.cdiv(sy_k, BLOCK_M)):\n        pass\n")
    assert kinds(src)["sy_k"] == "size"
