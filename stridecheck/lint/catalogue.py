"""The rule catalogue: one TOML file per rule under ``rules/`` (shipped as ``stridecheck/_rules``).

It is the single source of each rule's code, name, severity, tier, summary, message template,
hint, rationale and examples: ``stridecheck rules``, ``stridecheck rule CODE``, the messages of
findings, SARIF's reportingDescriptors and the catalogue tests all read it from here.

File format (``rules/SC001-size-as-stride.toml``)::

    code = "SC001"
    name = "size-as-stride"
    severity = "error"            # error | warning | info
    tier = "default"              # default | preview (reported only with --preview) | opt-in (only when selected)
    summary = "An address steps a dimension by a logical size, not a stride"
    message = "`{product}` steps `{pointer}` by the logical size `{size}`; ..."   # str.format fields
    hint = "..."                  # optional, may use the same fields
    fix_safety = "none"           # none | safe | unsafe (what --fix can do for it)
    what_it_does = '''...'''
    why_bad = '''...'''
    use_instead = '''...'''       # optional prose before the good example
    fix = '''...'''               # optional: what --fix does and why it is (un)safe

    [[bad]]                       # at least one; must produce exactly this rule's code
    description = "..."
    code = '''<a whole Python file>'''

    [[good]]                      # at least one; must produce no finding of any default rule
    description = "..."
    code = '''...'''
"""

from __future__ import annotations

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
    code: str


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
            bad=tuple(Example(e.get("description", ""), e["code"]) for e in data.get("bad", ())),
            good=tuple(Example(e.get("description", ""), e["code"]) for e in data.get("good", ())),
            source=str(path),
            messages=dict(data.get("messages", {})),
        )
    except KeyError as exc:
        raise CatalogueError(f"{path}: missing key {exc.args[0]!r}") from exc
    if rule.severity not in SEVERITIES:
        raise CatalogueError(f"{path}: severity {rule.severity!r} is not one of {SEVERITIES}")
    if rule.tier not in TIERS:
        raise CatalogueError(f"{path}: tier {rule.tier!r} is not one of {TIERS}")
    if not path.name.startswith(rule.code):
        raise CatalogueError(f"{path}: file name must start with the rule's code {rule.code}")
    return rule


@lru_cache(maxsize=None)
def load() -> dict[str, Rule]:
    """All rules by code, sorted by code."""
    rules = {}
    for path in sorted(catalogue_dir().glob("SC*.toml")):
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
    hint = rule.hint.format(**fields) if rule.hint else None
    if severity is None:
        severity = "info" if preview else rule.severity
    rel = tuple(r if isinstance(r, Related) else Related(*r) for r in related)
    return Finding(path, span, code, message, severity, hint, preview, fix, rel, group)
