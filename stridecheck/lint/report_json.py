"""``--format json``: a JSON array of findings with stable keys, in the run's order.

Each item: ``path`` (as given/discovered), ``line``, ``column``, ``end_line``, ``end_column``
(1-based; ``end_column`` exclusive), ``code``, ``name``, ``severity`` (error|warning|info),
``message``, ``hint`` (string or null), ``fix`` (null, or ``{"safety": "safe"|"unsafe",
"description": str, "edits": [{"line", "column", "end_line", "end_column", "replacement"}]}``).
"""

from __future__ import annotations

import json
from typing import TextIO

from stridecheck.lint import catalogue
from stridecheck.lint.model import Finding


def finding_dict(f: Finding) -> dict:
    try:
        name = catalogue.get(f.code).name
    except catalogue.CatalogueError:
        name = f.code
    fix = None
    if f.fix is not None:
        fix = {
            "safety": f.fix.safety,
            "description": f.fix.description,
            "edits": [
                {
                    "line": e.span.line,
                    "column": e.span.column,
                    "end_line": e.span.end_line,
                    "end_column": e.span.end_column,
                    "replacement": e.replacement,
                }
                for e in f.fix.edits
            ],
        }
    return {
        "path": f.path,
        "line": f.span.line,
        "column": f.span.column,
        "end_line": f.span.end_line,
        "end_column": f.span.end_column,
        "code": f.code,
        "name": name,
        "severity": f.severity,
        "message": f.message,
        "hint": f.hint,
        "fix": fix,
        "related": [
            {"path": r.path, "line": r.span.line, "column": r.span.column, "end_line": r.span.end_line,
             "end_column": r.span.end_column, "note": r.note}
            for r in f.related
        ],
    }


def write(out: TextIO, findings: list[Finding]) -> None:
    json.dump([finding_dict(f) for f in findings], out, indent=2, ensure_ascii=False)
    out.write("\n")
