"""Draw the blind precision sample of docs/precision.md.

Lints a corpus with the default selection (``stridecheck lint --format json``), keeps the
findings of the given rules, and draws a fixed-seed random sample of each: every finding when a
rule has no more than ``--per-rule``. Prints one Markdown table per rule (id, location, message)
for a judge to fill in the verdict and its reason.

    ../shared/tools/build-corpus /tmp/corpus
    python scripts/precision_sample.py /tmp/corpus --seed 2026 --per-rule 25 > sample.md
    python scripts/precision_sample.py /tmp/corpus --under vllm-0.33.0 --per-rule 0 > vllm.md

A finding's place in the draw is a hash of the seed and its location, so after a rule change the
findings still reported keep their places and only those that enter the sample need judging.
``--per-rule 0`` keeps every finding. ``--findings F.json`` reads a lint run saved before (the
JSON output of the same command) instead of linting again.
"""

from __future__ import annotations

import argparse
import json
import hashlib
import subprocess
import sys
from collections import Counter

RULES = ("SC001", "SC002", "SC003", "SC004", "SC005", "SC007")


def lint(corpus: str) -> list[dict]:
    run = subprocess.run(
        [sys.executable, "-m", "stridecheck", "lint", "--no-cache", "--exit-zero", "--format", "json", "."],
        cwd=corpus, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(run.stdout)


def rank(f: dict, seed: int) -> str:
    """A finding's place in the draw: a hash of the seed and where the finding is. A rule change
    that removes or adds findings leaves the others' places as they were, so a judged sample
    stays judged and only what enters it needs reading."""
    return hashlib.sha256(f"{seed}:{f['code']}:{f['path']}:{f['line']}:{f['column']}".encode()).hexdigest()


def draw(findings: list[dict], rules, per_rule: int, seed: int, under: str | None = None) -> dict[str, list[dict]]:
    """The sample per rule: the rule's findings ordered by :func:`rank`, the first ``per_rule``
    kept (all when ``per_rule`` is 0)."""
    out = {}
    for code in rules:
        mine = sorted(
            (f for f in findings if f["code"] == code and (under is None or f["path"].startswith(under))),
            key=lambda f: rank(f, seed),
        )
        out[code] = mine if per_rule == 0 else mine[:per_rule]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", help="the corpus folder (from ../shared/tools/build-corpus)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-rule", type=int, default=25, help="sample size per rule; 0 keeps every finding")
    ap.add_argument("--rules", default=",".join(RULES), help="comma-separated rule codes")
    ap.add_argument("--under", help="keep findings whose path starts with this (a release's folder)")
    ap.add_argument("--findings", help="a saved JSON lint run of the corpus, instead of linting it")
    args = ap.parse_args(argv)
    if args.findings:
        with open(args.findings, encoding="utf-8") as f:
            findings = json.load(f)
    else:
        findings = lint(args.corpus)
    # The default selection only: a saved run made with --preview marks preview findings "info".
    findings = [f for f in findings if f.get("severity") != "info"]
    counts = Counter(f["code"] for f in findings if args.under is None or f["path"].startswith(args.under))
    print(f"Default-tier findings: {', '.join(f'{c} {n}' for c, n in sorted(counts.items())) or 'none'}\n")
    for code, sample in draw(findings, args.rules.split(","), args.per_rule, args.seed, args.under).items():
        print(f"## {code}: {len(sample)} of {counts.get(code, 0)}\n")
        print("| id | finding | verdict | reason |\n|---|---|---|---|")
        for i, f in enumerate(sample):
            msg = f["message"].replace("|", "\\|")
            print(f"| {i} | `{f['path']}:{f['line']}` {msg} | | |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
