"""Beam search keeps `top_k` candidate scores per (request, beam) in `cand[num_reqs, num_beams,
width]`, whose rows are allocated wider than `top_k` for aligned rows. Each request continues
from one parent beam (a loaded index); a `@triton.jit` helper reads that beam's candidates and
steps to the beam by `top_k`, the count of candidates, where the buffer's stride(1) belongs. The
kernel threads the request stride through to it. Beam 0 reads right; later beams read the padding
and the neighbouring beam's scores.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _load_beam(cand_ptr, cand_stride_req, req, beam, top_k, offs):
    row = cand_ptr + req * cand_stride_req + beam * top_k  # expect: SC001
    return tl.load(row + offs, mask=offs < top_k, other=float("-inf"))


@triton.jit
def _best_of_parent_kernel(
    best_ptr,  # [num_reqs], float32
    cand_ptr,  # [num_reqs, num_beams, width]
    cand_stride_req,
    parent_ptr,  # [num_reqs], the beam each request continues from
    top_k,
    BLOCK: tl.constexpr,
):
    req = tl.program_id(0).to(tl.int64)
    beam = tl.load(parent_ptr + req).to(tl.int64)
    scores = _load_beam(cand_ptr, cand_stride_req, req, beam, top_k, tl.arange(0, BLOCK))
    tl.store(best_ptr + req, tl.max(scores, axis=0))


def best_of_parent(cand, parent, top_k):
    num_reqs, num_beams, width = cand.shape
    assert width >= top_k
    best = torch.empty(num_reqs, dtype=torch.float32)
    _best_of_parent_kernel[(num_reqs,)](best, cand, cand.stride(0), parent, top_k, BLOCK=triton.next_power_of_2(top_k))
    return best


def run():
    top_k = 5
    cand = torch.randn(3, 4, 8)
    cand[..., top_k:] = 100.0  # the padding: a read of it shows in the maximum
    parent = torch.tensor([1, 3, 2])
    return torch.equal(best_of_parent(cand, parent, top_k), cand[torch.arange(3), parent, :top_k].amax(dim=-1))
