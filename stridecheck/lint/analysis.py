"""The analysis API the engine calls: build one file's model, then judge the whole tree.

Contract (the engine in ``stridecheck.lint.engine`` relies on exactly this):

* ``build_module_model(source, path=..., module=..., options=...)`` parses ``source`` once
  (Python's ``ast``; both the kernel and the launch side read that tree) and returns a picklable :class:`~stridecheck.lint.model.ModuleModel` (kernels with
  their access models, launches with argument origins, imports). It raises
  :class:`ParseFailure` when the source does not parse. It runs in worker processes; its result
  is cached by content hash, so it must depend only on its arguments.
* ``check_tree(models, options)`` runs every rule over all models of the linted tree (launches
  bound to kernels across files) and returns findings, preview-tier ones included (marked
  ``preview=True``). Selection, suppression and ordering are the engine's job, not the rules'.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from stridecheck.lint.model import Finding, ModuleModel


@dataclass(frozen=True)
class AnalysisOptions:
    extra_size_names: tuple[str, ...] = ()  # regexes (fullmatch) for more size-like names
    extra_stride_names: tuple[str, ...] = ()  # regexes (fullmatch) for more stride-like names

    def cache_key(self) -> str:
        return repr((self.extra_size_names, self.extra_stride_names))


class ParseFailure(Exception):
    """The source is not valid Python (as the running interpreter's ``ast.parse`` reads it)."""

    def __init__(self, reason: str, line: int = 1, column: int = 1):
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column


def build_module_model(
    source: str, *, path: str, module: str | None, options: AnalysisOptions
) -> ModuleModel:
    from stridecheck.lint.access_model import build_module_model as _build

    return _build(source, path=path, module=module, options=options)


def check_tree(
    models: Sequence[ModuleModel], options: AnalysisOptions, errors: list[str] | None = None,
    codes: Collection[str] | None = None,
) -> list[Finding]:
    """All findings of the tree (of the rules in ``codes``, when given); with ``errors`` given, a
    failing rule is recorded there and the other rules still report (see
    :func:`stridecheck.lint.checks.run_checks`)."""
    from stridecheck.lint.checks import run_checks

    return run_checks(models, options, errors, codes)
