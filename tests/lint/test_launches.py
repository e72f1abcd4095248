"""Launch extraction and launcher provenance (stridecheck.lint.launches.collect)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from stridecheck.lint.launches import collect
from stridecheck.lint.model import OriginKind


def _collect(src: str, module_name: str | None = "pkg.ops", path: str | None = None):
    src = textwrap.dedent(src)
    return collect(ast.parse(src), src, module_name=module_name, path=path)


def _one(src: str):
    info = _collect(src)
    assert len(info.launches) == 1, info.launches
    return info.launches[0]


def test_positional_and_keyword_arguments_with_their_origins():
    launch = _one(
        """
        def f(x, cache):
            n_rows, n_cols = x.shape
            out = torch.empty(n_rows, n_cols)
            _k[(n_rows,)](out, x, cache.stride(0), x.stride(-1), n_cols, x.numel(), 3, BLOCK=128)
        """
    )
    assert launch.target == "_k" and launch.launcher == "f"
    assert launch.span.line == 5
    kinds = [a.kind for a in launch.args]
    assert kinds == [OriginKind.TENSOR, OriginKind.TENSOR, OriginKind.STRIDE, OriginKind.STRIDE,
                     OriginKind.SHAPE, OriginKind.NUMEL, OriginKind.LITERAL]
    out, x, s0, s1, n, numel, three = launch.args
    assert out.fresh and out.contiguous
    assert not x.fresh and not x.contiguous
    assert (s0.tensor, s0.dim) == ("cache", 0) and (s1.tensor, s1.dim) == ("x", -1)
    assert (n.tensor, n.dim, n.ndim) == ("x", 1, 2)
    assert numel.tensor == "x" and three.literal == 3
    assert launch.kwargs["BLOCK"].literal == 128
    assert [g.kind for g in launch.grid] == [OriginKind.SHAPE]
    assert launch.args[2].text == "cache.stride(0)"
    assert launch.args[2].span.line == 5 and launch.args[2].span.column > 1


def test_tuple_unpacking_with_star_gives_negative_dims():
    launch = _one(
        """
        def f(logits):
            *_, v = logits.shape
            s0, s1 = logits.stride()
            _k[(1,)](logits, s0, s1, v)
        """
    )
    _, s0, s1, v = launch.args
    assert (v.kind, v.tensor, v.dim, v.ndim) == (OriginKind.SHAPE, "logits", -1, None)
    assert (s0.kind, s0.dim, s1.dim, s1.ndim) == (OriginKind.STRIDE, 0, 1, 2)


def test_products_of_shapes_and_strides():
    launch = _one(
        """
        def f(pool, x):
            n, heads, dim = pool.shape
            k = 4
            _k[(n,)](pool, heads * dim, x.stride(1) * k, 2 * 8, heads * x)
        """
    )
    _, prod, stride_prod, lit, other = launch.args
    assert prod.kind is OriginKind.PRODUCT and [f.dim for f in prod.factors] == [1, 2]
    assert stride_prod.kind is OriginKind.STRIDE and stride_prod.tensor == "x"  # a stride whatever its name
    assert lit.kind is OriginKind.LITERAL and lit.literal == 16
    assert other.kind is OriginKind.OTHER


@pytest.mark.parametrize(
    "prelude, contiguous, fresh",
    [
        ("x = x.contiguous()", True, False),
        ("x = torch.empty(4, 4)", True, True),
        ("x = torch.zeros((4, 4), memory_format=torch.channels_last)", False, True),
        ("x = torch.empty_like(y)", False, True),  # preserves y's (unknown) layout
        ("y = y.contiguous()\n    x = torch.empty_like(y)", True, True),
        ("x = torch.empty_like(y, memory_format=torch.contiguous_format)", True, True),
        ("x = y.clone()", False, True),
        ("x = y.new_empty(3)", True, True),
        ("x = torch.empty_strided((4, 4), (8, 1))", False, True),
        ("assert x.is_contiguous()", True, False),
        ("assert x.is_contiguous() and y.is_contiguous(), 'msg'", True, False),
        ("if not x.is_contiguous():\n        raise ValueError('no')", True, False),
        ("if not x.is_contiguous():\n        x = x.contiguous()", True, False),
        ("x = x if x.is_contiguous() else x.contiguous()", True, False),
        ("if flag:\n        x = x.contiguous()", False, False),  # only on one path
        ("x = x.contiguous()\n    x = x.t()", False, False),
        ("x = x.contiguous().view(-1, 4)", True, False),
        ("x = y[:, :4]", False, False),
        ("for i in range(3):\n        x = x.contiguous()", False, False),  # the loop may not run
        ("x = x.contiguous()\n    x += 1", True, False),  # in place: same storage
    ],
)
def test_contiguity_and_freshness(prelude, contiguous, fresh):
    launch = _one(f"def f(x, y, flag):\n    {prelude}\n    _k[(1,)](x)\n")
    arg = launch.args[0]
    assert (arg.contiguous, arg.fresh) == (contiguous, fresh)


def test_width_checks_assert_and_if_raise():
    launch = _one(
        """
        def f(cache, logits):
            n, v = logits.shape
            assert cache.shape[-1] >= v, "too narrow"
            if logits.size(0) != cache.size(0):
                raise ValueError("rows")
            _k[(n,)](cache, logits, v)
        """
    )
    checks = {(c.tensor, c.dim) for c in launch.width_checks}
    assert ("cache", -1) in checks and ("cache", 0) in checks and ("logits", 1) in checks


def test_if_without_raise_is_not_a_check():
    launch = _one(
        """
        def f(cache, logits):
            n, v = logits.shape
            if cache.size(-1) < v:
                print("narrow")
            _k[(n,)](cache, logits, v)
        """
    )
    assert launch.width_checks == []


def test_check_after_the_launch_does_not_count():
    launch = _one(
        """
        def f(cache, logits):
            _k[(1,)](cache, logits, logits.shape[-1])
            assert cache.shape[-1] >= logits.shape[-1]
        """
    )
    assert launch.width_checks == []


def test_stride_guard_decorator_marks_the_launch():
    info = _collect(
        """
        @stridecheck.stride_guard(cache="R >=V")
        def f(cache):
            _k[(1,)](cache)

        @stride_guard
        def g(cache):
            _k[(1,)](cache)

        @functools.cache
        def h(cache):
            _k[(1,)](cache)
        """
    )
    assert [l.guarded for l in info.launches] == [True, True, False]


def test_run_launch_star_args_and_kwargs_resolved_from_literals():
    info = _collect(
        """
        def f(x, y):
            args = (x, x.stride(0), y)
            opts = {"BLOCK": 64}
            _k[grid](*args, **opts)
            _k.run(x, y, grid=(1,), warmup=False)
            _k[grid](*unknown)
        """
    )
    a, b, c = info.launches
    assert [o.text for o in a.args] == ["x", "x.stride(0)", "y"] and a.kwargs["BLOCK"].literal == 64
    assert not a.star_args
    assert b.target == "_k" and [o.text for o in b.args] == ["x", "y"] and b.grid_text == "(1,)"
    assert c.star_args


def test_imports_resolved_against_the_module_name():
    info = _collect(
        """
        import triton
        import pkg.kernels as K
        import os.path
        from .kernels import _k as kk
        from ..common import helpers
        from . import sibling
        try:
            from fast import _fast
        except ImportError:
            _fast = None

        def f():
            from .lazy import _lazy_kernel
        """,
        module_name="pkg.ops.launch",
    )
    im = info.imports
    assert im["K"] == "pkg.kernels" and im["os"] == "os" and im["triton"] == "triton"
    assert im["kk"] == "pkg.ops.kernels._k"
    assert im["helpers"] == "pkg.common.helpers"
    assert im["sibling"] == "pkg.ops.sibling"
    assert im["_fast"] == "fast._fast"


def test_relative_import_in_a_package_init():
    info = _collect("from .kernels import _k\n", module_name="pkg", path="src/pkg/__init__.py")
    assert info.imports["_k"] == "pkg.kernels._k"


def test_relative_import_without_module_name_keeps_dots():
    info = _collect("from .kernels import _k\n", module_name=None)
    assert info.imports["_k"] == ".kernels._k"


def test_kernel_aliases():
    info = _collect(
        """
        _k = triton.autotune(configs=[], key=["n"])(_k_impl)
        _j = triton.jit(_j_impl)
        fast = _k

        class Op:
            def __init__(self):
                self.kernel = _k

            def __call__(self, x):
                self.kernel[(1,)](x)

        def f(x):
            k = _k if x.is_cuda else _j
            k2 = _k
            k2[(1,)](x)
        """
    )
    al = info.kernel_aliases
    assert al["_k"] == "_k_impl" and al["_j"] == "_j_impl" and al["fast"] == "_k"
    assert al["self.kernel"] == "_k"
    method, fn = info.launches
    assert method.target == "self.kernel" and method.launcher == "__call__"
    assert fn.resolved_target == "_k"


def test_kernel_alias_in_a_one_line_method():
    # A method without launches is scanned for `self.kernel = _k`; a body written on the def's
    # line counts too (the libcst-based scan skipped it: one file of the corpus differed).
    info = _collect(
        """
        class Op:
            def __init__(self, k): self.kernel = _k; self.other = k

            def __call__(self, x):
                self.kernel[(1,)](x)
        """
    )
    assert info.kernel_aliases == {"self.kernel": "_k", "self.other": "k"}


def test_launch_inside_with_if_for_and_methods():
    info = _collect(
        """
        class A(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                with torch.cuda.device(x.device):
                    if x.ndim == 2:
                        _a[(1,)](x)
                    for i in range(2):
                        _b[(i,)](x)
                return _c[(1,)](x)
        """
    )
    assert [l.target for l in info.launches] == ["_a", "_b", "_c"]
    assert all(l.launcher == "forward" for l in info.launches)


def test_no_launch_text_means_no_function_walk():
    info = _collect("def f(x):\n    return x.sum()\n")
    assert info.launches == []


def test_lookup_by_string_key_is_not_a_launch():
    info = _collect("def f(fns, x):\n    return fns['a'](x)\n")
    assert info.launches == []


def test_positional_after_unresolved_star_is_not_placed():
    launch = _one("def f(x, rest):\n    _k[(1,)](x, *rest, x.stride(0), BLOCK=4)\n")
    assert [a.text for a in launch.args] == ["x"] and launch.star_args and "BLOCK" in launch.kwargs


def test_conditional_allocation_or_none_is_fresh():
    launch = _one("def f(x, flag):\n    db = torch.empty(3) if flag else None\n    _k[(1,)](db)\n")
    assert launch.args[0].fresh and launch.args[0].contiguous


def test_module_function_returning_allocations_is_an_allocation():
    info = _collect(
        """
        def alloc_output(x, contiguous=False):
            if contiguous:
                return x.new_empty(x.shape)
            return torch.empty_like(x, memory_format=torch.contiguous_format)

        def maybe_view(x):
            if x.ndim == 2:
                return torch.empty(3)
            return x[:, 1:]

        def f(x):
            dx = alloc_output(x)
            dy = maybe_view(x)
            _k[(1,)](dx, dy)
        """
    )
    dx, dy = info.launches[0].args
    assert dx.fresh and dx.contiguous
    assert not dy.fresh and not dy.contiguous


@pytest.mark.parametrize(
    "prelude, vetted",
    [
        ("if out is not None:\n        assert out.shape == x.shape\n    else:\n        out = torch.empty_like(x)", ("*",)),
        ("if out is None:\n        out = torch.empty_like(x)", ()),  # a caller's buffer on one path
        ("out = x", ("x",)),  # in place
        ("if inplace:\n        out = x\n    else:\n        out = torch.zeros_like(x)", ("x",)),
    ],
)
def test_vetted_on_every_path(prelude, vetted):
    launch = _one(f"def f(x, out, inplace):\n    {prelude}\n    _k[(1,)](out, x.shape[-1])\n")
    assert launch.args[0].vetted == vetted


def test_branches_that_both_make_a_tensor_contiguous():
    launch = _one("def f(x, c):\n    if c:\n        x = x.contiguous()\n    else:\n        x = torch.empty(3)\n    _k[(1,)](x)\n")
    assert launch.args[0].contiguous and not launch.args[0].fresh


def test_facts_flow_from_callers_in_the_module():
    info = _collect(
        """
        def _fwd(x, w):
            _k[(1,)](x, w)

        def public(x, w):
            return _fwd(x.contiguous(), w)

        def other(x, w):
            return _fwd(torch.empty(3), w)
        """
    )
    x, w = info.launches[0].args
    assert x.contiguous_in_module  # every call passes a contiguous tensor
    assert not x.contiguous  # ... but the launcher itself does not make it so
    assert not w.contiguous_in_module


def test_contiguity_decorator_and_two_levels_of_callers():
    info = _collect(
        """
        def _launch(q):
            _k[(1,)](q)

        def chunk_fwd(q):
            return _launch(q)

        class Fn(torch.autograd.Function):
            @staticmethod
            @input_guard
            def forward(ctx, q):
                return chunk_fwd(q)
        """
    )
    assert info.launches[0].args[0].contiguous_in_module


def test_saved_tensors_keep_the_forward_facts():
    info = _collect(
        """
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                x = x.contiguous()
                out = torch.empty_like(x)
                ctx.save_for_backward(x, y, out)
                return out

            @staticmethod
            def backward(ctx, dout):
                x, y, out = ctx.saved_tensors
                _k[(1,)](x, y, out)
        """
    )
    x, y, out = info.launches[0].args
    assert x.contiguous_in_module and not y.contiguous_in_module and out.contiguous_in_module


def test_a_sequence_defined_in_terms_of_itself_does_not_recurse():
    launch = _one("def f(x, M):\n    grid = (4,)\n    grid = (grid[0] * M,)\n    _k[grid](x)\n")
    assert launch.grid[0].kind.value in ("other", "literal", "product")


def test_none_on_one_arm_keeps_the_allocation_of_the_other():
    launch = _one(
        "def f(x, flag):\n    if flag:\n        g = torch.empty(3)\n    else:\n        g = None\n    _k[(1,)](g)\n"
    )
    assert launch.args[0].fresh and launch.args[0].vetted == ("*",)


def test_views_of_an_allocation_and_in_place_updates_stay_vetted():
    launch = _one(
        "def f(x, n, flag):\n    y = torch.empty_like(x)\n    y_view = y.view(-1, n)\n"
        "    g = torch.zeros(3) if flag else None\n    g += 1\n    _k[(1,)](y_view, g)\n"
    )
    y_view, g = launch.args
    assert y_view.vetted == ("*",) and g.vetted == ("*",) and g.fresh


def test_module_level_launch_has_no_launcher_and_no_guard():
    # A launch outside any function belongs to no launcher; it took the name (and the
    # @stride_guard, which silences SC007) of the last function read before it.
    info = _collect(
        """
        @stride_guard
        def helper(x):
            k[g](x)

        k[g](y)
        """
    )
    inside, outside = info.launches
    assert (inside.launcher, inside.guarded) == ("helper", True)
    assert (outside.launcher, outside.guarded) == (None, False)


def test_starred_strides_bind_their_first_element_to_dimension_zero():
    launch = _one(
        """
        def f(y, idx):
            k[(1,)](y, idx, *y.stride(), *y.shape, BLOCK=16)
        """
    )
    a = launch.args
    assert [x.kind for x in a] == [OriginKind.TENSOR, OriginKind.TENSOR, OriginKind.STRIDE]
    assert (a[2].tensor, a[2].dim, a[2].text) == ("y", 0, "y.stride(0)")
    # The rank is unknown: what follows the first stride has no known position.
    assert launch.star_args and "BLOCK" in launch.kwargs


def test_starred_shape_binds_a_size_and_an_unknown_sequence_binds_nothing():
    launch = _one(
        """
        def f(y, strides):
            k[(1,)](y, *y.shape, *strides)
        """
    )
    assert [(x.kind, x.dim) for x in launch.args] == [(OriginKind.TENSOR, None), (OriginKind.SHAPE, 0)]
