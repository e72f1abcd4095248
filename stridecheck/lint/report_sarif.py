"""``--format sarif``: a SARIF 2.1.0 log (OASIS standard) for code-scanning services.

One run; ``tool.driver`` names stridecheck and its version and holds one ``reportingDescriptor``
per rule of the catalogue (id, name, short and full description, help text and markdown, default
level). Each result has its rule, level, message, a physical location with a region (1-based;
columns count Unicode code points, declared by ``columnKind``) and ``partialFingerprints``:
a hash of the rule code, the path, the whitespace-normalised text of the reported lines and the
occurrence index of that triple in the file, so inserting or deleting unrelated lines above a
finding leaves its fingerprint unchanged. Internal errors become tool execution notifications.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TextIO
from urllib.parse import quote

from stridecheck import __version__
from stridecheck.lint import catalogue
from stridecheck.lint.model import Finding

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/stridecheck/stridecheck"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "stridecheckFingerprint/v1"


def _uri(path: str) -> str:
    p = Path(path)
    if p.is_absolute():
        return p.as_uri()
    return quote(p.as_posix())


def _descriptor(rule: catalogue.Rule) -> dict:
    help_text = f"{rule.what_it_does}\n\nWhy is this bad?\n{rule.why_bad}"
    if rule.use_instead:
        help_text += f"\n\nUse instead:\n{rule.use_instead}"
    markdown = f"## What it does\n{rule.what_it_does}\n\n## Why is this bad?\n{rule.why_bad}\n"
    if rule.bad:
        markdown += f"\n## Example\n```python\n{rule.bad[0].code.strip()}\n```\n"
    if rule.good:
        markdown += f"\n## Use instead\n{rule.use_instead}\n```python\n{rule.good[0].code.strip()}\n```\n"
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.what_it_does},
        "help": {"text": help_text, "markdown": markdown},
        "defaultConfiguration": {"level": _LEVEL[rule.severity], "enabled": rule.tier == "default"},
        "properties": {"tier": rule.tier, "fixSafety": rule.fix_safety},
    }


def fingerprint(f: Finding, lines: list[str], occurrence: int) -> str:
    reported = lines[f.span.line - 1 : max(f.span.line, f.span.end_line)] if lines else []
    normalised = " ".join(re.sub(r"\s+", " ", line).strip() for line in reported)
    material = "\0".join((f.code, Path(f.path).as_posix(), normalised, str(occurrence)))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


def sarif_log(
    findings: list[Finding],
    source_lines: Callable[[str], list[str]],
    internal_errors: list[tuple[str, str]] = (),
) -> dict:
    rules = catalogue.load()
    codes = list(rules)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    seen: dict[tuple[str, str, str], int] = {}
    for f in findings:
        lines = source_lines(f.path)
        base = fingerprint(f, lines, 0)
        occurrence = seen.get((f.path, f.code, base), 0)
        seen[(f.path, f.code, base)] = occurrence + 1
        region = {
            "startLine": f.span.line,
            "startColumn": f.span.column,
            "endLine": f.span.end_line,
            "endColumn": f.span.end_column,
        }
        result = {
            "ruleId": f.code,
            "level": _LEVEL.get(f.severity, "error"),
            "message": {"text": f.message + (f"\n{f.hint}" if f.hint else "")},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": _uri(f.path)}, "region": region}}
            ],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint(f, lines, occurrence)},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(r.path)},
                        "region": {"startLine": r.span.line, "startColumn": r.span.column,
                                   "endLine": r.span.end_line, "endColumn": r.span.end_column},
                    },
                    **({"message": {"text": r.note}} if r.note else {}),
                }
                for i, r in enumerate(f.related, 1)
            ]
        if f.fix is not None:
            result["fixes"] = [
                {
                    "description": {"text": f.fix.description or f"{f.fix.safety} fix"},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(f.path)},
                            "replacements": [
                                {
                                    "deletedRegion": {
                                        "startLine": e.span.line,
                                        "startColumn": e.span.column,
                                        "endLine": e.span.end_line,
                                        "endColumn": e.span.end_column,
                                    },
                                    "insertedContent": {"text": e.replacement},
                                }
                                for e in f.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    invocation = {
        "executionSuccessful": not internal_errors,
        "toolExecutionNotifications": [
            {
                "level": "error",
                "message": {"text": f"internal error: {message}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}}}]
                if not path.startswith("<")
                else [],
            }
            for path, message in internal_errors
        ],
    }
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "stridecheck",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_descriptor(rules[c]) for c in codes],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "invocations": [invocation],
                "results": results,
            }
        ],
    }


def write(out: TextIO, findings, source_lines, internal_errors=()) -> None:
    json.dump(sarif_log(findings, source_lines, internal_errors), out, indent=2, ensure_ascii=False)
    out.write("\n")
