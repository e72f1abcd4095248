"""Applying fixes (``--fix``, ``--diff``) and writing suppressions (``--add-noqa``).

A :class:`~stridecheck.lint.model.Fix` is a set of edits, each a ``Span`` (1-based lines and
columns in code points, end exclusive) and its replacement text. Fixes of one file are applied
together when no two overlap (a fix overlapping one already taken waits for the next round);
only ``safe`` fixes unless unsafe ones are allowed. The result must parse (libcst) or the file is
left as it was.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from stridecheck.lint.model import Finding, Fix, Span
from stridecheck.lint.suppression import SUPPRESSION_RE

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class FixError(Exception):
    """The edits do not fit the text (a span outside it) or the result does not parse."""


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of each line (line n starts at ``starts[n - 1]``).

    Only ``\\r\\n``, ``\\r`` and ``\\n`` break lines, as in Python's tokenizer (``str.splitlines``
    would also break at form feeds and other separators).
    """
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def offset(starts: list[int], text: str, line: int, column: int) -> int:
    if not 1 <= line <= len(starts):
        raise FixError(f"line {line} is outside the file ({len(starts)} lines)")
    at = starts[line - 1] + column - 1
    end_of_line = starts[line] if line < len(starts) else len(text)
    if column < 1 or at > end_of_line:
        raise FixError(f"column {column} is outside line {line}")
    return at


def fix_allowed(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and fix.edits != () and (fix.safety == "safe" or (unsafe and fix.safety == "unsafe"))


@dataclass
class FileFix:
    text: str  # the fixed text
    applied: list[Finding]  # findings whose fix went in


def apply_fixes(text: str, findings: Iterable[Finding], *, unsafe: bool = False) -> FileFix:
    """Apply the allowed fixes of ``findings`` (all of one file) to ``text``.

    Raises :class:`FixError` when the fixed text does not parse (nothing is applied then).
    """
    starts = line_starts(text)
    taken: list[tuple[int, int]] = []
    splices: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    taken_fixes: set[tuple[tuple[int, int, str], ...]] = set()
    for f in sorted(findings, key=Finding.sort_key):
        if not fix_allowed(f.fix, unsafe):
            continue
        try:
            ranges = [
                (offset(starts, text, e.span.line, e.span.column), offset(starts, text, e.span.end_line, e.span.end_column), e.replacement)
                for e in f.fix.edits
            ]
        except FixError:
            continue
        key = tuple(sorted(ranges))
        if key in taken_fixes:
            # The same edits as a fix already taken (both findings of a swapped pair carry the
            # one swap): this finding is fixed too, and counts as fixed.
            applied.append(f)
            continue
        if any(a > b for a, b, _ in ranges):
            continue
        # Two edits touching the same range (or inserting at the same point) cannot both be right.
        if any(a < tb and ta < b or a == ta or b == tb for a, b, _ in ranges for ta, tb in taken):
            continue
        if any(r1[0] < r2[1] and r2[0] < r1[1] for i, r1 in enumerate(ranges) for r2 in ranges[i + 1 :]):
            continue
        taken.extend((a, b) for a, b, _ in ranges)
        taken_fixes.add(key)
        splices.extend(ranges)
        applied.append(f)
    if not splices:
        return FileFix(text, [])
    out = text
    for a, b, replacement in sorted(splices, key=lambda s: s[0], reverse=True):
        out = out[:a] + replacement + out[b:]
    check_parses(out)
    return FileFix(out, applied)


def check_parses(text: str) -> None:
    import libcst  # only when fixing: the linter's startup stays light

    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError as exc:
        raise FixError(f"the fixed text does not parse: {exc.message} at line {exc.raw_line}") from None


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


# --------------------------------------------------------------------------- --add-noqa


def _unsafe_lines(text: str) -> set[int]:
    """Lines whose end lies inside a multi-line string or ends in a backslash continuation:
    a comment appended there would change the string or break the line."""
    out: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                out.update(range(tok.start[0], tok.end[0]))
            elif sys_fstring(tok) and tok.end[0] > tok.start[0]:
                out.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def sys_fstring(tok: tokenize.TokenInfo) -> bool:
    # Python 3.12+ tokenizes f-strings in pieces; their middle parts may span lines too.
    return tokenize.tok_name.get(tok.type, "") in ("FSTRING_START", "FSTRING_MIDDLE")


def add_noqa(text: str, findings: Iterable[Finding]) -> tuple[str, int]:
    """Add ``# stridecheck: ignore[CODES]`` to the line of each finding (merged into an existing
    suppression comment on that line; other comments kept). Returns the new text and the number
    of lines changed. Lines where a comment cannot go (inside a multi-line string, after a
    backslash continuation) are left alone.
    """
    wanted: dict[int, set[str]] = {}
    for f in findings:
        wanted.setdefault(f.span.line, set()).add(f.code)
    if not wanted:
        return text, 0
    unsafe = _unsafe_lines(text)
    comments: dict[int, tuple[int, str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                comments[tok.start[0]] = (tok.start[1], tok.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    starts = line_starts(text)
    lines = [text[starts[i] : (starts[i + 1] if i + 1 < len(starts) else len(text))] for i in range(len(starts))]
    changed = 0
    for line_no, codes in sorted(wanted.items()):
        if not 1 <= line_no <= len(lines) or line_no in unsafe:
            continue
        raw = lines[line_no - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body) :]
        if body.rstrip().endswith("\\"):
            continue
        existing = comments.get(line_no)
        m = SUPPRESSION_RE.search(existing[1]) if existing else None
        if m is not None:
            if m.group("codes") is None:
                continue  # a bare ignore already covers every code
            old = [c.strip() for c in m.group("codes").split(",") if c.strip()]
            merged = old + sorted(codes - {c.upper() for c in old})  # codes are case-insensitive
            if merged == old:
                continue
            col = existing[0]
            new_comment = existing[1][: m.start("codes")] + ", ".join(merged) + existing[1][m.end("codes") :]
            body = body[:col] + new_comment + body[col + len(existing[1]) :]
        else:
            body = body.rstrip() + f"  # stridecheck: ignore[{', '.join(sorted(codes))}]"
        lines[line_no - 1] = body + ending
        changed += 1
    return "".join(lines), changed


def span_text(text: str, span: Span) -> str:
    starts = line_starts(text)
    return text[offset(starts, text, span.line, span.column) : offset(starts, text, span.end_line, span.end_column)]
