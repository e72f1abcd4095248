"""SC001 on a packed tensor stepped by a size: the size is the evidence. A caller that writes a
number for it (`top_k = 5` over rows of 8) shows it is not the tensor's extent, and the finding is
the default tier's; a size that reaches the launch from callers computing it (`EM =
ids.shape[1] if ... else n * block`) shows nothing either way, and the finding is preview only.
The tensor is contiguous in both: packing makes the step wrong exactly when the size is not its
extent."""

from __future__ import annotations

from tests.lint.test_precision_kinds import lint

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _pick_kernel(best_ptr, cand_ptr, cand_stride_req, parent_ptr, top_k, BLOCK: tl.constexpr):
    req = tl.program_id(0).to(tl.int64)
    beam = tl.load(parent_ptr + req).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    row = cand_ptr + req * cand_stride_req + beam * top_k
    tl.store(best_ptr + req, tl.max(tl.load(row + offs, mask=offs < top_k, other=0.0), axis=0))


def _pick(cand, parent, top_k):
    best = torch.empty(cand.shape[0])
    _pick_kernel[(cand.shape[0],)](best, cand, cand.stride(0), parent, top_k, BLOCK=16)
    return best
'''
STEP_LINE = 12


def _ops(caller: str) -> dict[str, str]:
    return {"pkg/__init__.py": "", "pkg/ops.py": KERNEL + caller}


def test_a_number_the_caller_writes_for_the_size_is_evidence(tmp_path):
    caller = '''

def run():
    top_k = 5
    cand = torch.randn(3, 4, 8)
    cand[..., top_k:] = 100.0  # writes into the tensor: neither name becomes a number
    return _pick(cand, torch.tensor([1, 3, 2]), top_k)
'''
    assert lint(tmp_path, _ops(caller), codes=("SC001",)) == [("ops.py", STEP_LINE, "SC001")]


def test_a_size_the_callers_compute_is_preview_only(tmp_path):
    caller = '''

def run(ids, n, block, parent):
    top_k = ids.shape[1] if ids is not None else n * block
    cand = torch.zeros(3, 4, top_k)
    return _pick(cand, parent, top_k)
'''
    files = _ops(caller)
    assert lint(tmp_path, files, codes=("SC001",)) == []
    assert lint(tmp_path, files, preview=True, codes=("SC001",)) == [("ops.py", STEP_LINE, "SC001")]
