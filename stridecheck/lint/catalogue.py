"""The rule catalogue: one folder per rule under ``rules/`` (shipped as ``stridecheck/_rules``).

A rule is one unit, the way semgrep-rules keeps a rule beside its test file and ruff a rule
beside its fixture: ``rules/SC001-size-as-stride/`` holds its text (``rule.toml``) and its
annotated fixtures (``bad_N.py``, ``good_N.py``), and its check is the module
``stridecheck/lint/checks/sc001_size_as_stride.py`` (the same name; the registry of checks is
derived from the folders, :func:`stridecheck.lint.checks.check_module_names`). It is the single
source of each rule's code, name, severity, tier, summary, message templates, hint, rationale and
examples: ``stridecheck rules``, ``stridecheck rule CODE``, the messages of findings, SARIF's
reportingDescriptors and the tests all read it from here.

``rule.toml``::

    code = "SC001"
    name = "size-as-stride"          # the folder is named "<code>-<name>"
    severity = "error"               # error | warning | info
    tier = "default"                 # default | preview (only with --preview) | opt-in (only when selected)
    checked_by = "rule"              # rule (a check module) | engine (SC000, SC100: the engine reports them)
    summary = "An address steps a dimension by a logical size, not a stride"
    message = "`{product}` steps `{pointer}` by ..."    # the default template (str.format fields)
    hint = "..."                     # optional, may use the same fields
    fix_safety = "none"              # none | safe | unsafe (what --fix can do for it)
    what_it_does = '''...'''
    why_bad = '''...'''
    use_instead = '''...'''          # optional prose before the good example
    fix = '''...'''                  # optional: what --fix does and why it is (un)safe

    [messages]                       # the rule's other named templates, if it has other forms
    implicit_unit = "..."
    [hints]                          # optional: the hint of such a form, where `hint` does not fit it
    implicit_unit = "..."

Fixtures: ``bad_N.py`` is a whole Python file whose first line is ``# <description>``; each line
the rule must report ends in ``# expect: SC001`` and nothing else may be reported (the grammar of
``../shared/cases``). ``good_N.py`` is its fixed twin: no finding of any default rule. Both are
shown by ``stridecheck rule`` (without the annotations) and tested by tests/lint/test_catalogue.py.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from stridecheck.lint.model import Finding, Fix, Related, Span

SEVERITIES = ("error", "warning", "info")
TIERS = ("default", "preview", "opt-in")


@dataclass(frozen=True)
class Example:
    description: str
    code: str  # as shown by `stridecheck rule` (the fixture without its `# expect:` comments)
    path: str = ""  # the fixture file: rules/SCnnn-name/bad_1.py (annotated) or good_1.py


_EXPECT_COMMENT = re.compile(r"\s*#\s*expect:.*$")


def _example(path: Path) -> Example:
    """A fixture file as an example: a first-line `# description`, then the code."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    description = ""
    if lines and lines[0].startswith("# "):
        description, lines = lines[0][2:].strip(), lines[1:]
    shown = "\n".join(_EXPECT_COMMENT.sub("", line) for line in lines) + "\n"
    return Example(description, shown, str(path))


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    tier: str
    summary: str
    message: str
    hint: str | None
    fix_safety: str
    what_it_does: str
    why_bad: str
    use_instead: str
    fix: str
    bad: tuple[Example, ...] = field(default=())
    good: tuple[Example, ...] = field(default=())
    source: str = ""  # the file it was read from
    # Named message templates for the rule's other forms (`[messages] implicit_unit = "..."`);
    # ``message`` is the one named "default".
    messages: dict = field(default_factory=dict)
    hints: dict = field(default_factory=dict)  # named forms' own hints (`[hints]`), else ``hint``
    checked_by: str = "rule"  # "rule": stridecheck/lint/checks/<module_name>; "engine": SC000, SC100

    @property
    def module_name(self) -> str:
        """The check module's name: SC001 size-as-stride -> ``sc001_size_as_stride``."""
        return f"{self.code.lower()}_{self.name.replace('-', '_')}"


class CatalogueError(Exception):
    pass


def catalogue_dir() -> Path:
    """Where the TOML files are: ``stridecheck/_rules`` when installed, ``rules/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    installed = here / "_rules"
    if installed.is_dir():
        return installed
    checkout = here.parent / "rules"
    if checkout.is_dir():
        return checkout
    raise CatalogueError(f"rule catalogue not found (looked in {installed} and {checkout})")


def _rule_from_toml(path: Path) -> Rule:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogueError(f"{path}: {exc}") from exc
    try:
        rule = Rule(
            code=data["code"],
            name=data["name"],
            severity=data["severity"],
            tier=data.get("tier", "default"),
            summary=data["summary"],
            message=data["message"],
            hint=data.get("hint"),
            fix_safety=data.get("fix_safety", "none"),
            what_it_does=data["what_it_does"].strip(),
            why_bad=data["why_bad"].strip(),
            use_instead=data.get("use_instead", "").strip(),
            fix=data.get("fix", "").strip(),
            bad=tuple(_example(p) for p in sorted(path.parent.glob("bad_*.py"))),
            good=tuple(_example(p) for p in sorted(path.parent.glob("good_*.py"))),
            source=str(path),
            messages=dict(data.get("messages", {})),
            hints=dict(data.get("hints", {})),
            checked_by=data.get("checked_by", "rule"),
        )
    except KeyError as exc:
        raise CatalogueError(f"{path}: missing key {exc.args[0]!r}") from exc
    if rule.severity not in SEVERITIES:
        raise CatalogueError(f"{path}: severity {rule.severity!r} is not one of {SEVERITIES}")
    if rule.tier not in TIERS:
        raise CatalogueError(f"{path}: tier {rule.tier!r} is not one of {TIERS}")
    if path.parent.name != f"{rule.code}-{rule.name}":
        raise CatalogueError(f"{path}: the rule's folder must be named {rule.code}-{rule.name}")
    return rule


@lru_cache(maxsize=None)
def load() -> dict[str, Rule]:
    """All rules by code, sorted by code."""
    rules = {}
    for path in sorted(catalogue_dir().glob("SC*/rule.toml")):
        rule = _rule_from_toml(path)
        if rule.code in rules:
            raise CatalogueError(f"{path}: duplicate rule code {rule.code}")
        rules[rule.code] = rule
    return rules


def get(code: str) -> Rule:
    try:
        return load()[code]
    except KeyError:
        raise CatalogueError(f"unknown rule code {code!r}") from None


def make_finding(
    code: str,
    path: str,
    span: Span,
    *,
    preview: bool = False,
    severity: str | None = None,
    fix: Fix | None = None,
    related=(),
    group: str = "",
    template: str = "default",
    **fields: object,
) -> Finding:
    """A finding whose message and hint are the catalogue's templates filled with ``fields``.

    ``preview=True`` marks a lower-tier finding (reported only with ``--preview``, severity
    ``info`` unless given). ``related`` lists the other places of the same defect, as
    :class:`~stridecheck.lint.model.Related` or ``(path, span[, note])`` tuples; ``group`` is the
    rule's key of the defect, by which copies of it in other files are merged into one finding;
    ``template`` names the message (the rule's ``[messages]`` table; "default": ``message``).
    """
    rule = get(code)
    if template != "default" and template not in rule.messages:
        raise CatalogueError(f"{code} has no message template {template!r}")
    message = (rule.message if template == "default" else rule.messages[template]).format(**fields)
    hint_template = rule.hints.get(template, rule.hint)
    hint = hint_template.format(**fields) if hint_template else None
    if severity is None:
        severity = "info" if preview else rule.severity
    rel = tuple(r if isinstance(r, Related) else Related(*r) for r in related)
    return Finding(path, span, code, message, severity, hint, preview, fix, rel, group)
