"""The launch side reads the ``ast`` tree the kernel side reads: a module is parsed once, and
libcst is never parsed while linting. Modules without a launch hint read only their imports and
kernel aliases."""

from __future__ import annotations

import ast
import textwrap

import libcst
import pytest

from stridecheck.lint.analysis import AnalysisOptions, ParseFailure, build_module_model
from stridecheck.lint.launches import collect, may_hold_launch_or_allocator

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
def test_module_without_launch_reads_imports_and_aliases_only(name):
    src = textwrap.dedent(SOURCES[name])
    assert not may_hold_launch_or_allocator(src)
    info = collect(ast.parse(src), src, module_name="pkg.ops", path="src/pkg/ops.py")
    assert info.launches == [] and info.allocators == ()
    assert info.imports  # every source imports something


def test_branches_read_every_arm_but_finally():
    src = textwrap.dedent(SOURCES["branches"])
    info = collect(ast.parse(src), src, module_name="pkg.ops")
    assert info.imports["impl"] == "pkg.slow._k"  # the later arm wins, as it did with libcst
    assert info.imports["x"] == "pkg.a.x" and info.imports["y"] == "pkg.b.y"
    assert "ignored" not in info.imports  # `finally` is not read
    assert info.kernel_aliases == {"chosen": "impl", "z": "x"}


def test_ast_path_values():
    src = textwrap.dedent(SOURCES["aliases"])
    info = collect(ast.parse(src), src, module_name="pkg.ops")
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
        raise AssertionError("libcst parse while linting")

    monkeypatch.setattr(libcst, "parse_module", no_libcst)
    src = (
        "import torch\nimport triton\nfrom .k import _impl\nkernel = triton.jit(_impl)\n\n"
        "@triton.jit\ndef _k(x_ptr):\n    pass\n\n"
        "def launch(x):\n    y = torch.empty_like(x)\n    _k[(1,)](y)\n    return y\n"
    )
    model = build_module_model(src, path="m.py", module="pkg.m", options=AnalysisOptions())
    assert [k.name for k in model.kernels] == ["_k"]
    assert model.imports["_impl"] == "pkg.k._impl"
    assert model.kernel_aliases == {"kernel": "_impl"}
    assert [(l.target, l.launcher, l.span.line) for l in model.launches] == [("_k", "launch", 12)]
    with pytest.raises(ParseFailure) as err:
        build_module_model("import triton\ndef f(:\n", path="m.py", module=None, options=AnalysisOptions())
    assert err.value.line == 2


@pytest.mark.parametrize(
    ("module", "path", "kernels", "helper"),
    [
        ("pkg.ops", "src/pkg/ops.py", "pkg.kernels", "common.ops.helper"),
        ("pkg", "src/pkg/__init__.py", "pkg.kernels", "common.ops.helper"),  # a package's own module
        (None, None, ".kernels", "..common.ops.helper"),  # no module name: the dots stay
    ],
)
def test_relative_imports_resolve_against_the_module(module, path, kernels, helper):
    src = "from . import kernels\nfrom .kernels import _fwd as fwd\nfrom ..common.ops import helper\nimport a.b as ab, c.d\n"
    imports = collect(ast.parse(src), src, module_name=module, path=path).imports
    assert imports == {"kernels": kernels, "fwd": f"{kernels}._fwd", "helper": helper, "ab": "a.b", "c": "c"}
