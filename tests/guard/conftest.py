"""Shared fixtures of the guard's tests: the device kernels run on, warn-mode logs, layouts for
property tests, the explaining checker's call count, and the shared bug reproductions."""

from __future__ import annotations

import importlib.util
import logging
import sys
import time

import pytest
import torch
from hypothesis import strategies as st

import stridecheck.guard.spec_check as spec_check
from stridecheck import StrideGuardError
from tests.conftest import CASES

# Launches run where Triton runs: the CPU interpreter (tests/conftest.py) or a GPU.
DEV = "cuda" if torch.cuda.is_available() else "cpu"


class SlowSet(set):
    """A set whose membership test yields the GIL, widening any check-then-add race."""

    def __contains__(self, key):
        result = super().__contains__(key)
        time.sleep(0.005)
        return result


def refusal(launch, *args, **kwargs) -> str:
    """The message of the StrideGuardError ``launch(*args, **kwargs)`` raises (fails if none)."""
    with pytest.raises(StrideGuardError) as info:
        launch(*args, **kwargs)
    return str(info.value)


@pytest.fixture
def warned(caplog):
    """The messages the guard logs in warn mode, as a list filled while the test runs."""
    caplog.set_level(logging.WARNING, logger="stridecheck.guard")

    class _Messages(list):
        def __call__(self):
            return [r.getMessage() for r in caplog.records if r.name == "stridecheck.guard"]

    return _Messages()


@pytest.fixture
def warn_mode(monkeypatch):
    """STRIDECHECK_GUARD=warn for guards built inside the test."""
    monkeypatch.setenv("STRIDECHECK_GUARD", "warn")


@pytest.fixture
def slow_path_calls(monkeypatch):
    """Counts calls that a spec contract's fast detector hands to the explaining checker."""
    calls = []
    real = spec_check.explain

    def counting(contract, values):
        calls.append(contract.func_name)
        return real(contract, values)

    monkeypatch.setattr(spec_check, "explain", counting)
    return calls


def any_layout(ndim: int, max_size: int = 4, max_stride: int = 12):
    """Tensors of arbitrary layouts (stride 0, overlapping, unit or not inner stride, storage
    offsets), usually of ``ndim`` dims: views of one buffer through ``as_strided``."""

    @st.composite
    def draw_layout(draw):
        nd = draw(st.one_of(st.just(ndim), st.just(ndim), st.integers(0, 3)))
        shape = [draw(st.integers(0, max_size)) for _ in range(nd)]
        strides = [draw(st.integers(0, max_stride)) for _ in range(nd)]
        if nd and draw(st.booleans()):
            strides[-1] = 1
        offset = draw(st.integers(0, 3))
        need = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0)
        return torch.zeros(need).as_strided(shape, strides, offset)

    return draw_layout()


def packed_layout(shape, dtype=torch.float32, max_pad: int = 3):
    """Valid tensors of ``shape``: a permuted, padded, offset view of one buffer (no overlap, unit
    inner stride): what a caller legitimately passes."""

    @st.composite
    def draw_layout(draw):
        nd = len(shape)
        outer = draw(st.permutations(list(range(nd - 1)))) if nd > 1 else []
        strides = [0] * nd
        extent = 1
        for d in ([nd - 1] if nd else []) + list(reversed(outer)):
            strides[d] = extent
            extent *= max(shape[d], 1) + draw(st.integers(0, max_pad))
        offset = draw(st.integers(0, 4))
        need = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0)
        return torch.zeros(need, dtype=dtype).as_strided(tuple(shape), tuple(strides), offset)

    return draw_layout()


@pytest.fixture(scope="session")
def shared_cases():
    """The project's shared bug reproductions (``../shared/cases``); the test is skipped, saying
    so, when the folder is not beside the checkout (a fresh clone)."""
    if not CASES.is_dir():
        pytest.skip(f"../shared/cases is not beside this checkout ({CASES}): the shared reproductions were not run")
    return CASES


def load_case(path):
    """Import one shared case file as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"_guard_case_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
