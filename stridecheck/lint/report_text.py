"""The human report: ruff-style finding lines, source excerpts, hints and a one-line summary.

``path:line:col: CODE [name] message``, then (with ``show_source``) the reported lines with the
expression underlined, then ``= hint: ...``; at the end a summary line (files checked, findings
by code, time taken). ``quiet`` prints only the finding lines. Colour (ANSI) only when asked,
which the CLI does only for a terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TextIO

from stridecheck.lint import catalogue
from stridecheck.lint.model import Finding

MAX_SHOWN = 160  # characters of a source line shown in an excerpt
_SEVERITY_COLOUR = {"error": "31", "warning": "33", "info": "36"}


class _Paint:
    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text


def _rule_name(code: str) -> str:
    try:
        return catalogue.get(code).name
    except catalogue.CatalogueError:
        return code


def finding_line(f: Finding, paint: _Paint | None = None) -> str:
    paint = paint or _Paint(False)
    where = f"{paint(f.path, '1')}:{f.span.line}:{f.span.column}:"
    code = paint(f.code, "1;" + _SEVERITY_COLOUR.get(f.severity, "31"))
    return f"{where} {code} [{_rule_name(f.code)}] {f.message}"


def excerpt(f: Finding, lines: list[str], paint: _Paint | None = None) -> list[str]:
    """The reported line with the span underlined by carets (to the end of the line when the span
    runs on: a multi-line launch is recognised by its first line)."""
    paint = paint or _Paint(False)
    n = f.span.line
    if not 1 <= n <= len(lines):
        return []
    width = len(str(n))
    bar = paint("|", "34")
    text = lines[n - 1].rstrip("\r\n").expandtabs(1)  # tabs as one column keep carets aligned
    start = max(f.span.column - 1, 0)
    end = f.span.end_column - 1 if f.span.end_line == n else len(text.rstrip())
    end = max(end, start + 1)
    more = f" {paint('...', '34')}" if f.span.end_line > n else ""
    if len(text) > MAX_SHOWN:
        # A generated or minified line: show a window around the span, marked at its cut ends.
        left = max(0, min(start - 20, len(text) - MAX_SHOWN))
        right = left + MAX_SHOWN
        shown = ("..." if left else "") + text[left:right] + ("..." if right < len(text) else "")
        shift = left - (3 if left else 0)
        start, end = start - shift, min(end, right) - shift
        text = shown
    return [
        f"{' ' * width} {bar}",
        f"{paint(str(n), '34')} {bar} {text}",
        f"{' ' * width} {bar} {' ' * start}{paint('^' * (end - start), '1;31')}{more}",
    ]


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}" if what != "directory" or n == 1 else f"{n} directories"


def excluded_note(files: int, dirs: int) -> str:
    """`` (1 file and 2 directories excluded by configuration)``, or "" when nothing was."""
    parts = [_count(n, what) for n, what in ((files, "file"), (dirs, "directory")) if n]
    return f" ({' and '.join(parts)} excluded by configuration)" if parts else ""


def summary(
    findings: list[Finding], files_checked: int, elapsed: float, fixed: int = 0, excluded: tuple[int, int] = (0, 0)
) -> str:
    counts = Counter(f.code for f in findings)
    files = _count(files_checked, "file") + excluded_note(*excluded)
    fixed_text = f", {fixed} fixed" if fixed else ""
    if not findings:
        return f"Checked {files} in {elapsed:.2f}s: no findings{fixed_text}."
    by_code = ", ".join(f"{code}: {n}" for code, n in sorted(counts.items()))
    total = len(findings)
    return f"Checked {files} in {elapsed:.2f}s: {total} finding{'s' if total != 1 else ''} ({by_code}){fixed_text}."


def statistics(findings: list[Finding]) -> list[str]:
    counts = Counter(f.code for f in findings)
    width = max((len(str(n)) for n in counts.values()), default=1)
    out = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        fixable = sum(1 for f in findings if f.code == code and f.fix is not None)
        mark = " [*]" if fixable else ""
        out.append(f"{str(n).rjust(width)}\t{code}\t{_rule_name(code)}{mark}")
    return out


def write(
    out: TextIO,
    findings: list[Finding],
    source_lines: Callable[[str], list[str]],
    *,
    files_checked: int,
    elapsed: float,
    colour: bool = False,
    quiet: bool = False,
    show_source: bool = True,
    fixed: int = 0,
    excluded: tuple[int, int] = (0, 0),
) -> None:
    paint = _Paint(colour)
    for f in findings:
        out.write(finding_line(f, paint) + "\n")
        if quiet:
            continue
        if show_source:
            lines = excerpt(f, source_lines(f.path), paint)
            for line in lines:
                out.write(line + "\n")
        for r in f.related:
            where = f"{r.path}:{r.span.line}:{r.span.column}" if r.path != f.path else f"line {r.span.line}:{r.span.column}"
            out.write(f"  {paint('=', '34')} {paint('also', '1')}: {where}{': ' + r.note if r.note else ''}\n")
        if f.hint:
            out.write(f"  {paint('=', '34')} {paint('hint', '1')}: {f.hint}\n")
        if f.fix is not None:
            out.write(f"  {paint('=', '34')} {paint('fix', '1')} ({f.fix.safety}): {f.fix.description or 'available'}\n")
        if show_source or f.hint or f.related:
            out.write("\n")
    if not quiet:
        out.write(summary(findings, files_checked, elapsed, fixed, excluded) + "\n")
