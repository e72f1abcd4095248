"""What ``stridecheck lint`` does around one engine run: fix rounds, ``--diff``, ``--add-noqa``,
the report in the chosen format, and the exit code.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TextIO

from stridecheck.lint.engine import FileInput, RunOptions, RunResult, lint
from stridecheck.lint.fix_apply import FixError, apply_fixes, fix_allowed, line_starts, unified_diff
from stridecheck.lint.fix_apply import add_noqa as add_suppressions
from stridecheck.lint.model import Finding

MAX_FIX_ROUNDS = 10  # as ruff: a fix can expose another; stop long before a cycle matters


@dataclass
class Output:
    output_format: str = "text"
    output_file: str | None = None
    quiet: bool = False
    colour: bool = False
    statistics: bool = False
    show_source: bool = True
    excluded: tuple[int, int] = (0, 0)  # (files, directories) the exclude patterns left out


def _lines_of(result: RunResult, overrides: dict[str, str] | None = None):
    cache: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in cache:
            text = (overrides or {}).get(path) or result.text(path)
            if text is None:
                cache[path] = []
            else:
                starts = line_starts(text)
                ends = starts[1:] + [len(text)]
                cache[path] = [text[a:b] for a, b in zip(starts, ends)]
        return cache[path]

    return lines


def _by_path(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.path, []).append(f)
    return out


def _write_file(path: str, text: str, encoding: str) -> bool:
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        print(f"stridecheck: warning: {path}: the fixed text cannot be encoded as {encoding}; not written", file=sys.stderr)
        return False
    with open(path, "wb") as fh:
        fh.write(data)
    return True


def _fix_rounds(inputs, options, unsafe: bool, write: bool) -> tuple[RunResult, dict[str, str], dict[str, str], int]:
    """Lint, apply the allowed fixes, lint again, until nothing more applies.

    Returns the last run, the original and the fixed texts of changed files, and how many
    findings' fixes went in. With ``write`` False the fixed texts only feed the next round.
    """
    current = list(inputs)
    originals: dict[str, str] = {}
    fixed: dict[str, str] = {}
    total = 0
    result = lint(current, options)
    for _ in range(MAX_FIX_ROUNDS):
        changed = False
        for path, findings in _by_path(result.findings).items():
            if not any(fix_allowed(f.fix, unsafe) for f in findings):
                continue
            text = fixed.get(path) or result.text(path)
            if text is None:
                continue
            try:
                outcome = apply_fixes(text, findings, unsafe=unsafe)
            except FixError as exc:
                print(f"stridecheck: warning: {path}: fixes not applied: {exc}", file=sys.stderr)
                continue
            if not outcome.applied or outcome.text == text:
                continue
            originals.setdefault(path, text)
            fixed[path] = outcome.text
            total += len(outcome.applied)
            changed = True
        if not changed:
            break
        encodings = dict(result.encodings)
        current = []
        for item in inputs:
            if item.path in fixed:
                data = fixed[item.path].encode(encodings.get(item.path, "utf-8"), errors="surrogateescape")
                current.append(replace(item, data=data))
            else:
                current.append(item)
        result = lint(current, options)
        result.encodings = {**encodings, **result.encodings}
    if write:
        for path, text in fixed.items():
            if not any(i.path == path and i.data is not None for i in inputs):
                _write_file(path, text, result.encodings.get(path, "utf-8"))
    return result, originals, fixed, total


def run(
    inputs: list[FileInput],
    options: RunOptions,
    out: Output,
    *,
    fix: bool = False,
    diff: bool = False,
    unsafe_fixes: bool = False,
    add_noqa: bool = False,
    stdin: bool = False,
) -> int:
    """Run, report, and return the exit code (0, 1 or 2)."""
    if diff:
        result, originals, fixed, total = _fix_rounds(inputs, options, unsafe_fixes, write=False)
        for path in sorted(fixed):
            sys.stdout.write(unified_diff(path, originals[path], fixed[path]))
        hidden = 0 if unsafe_fixes else sum(1 for f in result.findings if fix_allowed(f.fix, True) and f.fix.safety == "unsafe")
        print(fix_summary(total, hidden, applied=False), file=sys.stderr)
        _internal_errors(result)
        return 2 if result.internal_errors else 1 if fixed else 0

    if add_noqa:
        result = lint(inputs, options)
        added = 0
        for path, findings in _by_path(result.findings).items():
            findings = [f for f in findings if f.code not in ("SC000", "SC100")]
            text = result.text(path)
            if not findings or text is None:
                continue
            new_text, changed = add_suppressions(text, findings)
            if changed and (stdin or _write_file(path, new_text, result.encodings.get(path, "utf-8"))):
                added += changed
                if stdin:
                    sys.stdout.write(new_text)
        print(f"Added {added} suppression comment{'s' if added != 1 else ''}.", file=sys.stderr)
        _internal_errors(result)
        return 2 if result.internal_errors else 0

    fixed_count = 0
    report_stream = None
    if fix:
        result, _originals, fixed, fixed_count = _fix_rounds(inputs, options, unsafe_fixes, write=not stdin)
        if stdin:
            # As ruff: with stdin, --fix prints the fixed source and reports on stderr.
            only = inputs[0]
            text = fixed.get(only.path) or result.text(only.path) or (only.data or b"").decode("utf-8", "replace")
            sys.stdout.write(text)
            report_stream = sys.stderr
        overrides = fixed
    else:
        result = lint(inputs, options)
        overrides = {}

    if out.output_file:
        ctx = open(out.output_file, "w", encoding="utf-8")
    else:
        ctx = nullcontext(report_stream or sys.stdout)
    with ctx as stream:
        _report(stream, result, out, overrides, fixed_count)
    _internal_errors(result)
    if result.internal_errors:
        return 2
    return 1 if result.findings else 0


def fix_summary(fixed: int, hidden: int, *, applied: bool) -> str:
    """The one line that ends ``--diff`` (``applied`` False) and ``--fix`` (True), as ruff's:
    ``Would fix 2 findings.``, ``Fixed 1 finding (1 additional fix available with
    `--unsafe-fixes`).``, ``No findings would be fixed (1 fix available with `--unsafe-fixes`).``,
    ``No fixes available.``"""
    s = "" if fixed == 1 else "s"
    es = "" if hidden == 1 else "es"
    if fixed:
        done = f"Fixed {fixed} finding{s}" if applied else f"Would fix {fixed} finding{s}"
        more = f" ({hidden} additional fix{es} available with `--unsafe-fixes`)" if hidden else ""
        return done + more + "."
    if hidden:
        none = "No findings fixed" if applied else "No findings would be fixed"
        return f"{none} ({hidden} fix{es} available with `--unsafe-fixes`)."
    return "No fixes available."


def _report(stream: TextIO, result: RunResult, out: Output, overrides: dict[str, str], fixed: int) -> None:
    lines = _lines_of(result, overrides)
    fmt = out.output_format
    if out.statistics:
        if fmt == "json":
            import json
            from collections import Counter

            from stridecheck.lint import catalogue

            counts = Counter(f.code for f in result.findings)
            json.dump(
                [
                    {
                        "code": code,
                        "name": catalogue.get(code).name if code in catalogue.load() else code,
                        "count": n,
                        "fixable": sum(1 for f in result.findings if f.code == code and f.fix is not None),
                    }
                    for code, n in sorted(counts.items())
                ],
                stream,
                indent=2,
            )
            stream.write("\n")
            return
        from stridecheck.lint import report_text

        for line in report_text.statistics(result.findings):
            stream.write(line + "\n")
        return
    if fmt == "json":
        from stridecheck.lint import report_json

        report_json.write(stream, result.findings)
    elif fmt == "sarif":
        from stridecheck.lint import report_sarif

        report_sarif.write(stream, result.findings, lines, result.internal_errors)
    elif fmt == "github":
        from stridecheck.lint import report_github

        report_github.write(stream, result.findings)
    else:
        from stridecheck.lint import report_text

        report_text.write(
            stream,
            result.findings,
            lines,
            files_checked=result.files_checked,
            elapsed=result.elapsed,
            colour=out.colour,
            quiet=out.quiet,
            show_source=out.show_source,
            fixed=fixed,
            excluded=out.excluded,
        )


def _internal_errors(result: RunResult) -> None:
    for path, message in result.internal_errors:
        print(f"stridecheck: error: {path}: internal error: {message}", file=sys.stderr)
