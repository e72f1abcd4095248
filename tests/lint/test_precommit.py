"""The pre-commit hook, run by real `pre-commit try-repo` against a throwaway repository: it fails
on a buggy kernel and passes once the kernel is fixed.

pre-commit builds the hook's environment from this repository (HEAD plus uncommitted changes)
with pip, so the first run needs the package index; later runs reuse pre-commit's cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .lint_support import write

REPO = Path(__file__).resolve().parents[2]
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")

# The founding bug, in a few lines: each draft step's row of the cache is addressed by the
# logical width `n_vocab` instead of the cache's stride for that dimension.
BUGGY = '''\
import triton
import triton.language as tl


@triton.jit
def store_step(cache_ptr, cache_stride_req, cache_stride_step, step_ptr, logits_ptr, logits_stride,
               n_vocab, BLOCK: tl.constexpr):
    req = tl.program_id(0).to(tl.int64)
    step = tl.load(step_ptr + req).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_vocab
    vals = tl.load(logits_ptr + req * logits_stride + offs, mask=mask)
    tl.store(cache_ptr + req * cache_stride_req + step * n_vocab + offs, vals, mask=mask)
'''
FIXED = BUGGY.replace("step * n_vocab", "step * cache_stride_step")


def _git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def _try_repo(cwd):
    env = {**os.environ, "PRE_COMMIT_COLOR": "never", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(
        [str(PRE_COMMIT), "try-repo", str(REPO), "stridecheck", "--all-files", "--verbose"],
        cwd=cwd, capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_hook_fails_on_the_bug_and_passes_on_the_fix(tmp_path):
    assert shutil.which("git"), "git is needed by pre-commit"
    project = tmp_path / "project"
    write(project / "kernels" / "sampler.py", BUGGY)
    write(project / "notes.txt", "no python here\n")
    _git(project, "init", "-q")
    _git(project, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", ".")
    _git(project, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "buggy")

    failing = _try_repo(project)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "SC001" in failing.stdout and "kernels/sampler.py" in failing.stdout

    write(project / "kernels" / "sampler.py", FIXED)
    _git(project, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-am", "fixed")
    passing = _try_repo(project)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "SC001" not in passing.stdout
