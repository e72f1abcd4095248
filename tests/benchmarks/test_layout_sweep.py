"""benchmarks/layout_sweep.py's harness on the CPU: its records, summary and command line, with
the torch-function controls (Liger-Kernel and FlagGems run on the GPU machine)."""

import json
import os
import subprocess
import sys

import pytest

from tests.benchmarks import ROOT, load_benchmark

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def sweep():
    return load_benchmark("layout_sweep")


@pytest.fixture(scope="module")
def control_ops(sweep):
    return [sweep.run_op("controls", op, "cpu", True) for op in ("softmax", "flat_mul")]


def test_a_correct_op_records_no_failure_and_agrees_with_its_reference(control_ops):
    softmax = control_ops[0]
    assert softmax["error"] is None and softmax["reference_on_contiguous"] == "agrees"
    assert {v["verdict"] for v in softmax["variants"]} == {"passed", "not_applicable"}


def test_an_op_ignoring_strides_records_confirmed_failures(control_ops):
    flat_mul = control_ops[1]
    failed = {(v["argument"], v["layout"]): v for v in flat_mul["variants"] if v["verdict"] == "failed"}
    assert {("a", "padded_last"), ("b", "padded_last"), ("a", "transposed")} <= set(failed)
    assert all(v["confirmed"] and v["reference_agrees_with"] == "baseline" for v in failed.values())
    assert failed["a", "padded_last"]["strides"] == [9, 1]


def test_the_summary_holds_the_expectations(sweep, control_ops):
    summary = sweep.summarise(control_ops, ["controls"])
    assert summary["expectations_met"] and summary["expected_bugs_run"] == ["controls.flat_mul"]
    assert summary["counts"]["failed"] == len(summary["findings"]) > 0


def test_a_failure_on_an_op_expected_clean_breaks_the_expectations(sweep, control_ops):
    softmax, flat_mul = control_ops
    renamed = dict(flat_mul, op="softmax_twin")  # the same failures on an op with no expected bug
    summary = sweep.summarise([softmax, renamed], ["controls"])
    assert not summary["expectations_met"]
    assert summary["expected_bugs_not_run"] == ["controls.flat_mul"]
    assert {u["op"] for u in summary["unexpected_failures"]} == {"softmax_twin"}


def test_an_op_that_could_not_run_breaks_the_expectations(sweep, control_ops):
    broken = {"library": "controls", "op": "softmax", "variants": [], "error": "RuntimeError: no", "seconds": 0.0}
    summary = sweep.summarise([broken, control_ops[1]], ["controls"])
    assert summary["ops_not_run"] == ["controls.softmax"] and not summary["expectations_met"]


def test_a_missed_expected_bug_breaks_the_expectations(sweep, control_ops):
    quiet = dict(control_ops[1], variants=[v for v in control_ops[1]["variants"] if v["verdict"] != "failed"])
    summary = sweep.summarise([control_ops[0], quiet], ["controls"])
    assert summary["expected_bugs_missed"] == ["controls.flat_mul"] and not summary["expectations_met"]


def test_the_command_writes_the_records_and_the_table(tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "layout_sweep.py"), "--cpu", "--only", "controls", "--out", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "EXPECTATIONS MET" in done.stdout
    data = json.loads((tmp_path / "layout_sweep.json").read_text())
    assert data["meta"]["device"] == "CPU (Triton interpreter)" and data["meta"]["versions"]["controls"]
    row = next(r for r in data["records"] if r["verdict"] == "failed")
    assert {"library", "version", "op", "argument", "layout", "verdict", "confirmed", "reference_agrees_with"} <= set(row)
    table = (tmp_path / "layout_sweep.md").read_text()
    assert "| controls | flat_mul | 2 | 8 (8) |" in table and "Expectations met." in table
    (history,) = (tmp_path / "history.jsonl").read_text().splitlines()
    line = json.loads(history)
    assert line["source"] == "layout_sweep.json" and line["rows"] == len(data["records"])
    assert "expected bugs found and confirmed: 1/1 (0 not run)" in line["headline"]
