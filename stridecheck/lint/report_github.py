"""``--format github``: GitHub Actions workflow commands, one per finding.

``::error file=PATH,line=L,col=C,endLine=L2,endColumn=C2,title=SC001 [size-as-stride]::message``;
``warning`` for warnings, ``notice`` for info. Escaping follows the Actions toolkit
(``@actions/core`` command.ts): in the message ``%``, CR and LF; in property values also ``:``
and ``,``.
"""

from __future__ import annotations

from typing import TextIO

from stridecheck.lint import catalogue
from stridecheck.lint.model import Finding

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(f: Finding) -> str:
    try:
        title = f"{f.code} [{catalogue.get(f.code).name}]"
    except catalogue.CatalogueError:
        title = f.code
    props = {
        "file": f.path,
        "line": f.span.line,
        "col": f.span.column,
        "endLine": f.span.end_line,
        "endColumn": f.span.end_column,
        "title": title,
    }
    rendered = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items())
    message = f.message + (f"\n{f.hint}" if f.hint else "")
    return f"::{_LEVEL.get(f.severity, 'error')} {rendered}::{escape_data(message)}"


def write(out: TextIO, findings: list[Finding]) -> None:
    for f in findings:
        out.write(command(f) + "\n")
