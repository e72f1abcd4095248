"""The test suite's own setup (tests/conftest.py): the shared layer skips with its reason when
../shared is absent and fails when CI requires it; plain pytest runs in parallel; slow tests are
left out unless asked for."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tests import conftest

REPO = Path(__file__).resolve().parent.parent


def _pytest(*args, **env) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("STRIDECHECK_", "PYTEST_"))}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO, env=full_env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_without_the_folder_the_layer_is_skipped_with_its_reason(tmp_path):
    run = _pytest("-n", "0", "-rs", "tests/lint/test_cases.py", STRIDECHECK_SHARED=str(tmp_path / "nowhere"))
    assert run.returncode == 0, run.stdout[-2000:]
    assert "skipped: ../shared not found" in run.stdout and "set STRIDECHECK_SHARED=" in run.stdout
    assert " passed" not in run.stdout.splitlines()[-1]  # every test of the file is in the layer


def test_ci_requires_the_folder(tmp_path):
    run = _pytest(
        "-n", "0", "tests/lint/test_cases.py",
        STRIDECHECK_SHARED=str(tmp_path / "nowhere"), STRIDECHECK_REQUIRE_SHARED="1",
    )  # fmt: skip
    assert run.returncode == 1 and "STRIDECHECK_REQUIRE_SHARED is set but ../shared not found" in run.stdout


@pytest.mark.slow  # three pytest sessions, one of them starting workers
def test_plain_pytest_is_parallel_and_n0_is_not():
    parallel = _pytest("tests/test_suite_setup.py::test_names_computed_from_the_shared_paths_count")
    single = _pytest("-n", "0", "tests/test_suite_setup.py::test_names_computed_from_the_shared_paths_count")
    assert parallel.returncode == single.returncode == 0, parallel.stdout + single.stdout
    assert ("workers" in parallel.stdout) == ((os.cpu_count() or 1) > 1)
    assert "workers" not in single.stdout
    no_xdist = _pytest("-p", "no:xdist", "tests/test_suite_setup.py::test_names_computed_from_the_shared_paths_count")
    assert no_xdist.returncode == 0, no_xdist.stdout + no_xdist.stderr


def test_slow_tests_are_deselected_unless_asked_for():
    default = _pytest("-n", "0", "--co", "-q", "tests/lint/test_precommit.py")
    slow = _pytest("-n", "0", "--co", "-q", "-m", "slow", "tests/lint/test_precommit.py")
    everything = _pytest("-n", "0", "--co", "-q", "-m", "", "tests/lint/test_precommit.py")
    named = _pytest("-n", "0", "--co", "-q", "tests/lint/test_precommit.py::test_hook_fails_on_the_bug_and_passes_on_the_fix")
    assert "test_hook_fails_on_the_bug_and_passes_on_the_fix" not in default.stdout
    for run in (slow, everything, named):
        assert "test_hook_fails_on_the_bug_and_passes_on_the_fix" in run.stdout, run.stdout


def test_names_computed_from_the_shared_paths_count():
    source = (
        "from tests.conftest import CASES\n"
        "CASE_FILES = sorted(CASES.glob('*.py'))\n"
        "NAMES = [p.name for p in CASE_FILES]\n"
        "OTHER = [1, 2]\n"
        "def reads():\n    return [n for n in NAMES]\n"
        "def helper_reads():\n    return reads()\n"
        "def does_not():\n    return OTHER\n"
    )
    module = types.ModuleType("fake_test_module")
    exec(compile(source, "fake_test_module", "exec"), module.__dict__)
    original = conftest.inspect.getsource
    conftest.inspect.getsource = lambda m: source if m is module else original(m)
    try:
        assert conftest._derived_names(module) == {"CASES", "CASE_FILES", "NAMES"}
    finally:
        conftest.inspect.getsource = original
    assert conftest._reads_shared(module.reads, module, set())
    assert conftest._reads_shared(module.helper_reads, module, set())
    assert not conftest._reads_shared(module.does_not, module, set())


@pytest.mark.parametrize("folder", conftest.shared_files(conftest.CASES)[:1])
def test_a_parametrization_over_the_folder_is_in_the_layer(folder, request):
    assert request.node.get_closest_marker("shared") is not None


def test_every_slow_test_named_in_conftest_exists():
    import ast as python_ast

    for node_id in conftest.SLOW_TESTS:
        path, name = node_id.split("::")
        tree = python_ast.parse((REPO / path).read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, python_ast.FunctionDef)}
        assert name in functions, f"{node_id}: no such test (renamed? drop or fix the SLOW_TESTS entry)"
