"""The ``stridecheck`` command: ``lint``, ``rules``, ``rule CODE``.

Exit codes of ``lint`` (as ruff's): 0 nothing reported; 1 any finding reported (or, with
``--diff``, a change to show); 2 a usage or configuration error, or an internal error in some
file (reported after everything else). Importing this module imports neither torch, triton nor
libcst: linting parses with Python's ``ast``; libcst is loaded only where ``--fix`` checks its
result.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from stridecheck import __version__


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--select sc001,SC002 --select SC006`` -> ("SC001", "SC002", "SC006"): codes are
    case-insensitive."""
    return tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())


def _fail(message: str) -> None:
    click.echo(f"stridecheck: error: {message}", err=True)
    sys.exit(2)


# Wide enough that no option's help is wrapped mid-phrase on a normal terminal; click still
# narrows to the terminal when it is smaller.
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, "--version", "-V", prog_name="stridecheck")
def main() -> None:
    """Stops silent stride bugs in Triton GPU kernels.

    \b
    stridecheck lint src/        lint a tree (exit 0 clean, 1 findings, 2 errors)
    stridecheck rules            list the rules
    stridecheck rule SC001       explain one rule, with examples

    Configuration is read from [tool.stridecheck] in the nearest pyproject.toml.
    """


@main.command(short_help="Lint files or directories for stride bugs.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--select", multiple=True, metavar="CODES", help="Report only these rules (codes or prefixes, comma-separated); replaces the configuration's selection.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Report these rules too, on top of the selection.")
@click.option("--ignore", multiple=True, metavar="CODES", help="Do not report these rules; adds to the configuration's ignore.")
@click.option("--exclude", multiple=True, metavar="PATTERN", help="Skip files matching these gitignore-style patterns; replaces the configuration's exclude.")
@click.option("--extend-exclude", multiple=True, metavar="PATTERN", help="Skip files matching these patterns too.")
@click.option("--force-exclude", is_flag=True, help="Apply the exclusions to paths named on the command line too (the pre-commit hook does).")
@click.option("--format", "output_format", type=click.Choice(["text", "json", "sarif", "github"]), default="text", show_default=True, help="Write the report in this format.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported (errors still exit 2).")
@click.option("-q", "--quiet", is_flag=True, help="Print only the finding lines.")
@click.option("--no-color", is_flag=True, help="Print no ANSI colours (they are used only on a terminal anyway).")
@click.option("--stdin-filename", metavar="PATH", help="Lint standard input, reported and configured as PATH.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True), help="Write the report to this file.")
@click.option("--preview", is_flag=True, default=None, help="Also report the lower (preview) tier of findings.")
@click.option("--statistics", is_flag=True, help="Print the count of findings per rule instead of the findings.")
@click.option("--show-source/--no-show-source", default=True, show_default=True, help="Show the source excerpt under each finding.")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, then report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Apply the unsafe fixes too (with --fix or --diff).")
@click.option("--diff", is_flag=True, help="Print the changes --fix would make without writing them (exit 1 if there are any).")
@click.option("--add-noqa", is_flag=True, help="Write `# stridecheck: ignore[CODE]` on the line of every current finding.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Keep the cache in this directory (default: .stridecheck_cache at the project root).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Use this many worker processes (default: the CPU count).")
def lint(
    paths: tuple[str, ...],
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    force_exclude: bool,
    output_format: str,
    exit_zero: bool,
    quiet: bool,
    no_color: bool,
    stdin_filename: str | None,
    output_file: str | None,
    preview: bool | None,
    statistics: bool,
    show_source: bool,
    fix: bool,
    unsafe_fixes: bool,
    diff: bool,
    add_noqa: bool,
    no_cache: bool,
    cache_dir: str | None,
    jobs: int | None,
) -> None:
    """Lint PATHS: files or directories (default: the current directory), or `-` for standard input.

    Directories are searched for .py files, respecting .gitignore and the configuration's
    exclude; only files that mention `triton` are analysed. Exit codes: 0 nothing reported,
    1 findings reported, 2 a usage or configuration error or an internal error.
    """
    from stridecheck.lint import catalogue
    from stridecheck.lint.analysis import AnalysisOptions
    from stridecheck.lint.config import ConfigError, check_selectors, find_pyproject, load_config
    from stridecheck.lint.discovery import Discovery
    from stridecheck.lint.engine import FileInput, RuleSelection, RunOptions

    if sum((fix, diff, add_noqa)) > 1:
        _fail("--fix, --diff and --add-noqa cannot be combined")
    use_stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if "-" in paths and not use_stdin:
        _fail("`-` (standard input) cannot be combined with other paths")
    anchor = Path(stdin_filename) if use_stdin and stdin_filename else Path(paths[0]) if paths and not use_stdin else Path.cwd()
    try:
        catalogue.load()
        pyproject = find_pyproject(anchor if anchor.exists() else Path.cwd())
        cfg = load_config(pyproject, default_root=Path.cwd())
        cli_select, cli_extend, cli_ignore = _codes(select), _codes(extend_select), _codes(ignore)
        check_selectors(cli_select, "--select")
        check_selectors(cli_extend, "--extend-select")
        check_selectors(cli_ignore, "--ignore")
    except (ConfigError, catalogue.CatalogueError) as exc:
        _fail(str(exc))

    exclusions = (tuple(exclude) if exclude else cfg.exclude) + cfg.extend_exclude + tuple(extend_exclude)
    discovery = Discovery(cfg.root, exclusions, force_exclude)
    if use_stdin:
        name = stdin_filename or "-"
        if stdin_filename and force_exclude and discovery.excluded(Path(stdin_filename)):
            inputs = []
        else:
            inputs = [FileInput(name, explicit=True, data=sys.stdin.buffer.read(), cacheable=False)]
    else:
        try:
            found = discovery.files(list(paths) or ["."])
        except FileNotFoundError as exc:
            _fail(f"{exc.args[0]}: no such file or directory")
        inputs = [FileInput(s.path, explicit=s.explicit) for s in found]
        if not inputs:
            # As ruff: say so, rather than report "0 files, no findings" for a mistyped path.
            click.echo("stridecheck: warning: No Python files found under the given path(s)", err=True)

    options = RunOptions(
        # As ruff: the command line's selection is applied over the configuration's, and a
        # --select replaces it (so `--select SC006` reports SC006 even if the config ignores it).
        selections=(
            RuleSelection(cfg.select, cfg.extend_select, cfg.ignore),
            RuleSelection(cli_select or None, cli_extend, cli_ignore),
        ),
        per_file_ignores=cfg.per_file_ignores,
        preview=cfg.preview if preview is None else preview,
        max_file_size=cfg.max_file_size,
        analysis=AnalysisOptions(cfg.size_names, cfg.stride_names),
        jobs=jobs,
        cache_dir=None if no_cache else Path(cache_dir) if cache_dir else cfg.root / ".stridecheck_cache",
        root=cfg.root,
    )
    from stridecheck.lint import workflow

    code = workflow.run(
        inputs,
        options,
        workflow.Output(
            output_format=output_format,
            output_file=output_file,
            quiet=quiet,
            colour=not no_color and output_file is None and "NO_COLOR" not in os.environ and sys.stdout.isatty(),
            statistics=statistics,
            show_source=show_source,
            excluded=(discovery.excluded_files, discovery.excluded_dirs),
        ),
        fix=fix,
        diff=diff,
        unsafe_fixes=unsafe_fixes,
        add_noqa=add_noqa,
        stdin=use_stdin,
    )
    if exit_zero and code == 1:
        code = 0
    sys.exit(code)


@main.command(short_help="List every rule.")
def rules() -> None:
    """Print a table of every rule: its code, name, severity, tier and summary."""
    from stridecheck.lint import catalogue

    try:
        all_rules = list(catalogue.load().values())
    except catalogue.CatalogueError as exc:
        _fail(str(exc))
    rows = [("code", "name", "severity", "tier", "summary")] + [
        (r.code, r.name, r.severity, r.tier, r.summary) for r in all_rules
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for i, row in enumerate(rows):
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths)) + "  " + row[4])
        if i == 0:
            click.echo("  ".join("-" * w for w in widths) + "  " + "-" * len(row[4]))


@main.command(short_help="Explain one rule, with examples.")
@click.argument("code")
def rule(code: str) -> None:
    """Explain rule CODE (for example SC001) in full: what it does, why it is bad, an example and
    what to write instead."""
    from stridecheck.lint import catalogue

    try:
        r = catalogue.get(code.strip().upper())
    except catalogue.CatalogueError as exc:
        _fail(str(exc))
    click.echo(render_rule(r))


def render_rule(r) -> str:
    """ruff-style sections: What it does / Why is this bad? / Example / Use instead / Fix safety."""
    tier = {"default": "on by default", "preview": "preview: reported with --preview", "opt-in": "opt-in: reported only when selected"}[r.tier]
    parts = [f"# {r.code} {r.name} ({r.severity}; {tier})", "", r.summary, "", "## What it does", r.what_it_does, "", "## Why is this bad?", r.why_bad, ""]
    parts.append("## Example")
    for ex in r.bad:
        if ex.description:
            parts.append(ex.description)
        parts += ["```python", ex.code.strip("\n"), "```", ""]
    parts.append("## Use instead")
    if r.use_instead:
        parts += [r.use_instead, ""]
    for ex in r.good:
        if ex.description:
            parts.append(ex.description)
        parts += ["```python", ex.code.strip("\n"), "```", ""]
    parts.append("## Fix safety")
    safety = {
        "none": "There is no automatic fix for this rule.",
        "safe": "The fix is safe: it does not change what correct code does (applied by --fix).",
        "unsafe": "The fix is unsafe: it can change behaviour of code written that way on purpose (applied only with --fix --unsafe-fixes).",
    }.get(r.fix_safety, r.fix_safety)
    parts.append(r.fix or safety)
    if r.fix and r.fix_safety in ("safe", "unsafe"):
        parts += ["", safety]
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover
    main()
