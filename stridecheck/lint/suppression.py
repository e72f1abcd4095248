"""Suppression comments: ``# stridecheck: ignore[SC001,SC006]`` and bare ``# stridecheck: ignore``.

A comment suppresses findings reported on its own line (the line of the finding's start). The
comments are read with :mod:`tokenize`, so the same text inside a string is not a suppression.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from stridecheck.lint.model import Edit, Finding, Fix, Span

# `[^\]]*` rather than a strict code list so that a typo is still seen (and reported by SC100).
SUPPRESSION_RE = re.compile(r"stridecheck:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
# A comment that is nothing but a suppression (SC100 can delete it whole).
_WHOLE_COMMENT_RE = re.compile(r"#\s*stridecheck:\s*ignore(?:\[[^\]]*\])?\s*")


@dataclass(slots=True)
class Suppression:
    line: int
    codes: tuple[str, ...] | None  # None: a bare `ignore` (every code)
    span: Span  # the comment token
    comment: str  # the comment's text
    code_start: int  # 0-based column where the comment starts within the line
    line_text: str


def parse_suppressions(text: str) -> list[Suppression]:
    """Every suppression comment of ``text`` (a decoded Python source), in line order.

    Tokenizing stops quietly at the first token error (a file that does not tokenize is reported
    as SC000 anyway); comments read before it still count.
    """
    out: list[Suppression] = []
    lines = text.splitlines()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type != tokenize.COMMENT or "stridecheck" not in tok.string:
                continue
            m = SUPPRESSION_RE.search(tok.string)
            if m is None:
                continue
            raw = m.group("codes")
            # Codes are case-insensitive, as on the command line (`ignore[sc003]` is SC003).
            codes = None if raw is None else tuple(c.strip().upper() for c in raw.split(",") if c.strip())
            (line, col), (end_line, end_col) = tok.start, tok.end
            line_text = lines[line - 1] if line - 1 < len(lines) else ""
            out.append(
                Suppression(line, codes, Span(line, col + 1, end_line, end_col + 1), tok.string, col, line_text)
            )
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return out


def apply_suppressions(
    findings: list[Finding], suppressions: list[Suppression]
) -> tuple[list[Finding], set[tuple[int, str | None]]]:
    """Split off suppressed findings; return the kept ones and the (suppression index, code) pairs
    that suppressed something (code None for a bare comment)."""
    by_line: dict[int, list[int]] = {}
    for i, s in enumerate(suppressions):
        by_line.setdefault(s.line, []).append(i)
    kept: list[Finding] = []
    used: set[tuple[int, str | None]] = set()
    for f in findings:
        hit = False
        for i in by_line.get(f.span.line, ()):
            codes = suppressions[i].codes
            if codes is None:
                used.add((i, None))
                hit = True
            elif f.code in codes:
                used.add((i, f.code))
                hit = True
        if not hit:
            kept.append(f)
    return kept, used


def unused_suppressions(
    path: str, suppressions: list[Suppression], used: set[tuple[int, str | None]]
) -> list[Finding]:
    """SC100 findings for comments (or codes in them) that suppressed nothing, each with a safe
    fix that deletes the comment or the unused codes."""
    from stridecheck.lint.catalogue import make_finding

    out = []
    for i, s in enumerate(suppressions):
        if s.codes is None:
            if (i, None) in used:
                continue
            unused: tuple[str, ...] = ()
            template, fields = "default", {}
        else:
            unused = tuple(c for c in s.codes if (i, c) not in used)
            if not unused and s.codes:
                continue
            if not s.codes:
                template, fields = "empty_codes", {}
            else:
                template, fields = "unused_codes", {"plural": "s" if len(unused) > 1 else "", "codes": ", ".join(unused)}
        fix = _removal_fix(s, unused)
        out.append(make_finding("SC100", path, s.span, fix=fix, template=template, **fields))
    return out


def _removal_fix(s: Suppression, unused: tuple[str, ...]) -> Fix | None:
    remaining = tuple(c for c in (s.codes or ()) if c not in unused)
    if remaining:
        m = SUPPRESSION_RE.search(s.comment)
        assert m is not None and m.group("codes") is not None
        start = s.code_start + m.start("codes")
        end = s.code_start + m.end("codes")
        edit = Edit(Span(s.line, start + 1, s.line, end + 1), ", ".join(remaining))
        return Fix((edit,), "safe", "remove the unused codes")
    if not _WHOLE_COMMENT_RE.fullmatch(s.comment):
        return None  # the comment says more than the suppression: leave it to a person
    # Delete the comment and the blanks before it, keeping the code on the line.
    start = len(s.line_text[: s.code_start].rstrip())
    if start == 0:
        return None  # a comment alone on its line: deleting it would leave an empty line
    end = s.code_start + len(s.comment)
    return Fix((Edit(Span(s.line, start + 1, s.line, end + 1), ""),), "safe", "remove the suppression")
