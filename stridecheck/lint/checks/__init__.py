"""The rules' check functions. Each module ``scNNN_*`` exposes ``check(tree, options)`` yielding
findings built with :func:`stridecheck.lint.catalogue.make_finding`; its text (message, rationale,
examples) lives in the catalogue, ``rules/SCNNN-*.toml``."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module

from stridecheck.lint.model import Finding, ModuleModel

CHECK_MODULES = (
    "sc001_size_as_stride",
    "sc002_unused_stride",
    "sc003_implicit_contiguity",
    "sc004_shape_as_stride",
    "sc005_stride_mismatch",
    "sc006_int32_offset",
    "sc007_unchecked_width",
)


def run_checks(models: Sequence[ModuleModel], options) -> list[Finding]:
    from stridecheck.lint.linker import Tree

    tree = Tree(models)
    findings: list[Finding] = []
    for name in CHECK_MODULES:
        module = import_module(f"{__name__}.{name}")
        findings.extend(module.check(tree, options))
    return findings
