"""Suite-wide setup.

* Triton kernels run on the CPU through the interpreter when CUDA is absent. TRITON_INTERPRET
  must be set before triton is first imported, so it is decided here from the driver's presence
  (nvidia-smi / /dev/nvidia0), not by importing torch. Workers of pytest-xdist import this file
  too (and inherit the variable), so they run interpreted as well.
* Plain ``pytest`` runs in parallel, one worker per CPU core (pytest-xdist's ``-n auto``). An
  explicit ``-n N`` wins; ``-n 0`` or ``-p no:xdist`` runs everything in this process, for
  debugging (``--pdb`` implies it).
* ``slow`` tests are deselected by default, unless the command line has a ``-m`` (CI runs them
  with ``pytest -m slow``; ``pytest -m ""`` runs everything) or names the test by its node id
  (``pytest tests/lint/test_precommit.py::test_hook_fails_on_the_bug_and_passes_on_the_fix``).
* The extra layer: tests that read the project's shared folder (``../shared`` beside the
  checkout, or ``$STRIDECHECK_SHARED``) carry the ``shared`` marker. Without the folder they are
  skipped with a word saying so; with ``STRIDECHECK_REQUIRE_SHARED=1`` (CI) they fail instead.
  A test is in the layer when it is marked ``@pytest.mark.shared``, or when its code (or a
  module-level function it calls) names ``SHARED``, ``CASES`` or ``REAL_BUGS`` from this module
  or a module-level name computed from them (``CASE_FILES = sorted(CASES.glob("*.py"))``), or
  when it is parametrized with a path inside the folder.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import types
from functools import cache
from pathlib import Path

import pytest

if "TRITON_INTERPRET" not in os.environ:
    has_cuda = Path("/dev/nvidia0").exists() or shutil.which("nvidia-smi") is not None
    if not has_cuda:
        os.environ["TRITON_INTERPRET"] = "1"

REPO = Path(__file__).resolve().parent.parent

# The project's shared folder lives beside the checkout; tests read it there, in place.
SHARED = Path(os.environ.get("STRIDECHECK_SHARED") or REPO.parent / "shared")
CASES = SHARED / "cases"
REAL_BUGS = SHARED / "real-bugs"
REQUIRE_SHARED = os.environ.get("STRIDECHECK_REQUIRE_SHARED", "") not in ("", "0")

# A name a parametrization uses when the folder is absent, so the test is still collected (and
# then skipped, with the reason below) instead of vanishing into "got empty parameter set".
MISSING = SHARED / "<missing>"

_SHARED_NAMES = frozenset({"SHARED", "CASES", "REAL_BUGS"})

# Interpreter-run kernel tests that take more than ~30 s of CPU each on this project's 2-core
# machines (measured with process time, 2026-12-02): marked slow here, by name, so that their
# files stay as their owners write them; CI runs them (`pytest -m slow`). Drop an entry when its
# test gets fast; tests/test_suite_setup.py fails on an entry that names no test.
SLOW_TESTS = (
    "tests/kernels/test_gumbel_sample.py::test_block_skip_draws_what_the_full_loop_draws",  # 70-82 s
    "tests/kernels/test_gumbel_sample.py::test_slot_merge_draws_what_the_atomic_merge_draws",  # 56 s
    "tests/kernels/test_resample.py::test_exchange_path_draws_the_two_launch_tokens",  # 87 s
    "tests/kernels/test_resample.py::test_draw_block_skip_draws_what_the_full_draw_draws",  # 150-215 s wall under load
    "tests/kernels/test_resample.py::test_row_log_sum_exp_is_the_float64_log_sum_exp",  # 90 s wall under load
)


def shared_missing() -> str | None:
    """Why the shared layer cannot run (None when it can)."""
    if SHARED.is_dir():
        return None
    return (
        f"../shared not found (looked for {SHARED}; set STRIDECHECK_SHARED=/path/to/shared to run "
        "the shared layer)"
    )


def shared_files(folder: Path, pattern: str = "*.py") -> list[Path]:
    """The files of a shared folder, for ``parametrize``: sorted, or ``[MISSING]`` when absent."""
    files = sorted(folder.glob(pattern)) if folder.is_dir() else []
    return files or [MISSING]


# ----------------------------------------------------------------------------- parallel runs


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # Only reached for initial conftests (this file is one for every run under tests/).
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ[_SLOW_POLICY] = json.dumps(_slow_policy(config))
    option = config.option
    if not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if getattr(option, "numprocesses", 0) is not None or getattr(option, "usepdb", False):
        return  # an explicit -n, or a debugging session
    if option.collectonly or getattr(option, "tx", None):
        return
    workers = config.hook.pytest_xdist_auto_num_workers(config=config)
    option.numprocesses = workers
    if workers > 1:
        if option.dist == "no":
            option.dist = "load"
        option.tx = ["popen"] * workers
    else:
        option.dist = "no"
        option.tx = []


# ----------------------------------------------------------------------------- the shared layer


@cache
def _derived_names(module: types.ModuleType) -> frozenset[str]:
    """The shared paths' names as ``module`` imports them, and the module-level names it computes
    from them (``CASE_FILES = sorted(CASES.glob("*.py"))``), to a fixed point."""
    names = {n for n in _SHARED_NAMES if getattr(module, n, None) in (SHARED, CASES, REAL_BUGS)}
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return frozenset(names)
    assignments = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            assignments.append((bound, used))
    grew = True
    while grew:
        grew = False
        for bound, used in assignments:
            if used & names and not bound <= names:
                names |= bound
                grew = True
    return frozenset(names)


def _reads_shared(function, module: types.ModuleType | None, seen: set) -> bool:
    """Whether ``function``'s code, or a module-level function of ``module`` it names, names one
    of the shared paths or a name computed from them (followed transitively, each function
    once)."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    names = set(code.co_names)
    stack = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while stack:  # nested functions and comprehensions
        inner = stack.pop()
        names.update(inner.co_names)
        stack.extend(c for c in inner.co_consts if isinstance(c, types.CodeType))
    if module is None:
        return False
    if names & _derived_names(module):
        return True
    for name in names:
        value = getattr(module, name, None)
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            if _reads_shared(value, module, seen):
                return True
    return False


def _inside_shared(value) -> bool:
    if isinstance(value, Path):
        try:
            value.resolve().relative_to(SHARED.resolve())
            return True
        except ValueError:
            return value == MISSING
    return False


def _parametrized_from_shared(item: pytest.Item, module: types.ModuleType | None) -> bool:
    """Whether a ``parametrize`` of ``item`` takes its values from a module-level name computed
    from the shared paths (which is empty, not a list of paths, when the folder is absent)."""
    if module is None:
        return False
    derived = [getattr(module, n, None) for n in _derived_names(module)]
    return any(
        len(mark.args) > 1 and any(mark.args[1] is value for value in derived if isinstance(value, (list, tuple)))
        for mark in item.iter_markers("parametrize")
    )


def _slow_policy(config: pytest.Config) -> dict:
    """Whether the command line keeps the slow tests (it has a ``-m``, even ``-m ""``), and the
    node ids it names. Decided where the command line is (the controller), handed to xdist's
    workers through the environment they inherit."""
    if os.environ.get("PYTEST_XDIST_WORKER") and _SLOW_POLICY in os.environ:
        return json.loads(os.environ[_SLOW_POLICY])
    args = list(config.invocation_params.args) + os.environ.get("PYTEST_ADDOPTS", "").split()
    keep = any(a == "-m" or (a.startswith("-m") and not a.startswith("--")) or a.startswith("--markexpr") for a in args)
    return {"keep": keep, "named": [a for a in config.args if "::" in a]}


_SLOW_POLICY = "_STRIDECHECK_TESTS_SLOW_POLICY"


def _mark_slow_by_name(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("[")[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


def _deselect_slow(config: pytest.Config, items: list[pytest.Item]) -> None:
    policy = _slow_policy(config)
    if policy["keep"]:
        return
    named = policy["named"]
    keep, slow = [], []
    for item in items:
        explicit = any(item.nodeid == a or item.nodeid.startswith(a + "[") for a in named)
        (slow if item.get_closest_marker("slow") is not None and not explicit else keep).append(item)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = keep


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _mark_slow_by_name(items)
    _deselect_slow(config, items)
    for item in items:
        if item.get_closest_marker("shared") is not None:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        function = getattr(item, "function", None)
        module = getattr(item, "module", None)
        if (
            any(_inside_shared(v) for v in params.values())
            or _parametrized_from_shared(item, module)
            or (function is not None and _reads_shared(function, module, set()))
        ):
            item.add_marker(pytest.mark.shared)
            # A parametrization over the absent folder's files is empty: say why it is skipped
            # (the shared layer's word) instead of pytest's "got empty parameter set".
            item.own_markers[:] = [
                m for m in item.own_markers
                if not (m.name == "skip" and str(m.kwargs.get("reason", "")).startswith("got empty parameter set"))
            ]


@pytest.fixture(autouse=True)
def _shared_layer(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("shared") is None:
        return
    reason = shared_missing()
    if reason is None:
        return
    if REQUIRE_SHARED:
        pytest.fail(f"STRIDECHECK_REQUIRE_SHARED is set but {reason}", pytrace=False)
    pytest.skip(f"skipped: {reason}")
