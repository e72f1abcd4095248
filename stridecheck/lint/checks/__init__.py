"""The rules' check functions. Each module ``scNNN_<name>`` exposes ``check(tree, options)``
yielding findings built with :func:`stridecheck.lint.catalogue.make_finding`; its text (message
templates, rationale) and fixtures live beside each other in ``rules/SCNNN-<name>/``, and the
modules run are exactly those the catalogue names (:func:`check_module_names`)."""

from __future__ import annotations

import traceback
from collections.abc import Collection, Sequence
from importlib import import_module
from pathlib import Path

from stridecheck.lint.model import Finding, ModuleModel

def check_module_names() -> tuple[str, ...]:
    """The check modules, one per rule of the catalogue checked by a rule (not the engine),
    named after its folder (``rules/SC001-size-as-stride`` -> ``sc001_size_as_stride``)."""
    from stridecheck.lint import catalogue

    return tuple(r.module_name for r in catalogue.load().values() if r.checked_by == "rule")


def run_checks(models: Sequence[ModuleModel], options, errors: list[str] | None = None,
               codes: Collection[str] | None = None) -> list[Finding]:
    """Every rule's findings over the tree, or only the rules in ``codes`` (the others' findings
    would be dropped unreported). With ``errors`` given, a rule that raises is recorded there
    (``"sc005_stride_mismatch: ValueError: ... (at file:line)"``) and the other rules still run,
    so one broken rule never hides the findings of the rest; without it, the exception
    propagates."""
    from stridecheck.lint import catalogue
    from stridecheck.lint.linker import Tree

    tree = Tree(models)
    findings: list[Finding] = []
    names = {r.module_name: code for code, r in catalogue.load().items()}
    for name in check_module_names():
        if codes is not None and names.get(name) not in codes:
            continue
        module = import_module(f"{__name__}.{name}")
        if errors is None:
            findings.extend(module.check(tree, options))
            continue
        try:
            found = list(module.check(tree, options))
        except Exception as exc:  # noqa: BLE001 - reported by the engine, exit 2
            tb = traceback.extract_tb(exc.__traceback__)
            where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
            errors.append(f"{name}: {type(exc).__name__}: {exc}{where}")
            continue
        findings.extend(found)
    return merge_copies(findings)


def merge_copies(findings: list[Finding]) -> list[Finding]:
    """One finding per defect across files: findings of one rule with the same ``group`` and
    message in several files (a kernel vendored into another package, a copied helper) become
    the first one (by path), with the others' places as related locations."""
    from dataclasses import replace

    from stridecheck.lint.model import Related

    by_key: dict[tuple, list[Finding]] = {}
    out: list[Finding] = []
    for f in findings:
        if f.group:
            by_key.setdefault((f.code, f.group, f.message, f.preview), []).append(f)
        else:
            out.append(f)
    for same in by_key.values():
        same.sort(key=Finding.sort_key)
        first = same[0]
        extra = [Related(f.path, f.span, "the same defect in a copy") for f in same[1:] if f.path != first.path]
        extra += [r for f in same[1:] for r in f.related]
        out.append(replace(first, related=first.related + tuple(extra)) if extra else first)
        out.extend(f for f in same[1:] if f.path == first.path)
    return out
