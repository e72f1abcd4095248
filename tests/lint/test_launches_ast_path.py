"""Modules without a launch or an allocating function skip libcst: their imports and kernel
aliases come from ``ast`` (``launches.module_level_from_ast``) and must equal what ``collect``
reads from the libcst tree."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from stridecheck.lint import access_model
from stridecheck.lint.analysis import AnalysisOptions, ParseFailure, build_module_model
from stridecheck.lint.launches import collect, may_hold_launch_or_allocator, module_level_from_ast

SOURCES = {
    "imports": """
        import triton
        import triton.language as tl
        import os.path
        from . import kernels
        from .kernels import _fwd as fwd, _bwd
        from ..common.ops import helper
        from pkg.sub import *
        """,
    "aliases": """
        import triton
        from .k import _impl, _other
        kernel = _impl
        tuned = triton.autotune(configs=[], key=["n"])(_impl)
        jitted = triton.jit(_other)
        flag = None
        on = True
        bad = f(1, 2)
        twice = _impl
        twice = _other
        a = b = _impl
        size: int = 4
        """,
    "branches": """
        try:
            from .fast import _k as impl
        except ImportError:
            from .slow import _k as impl
        else:
            chosen = impl
        finally:
            from .never import ignored
        if HAS:
            from .a import x
        elif OTHER:
            from .b import y
        else:
            z = x
        """,
}


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize(("module", "path"), [("pkg.ops", "src/pkg/ops.py"), ("pkg", "src/pkg/__init__.py"), (None, None)])
def test_ast_path_reads_what_collect_reads(name, module, path):
    src = textwrap.dedent(SOURCES[name])
    assert not may_hold_launch_or_allocator(src)
    tree = cst.parse_module(src)
    positions = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    want = collect(tree, positions, src, module_name=module, path=path)
    got = module_level_from_ast(ast.parse(src), module_name=module, path=path)
    assert got.imports == want.imports
    assert got.kernel_aliases == want.kernel_aliases
    assert want.launches == [] and want.allocators == ()


def test_ast_path_values():
    info = module_level_from_ast(ast.parse(textwrap.dedent(SOURCES["aliases"])), module_name="pkg.ops")
    assert info.imports["_impl"] == "pkg.k._impl"
    assert info.kernel_aliases["kernel"] == "_impl"
    assert info.kernel_aliases["tuned"] == "_impl"
    assert info.kernel_aliases["jitted"] == "_other"
    assert "twice" not in info.kernel_aliases  # two different kernels: no alias
    assert "bad" not in info.kernel_aliases and "a" not in info.kernel_aliases


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("x = 1\n", False),
        ("k[grid](x)\n", True),
        ("k.run(x, grid=g)\n", True),
        ("def f(x):\n    return torch.empty_like(x)\n", True),
        ("y = torch.empty(3)\n", False),  # an allocation outside any returning function
    ],
)
def test_hint(src, expected):
    assert may_hold_launch_or_allocator(src) is expected


def test_model_without_libcst_parse(monkeypatch):
    def no_libcst(*args, **kwargs):
        raise AssertionError("libcst parse on a module with no launch")

    monkeypatch.setattr(access_model.cst, "parse_module", no_libcst)
    src = "import triton\nfrom .k import _impl\nkernel = triton.jit(_impl)\n\n@triton.jit\ndef _k(x_ptr):\n    pass\n"
    model = build_module_model(src, path="m.py", module="pkg.m", options=AnalysisOptions())
    assert [k.name for k in model.kernels] == ["_k"]
    assert model.imports["_impl"] == "pkg.k._impl"
    assert model.kernel_aliases == {"kernel": "_impl"}
    assert model.launches == []
    with pytest.raises(ParseFailure) as err:
        build_module_model("import triton\ndef f(:\n", path="m.py", module=None, options=AnalysisOptions())
    assert err.value.line == 2


LAUNCHER = '''
import torch
from .k import _kernel


class Op:
    def forward(self, x, y, n):
        """Doc."""
        assert x.shape[0] == y.shape[0], "rows"
        if x.shape[1] != n:
            raise ValueError("cols")
        elif y.shape[1] != n:
            raise ValueError("""y
cols""")
        out = torch.empty_like(x)
        _kernel[(n,)](x, y, \\
out, n,
            BLOCK=128)
        if n > 4: _kernel[(1,)](x,
  y, out, n)
        with torch.no_grad():
            _kernel[(2,)](
                x, y,
                out, x.stride(0), y.shape[1],
            )
        return out


def top(x):
    assert x.is_contiguous()
    o = torch.empty(x.shape[0], device=x.device)
    _kernel[(x.shape[0],)](x, o, x.shape[0]); _kernel[(1,)](o, x, 1)
    return o
'''


def test_statement_positions_equal_whole_module_positions():
    """Spans from re-generating single statements (StatementPositions.range_in) equal libcst's
    whole-module PositionProvider, also after a backslash continuation, a triple-quoted string,
    an under-indented continuation line and a one-line suite (those fall back to larger units)."""
    tree = cst.parse_module(LAUNCHER)
    whole = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    want = collect(tree, whole, LAUNCHER, module_name="pkg.op", path="pkg/op.py")
    positions = access_model.StatementPositions(tree, ast.parse(LAUNCHER), LAUNCHER)
    got = collect(tree, positions, LAUNCHER, module_name="pkg.op", path="pkg/op.py")
    assert len(want.launches) == 5
    assert got.launches == want.launches
    assert positions._small  # the statement-level path was taken for some statements
    checks = [c for launch in got.launches for c in launch.width_checks]
    assert any(c.span.line == 9 for c in checks) and any(c.span.line == 10 for c in checks)
