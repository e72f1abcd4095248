"""The rule catalogue: every file loads; every bad example produces exactly its rule, every good
example is clean (linted through the real engine); `stridecheck rule CODE` shows it all."""

from __future__ import annotations

import pytest

from stridecheck.lint import catalogue
from stridecheck.lint.engine import FileInput, RunOptions, lint

RULES = catalogue.load()


def _lint_example(tmp_path, code_text: str, select, preview: bool):
    path = tmp_path / "example.py"
    path.write_text(code_text, encoding="utf-8")
    options = RunOptions(select=select, preview=preview, jobs=1, root=tmp_path)
    result = lint([FileInput(str(path), explicit=True)], options)
    assert result.internal_errors == []
    return result.findings


def test_catalogue_loads_with_every_field():
    assert "SC000" in RULES and "SC100" in RULES
    for code, rule in RULES.items():
        assert rule.code == code and rule.name and rule.summary and rule.message
        assert rule.what_it_does and rule.why_bad
        assert rule.bad and rule.good, f"{code} needs at least one bad and one good example"
        assert rule.fix_safety in ("none", "safe", "unsafe")


EXAMPLES = [
    (code, kind, i)
    for code, rule in RULES.items()
    for kind, examples in (("bad", rule.bad), ("good", rule.good))
    for i in range(len(examples))
]


@pytest.mark.parametrize("code, kind, i", EXAMPLES, ids=[f"{c}-{k}{i}" for c, k, i in EXAMPLES])
def test_example(tmp_path, code, kind, i):
    rule = RULES[code]
    preview = rule.tier == "preview"
    if kind == "bad":
        # Only this rule selected: the fixture's `# expect:` lines are reported with it, exactly
        # (preview findings included for preview rules), and nothing else.
        from pathlib import Path

        from tests.annotations import expected

        fixture = Path(rule.bad[i].path)
        want = expected(fixture, (code,))
        assert want, f"{fixture}: a bad fixture needs at least one `# expect: {code}` line"
        options = RunOptions(select=(code,), preview=preview, jobs=1, root=fixture.parent)
        result = lint([FileInput(str(fixture), explicit=True)], options)
        assert result.internal_errors == []
        assert {(f.span.line, f.code) for f in result.findings} == want
    else:
        # Every default rule plus this one: a good example is clean of them all.
        select = None if rule.tier != "opt-in" else tuple(c for c, r in RULES.items() if r.tier != "opt-in") + (code,)
        findings = _lint_example(tmp_path, rule.good[i].code, select, preview)
        assert [(f.code, f.span.line, f.message) for f in findings] == []


@pytest.mark.parametrize("code", list(RULES))
def test_rule_command_shows_every_section(cli, tmp_path, code):
    run = cli(["rule", code.lower()], cwd=tmp_path)
    assert run.code == 0
    rule = RULES[code]
    out = run.out
    assert out.startswith(f"# {code} {rule.name} ({rule.severity}")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in out
    assert out.index("## What it does") < out.index("## Why is this bad?") < out.index("## Example")
    for example in rule.bad + rule.good:
        assert example.code.strip("\n") in out


def test_rules_table_lists_every_rule(cli, tmp_path):
    run = cli(["rules"], cwd=tmp_path)
    lines = run.out.splitlines()
    assert lines[0].split()[:4] == ["code", "name", "severity", "tier"]
    for code, rule in RULES.items():
        (row,) = [line for line in lines if line.startswith(code + " ")]
        assert row.split()[:4] == [code, rule.name, rule.severity, rule.tier] and rule.summary in row


def test_every_rule_folder_has_its_check_module_and_every_module_its_folder():
    from pathlib import Path

    from stridecheck.lint import checks

    modules = {p.stem for p in Path(checks.__file__).parent.glob("sc[0-9]*.py")}
    assert set(checks.check_module_names()) == modules
    for rule in RULES.values():
        folder = Path(rule.source).parent
        assert folder.name == f"{rule.code}-{rule.name}"
        assert (rule.module_name in modules) == (rule.checked_by == "rule"), rule.code
        assert sorted(p.name for p in folder.iterdir() if p.suffix == ".py") == sorted(
            [f"bad_{i}.py" for i in range(1, len(rule.bad) + 1)] + [f"good_{i}.py" for i in range(1, len(rule.good) + 1)]
        )


def test_every_message_is_a_named_template_that_says_something():
    import string

    for rule in RULES.values():
        for name, template in {"default": rule.message, **rule.messages}.items():
            fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
            literal = "".join(t for t, _, _, _ in string.Formatter().parse(template))
            assert literal.strip(), f"{rule.code} template {name!r} is only fields: {template!r}"
