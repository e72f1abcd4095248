"""Builds one module's :class:`~stridecheck.lint.model.ModuleModel`: kernels and launches.

``build_module_model`` parses the source once, with Python's ``ast``, and both sides read that
tree: the kernels (:mod:`stridecheck.lint.kernels`) and the launches, imports and kernel aliases
(:mod:`stridecheck.lint.launches`, which converts ``ast`` positions to the character columns and
parenthesis conventions the findings have always used). ``ast`` carries a source range on every
node for free and parses an order of magnitude faster than libcst, which is no longer on the
linting path; ``--fix`` only re-parses its result with libcst to refuse an edit that breaks the
file (:mod:`stridecheck.lint.fix_apply`).
"""

from __future__ import annotations

import ast

from stridecheck.lint.callgraph import callable_names, called_names, collect_calls, collect_functions
from stridecheck.lint.kernels import build_kernels
from stridecheck.lint.launches import collect
from stridecheck.lint.model import ModuleModel

__all__ = ["build_module_model"]


def _parse_ast(source: str) -> ast.Module:
    """``ast.parse(source)``; raises :class:`~stridecheck.lint.analysis.ParseFailure`."""
    from stridecheck.lint.analysis import ParseFailure

    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise ParseFailure(f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ParseFailure(f"cannot parse: {exc}") from None


def build_module_model(source: str, *, path: str, module: str | None, options) -> ModuleModel:
    """The model of one module: every ``@triton.jit`` function and every launch.

    ``source`` is the file's text, ``path`` where it was found (kept as given), ``module`` its
    dotted name within the linted tree (for relative imports), ``options`` an
    :class:`~stridecheck.lint.analysis.AnalysisOptions`.

    Raises :class:`~stridecheck.lint.analysis.ParseFailure` (reason, 1-based line and column)
    when the source is not valid Python for the running interpreter.
    """
    tree = _parse_ast(source)
    model = ModuleModel(path=path, module=module)
    model.kernels = build_kernels(tree, source, options)
    info = collect(tree, source, module_name=module, path=path)
    model.launches = list(info.launches)
    model.imports = dict(info.imports)
    model.kernel_aliases = dict(info.kernel_aliases)
    model.allocators = tuple(info.allocators)
    model.contiguous_returns = tuple(info.contiguous_returns)
    model.functions = collect_functions(tree)
    model.called = called_names(source)
    if model.launches:
        # A launcher's module: its calls that may reach a launcher of the tree, read now while the
        # tree is in hand (other modules are read on demand by the tree, when a layout is asked
        # of a function they call).
        model.calls, model.attrs = collect_calls(tree, model.functions, callable_names(model), source.splitlines())
    return model


def build_host_model(source: str, *, path: str, module: str | None) -> ModuleModel:
    """The model of a module read only for its calls of launchers (by the tree, on demand): its
    imports, functions, call sites and class attributes; no kernels, no launches."""
    from stridecheck.lint.launches import imports_of

    tree = _parse_ast(source)
    model = ModuleModel(path=path, module=module)
    model.imports = imports_of(tree, module_name=module, path=path)
    model.functions = collect_functions(tree)
    model.called = called_names(source)
    model.calls, model.attrs = collect_calls(tree, model.functions)
    return model


def read_calls(source: str, functions, wanted: frozenset | None = None):
    """(calls, attrs) of an already modelled module, read again from its source on demand."""
    return collect_calls(_parse_ast(source), functions, wanted)
