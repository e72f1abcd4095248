"""Speculative-decoding resampling in one page: the readable twin of :func:`guarded_kernels.resample`.

After the draft tokens of a request have been checked, one token is drawn from the first rejected
draft's row, or from the bonus row after the last draft when every draft was accepted:

* bonus row: a draw from the target distribution ``p = softmax(target / T)``;
* rejected draft, with draft logits: a draw from the residual ``max(p - q, 0)`` (normalised),
  ``q = softmax(draft / T)``, which with the accept/reject step makes the output distributed as
  ``p`` (Leviathan et al., 2023; Chen et al., 2023). If it has no mass (``p == q``) the draw is
  from ``p``;
* rejected draft, one-hot drafts (no draft logits): a draw from ``p`` without the rejected token;
* temperature 0: ``torch.argmax`` of the row.

One program per request. Residual rows first compute the two log-sum-exps (a pass over the
target row and one over the draft row), then one pass over the row draws by Gumbel-max,
``argmax_i(log2 w_i + noise_i)`` for the weights ``w``, with the noise of
:func:`guarded_kernels.gumbel_sample` for that row (:mod:`guarded_kernels.noise`, verification
stream, keyed by ``(seed, pos, token id)``). Bonus, one-hot and greedy rows therefore draw, bit for
bit, the tokens of the tuned :func:`guarded_kernels.resample`; residual rows the same tokens
wherever float32 rounding of the log-sum-exps (summed here in another order) cannot reorder two
keys. Every tensor is addressed through its own strides; :func:`stridecheck.stride_guard` refuses
the layouts the kernel cannot address before the launch.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from guarded_kernels._interpreter import quiet_interpreter
from guarded_kernels.noise import VERIFY_STREAM, neg_log2_exponential, row_key, token_hash

from stridecheck import Tensor, stride_guard

# A module global read inside a kernel must be a tl.constexpr (the interpreter reads any global;
# the compiler refuses others).
_VERIFY: tl.constexpr = tl.constexpr(VERIFY_STREAM)

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def log2_sum_exp2(row_ptr, n, scale, BLOCK: tl.constexpr):
    """``log2(sum_i 2**(x_i * scale))`` over a row's first ``n`` columns: per lane a running maximum
    ``m`` and a sum of ``2**(x - m)`` rescaled when ``m`` grows, then the lanes combined."""
    lanes = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        col = start + lanes
        x = tl.load(row_ptr + col, mask=col < n, other=float("-inf")).to(tl.float32) * scale
        m_new = tl.maximum(m, x)
        ref = tl.where(m_new == float("-inf"), 0.0, m_new)  # a lane of -inf only keeps s = 0
        s = s * tl.exp2(m - ref) + tl.exp2(x - ref)
        m = m_new
    mx = tl.max(m, 0)
    ref = tl.where(mx == float("-inf"), 0.0, mx)
    return mx + tl.log2(tl.sum(s * tl.exp2(m - ref), 0))


@triton.jit
def resample_reference_kernel(
    target_ptr, target_stride_0,  # [N, V], unit inner stride
    draft_ptr, draft_stride_0, draft_stride_1,  # [R, S, >= V_d], unit inner stride (HAS_DRAFT)
    draft_tokens_ptr, draft_tokens_stride_0, draft_tokens_stride_1,  # [Q, S] int (one-hot drafts)
    num_accepted_ptr, num_accepted_stride_0,  # [Q] int
    cu_num_logits_ptr, cu_num_logits_stride_0,  # [Q + 1] int
    idx_mapping_ptr, idx_mapping_stride_0,  # [Q] int: request -> request state
    temperature_ptr, temperature_stride_0,  # [R] float32
    seed_ptr, seed_stride_0,  # [R] int64
    pos_ptr, pos_stride_0,  # [N] int64
    out_ptr, out_stride_0,  # [Q] int64
    vocab_size, draft_vocab_size,
    HAS_DRAFT: tl.constexpr, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr,
):
    req = tl.program_id(0).to(tl.int64)
    first = tl.load(cu_num_logits_ptr + req * cu_num_logits_stride_0).to(tl.int64)
    last = tl.load(cu_num_logits_ptr + (req + 1) * cu_num_logits_stride_0).to(tl.int64)
    accepted = tl.load(num_accepted_ptr + req * num_accepted_stride_0).to(tl.int64)
    row = first + accepted  # the first rejected draft's row, or the bonus row
    slot = tl.load(idx_mapping_ptr + req * idx_mapping_stride_0).to(tl.int64)
    temp = tl.load(temperature_ptr + slot * temperature_stride_0)
    greedy = temp == 0.0
    scale = LOG2E / tl.where(greedy, 1.0, temp)
    rejecting = (accepted < last - first - 1) & (temp != 0.0)
    target_row = target_ptr + row * target_stride_0
    draft_row = target_row  # read only with HAS_DRAFT
    lse_t = tl.zeros((), tl.float32)
    lse_d = tl.zeros((), tl.float32)
    rejected = tl.full((), -1, tl.int64)
    if HAS_DRAFT:
        draft_row = draft_ptr + slot * draft_stride_0 + accepted * draft_stride_1
        if rejecting:
            lse_t = log2_sum_exp2(target_row, vocab_size, scale, BLOCK)
            lse_d = log2_sum_exp2(draft_row, draft_vocab_size, scale, BLOCK)
    else:
        if rejecting:
            rejected = tl.load(draft_tokens_ptr + req * draft_tokens_stride_0 + accepted * draft_tokens_stride_1)
    key = row_key(tl.load(seed_ptr + slot * seed_stride_0), tl.load(pos_ptr + row * pos_stride_0), _VERIFY)
    lanes = tl.arange(0, BLOCK)
    # Per lane: the draw's best key and column, p's (the fallback when the residual has no
    # mass), and greedy's first NaN.
    best, best_col = tl.full((BLOCK,), float("-inf"), tl.float32), lanes
    best_p, best_p_col = tl.full((BLOCK,), float("-inf"), tl.float32), lanes
    first_nan = tl.full((BLOCK,), vocab_size, tl.int32)
    for start in range(0, vocab_size, BLOCK):
        col = start + lanes
        x = tl.load(target_row + col, mask=col < vocab_size, other=float("-inf")).to(tl.float32)
        noise = neg_log2_exponential(token_hash(key, col), FAST_LOG, False)
        p_key = x * scale + noise
        if HAS_DRAFT:
            # q is zero beyond V_d (the draft row may be wider: it is read only to V_d).
            d = tl.load(draft_row + col, mask=col < draft_vocab_size, other=float("-inf")).to(tl.float32)
            p = tl.exp2(x * scale - lse_t)
            q = tl.exp2(d * scale - lse_d)
            draw_key = tl.where(rejecting, tl.where(p > q, tl.log2(p - q) + noise, float("-inf")), p_key)
        else:
            draw_key = tl.where(col == rejected, float("-inf"), p_key)
        k = tl.where(greedy, x, draw_key)
        better = k > best  # strictly: the lowest column wins ties, NaN never wins
        best, best_col = tl.where(better, k, best), tl.where(better, col, best_col)
        better = p_key > best_p
        best_p, best_p_col = tl.where(better, p_key, best_p), tl.where(better, col, best_p_col)
        first_nan = tl.minimum(first_nan, tl.where(x != x, col, vocab_size))
    m = tl.max(best, 0)
    token = tl.min(tl.where(best == m, best_col, vocab_size), 0)
    # No residual mass (p == q, or NaN logits, which make the log-sum-exps NaN): a draw from p.
    m_p = tl.max(best_p, 0)
    token_p = tl.min(tl.where(best_p == m_p, best_p_col, vocab_size), 0)
    token = tl.where(rejecting & (m == float("-inf")), token_p, token)
    nan_col = tl.min(first_nan, 0)
    token = tl.where(greedy & (nan_col < vocab_size), nan_col, token)
    tl.store(out_ptr + req * out_stride_0, token.to(tl.int64))


@stride_guard(
    target_logits=Tensor("N V", dtype=(torch.float32, torch.bfloat16, torch.float16)),
    draft_logits=Tensor("R * >=Vd", dtype=(torch.float32, torch.bfloat16, torch.float16)),
    draft_tokens=Tensor("Q *", dtype=(torch.int32, torch.int64), inner_stride=None),
    num_accepted=Tensor("Q", dtype=(torch.int32, torch.int64), inner_stride=None),
    cu_num_logits=Tensor("*", dtype=(torch.int32, torch.int64), inner_stride=None),
    idx_mapping=Tensor("Q", dtype=(torch.int32, torch.int64), inner_stride=None),
    temperature=Tensor("R", dtype=torch.float32, inner_stride=None),
    seed=Tensor("R", dtype=torch.int64, inner_stride=None),
    pos=Tensor("N", dtype=torch.int64, inner_stride=None),
    draft_vocab_size="Vd",
)
@quiet_interpreter
def resample_reference(target_logits, draft_logits, draft_tokens, num_accepted, cu_num_logits, idx_mapping,
                       temperature, seed, pos, *, draft_vocab_size: int | None = None) -> torch.Tensor:
    """Each request's replacement or bonus token, ``[Q]`` int64 in ``[0, V)``: the draw of
    :func:`guarded_kernels.resample` with the same arguments (no float64 path), one program per
    request. The arguments, shapes and errors are ``resample``'s: request ``r`` owns target rows
    ``cu_num_logits[r]`` to ``cu_num_logits[r + 1] - 1`` (its drafts, then the bonus row);
    ``draft_logits[idx_mapping[r], k, :V_d]`` are draft step ``k``'s logits, or None for one-hot
    drafts ``draft_tokens``."""
    num_reqs, vocab_size = num_accepted.shape[0], target_logits.shape[1]
    if cu_num_logits.shape != (num_reqs + 1,):
        raise ValueError(f"resample_reference: cu_num_logits must be [num_reqs + 1] = [{num_reqs + 1}]")
    if not 0 < vocab_size < 2**31:
        raise ValueError(f"resample_reference: V = {vocab_size}; 1 <= V < 2**31 (token ids are int32)")
    vd = 0
    if draft_logits is not None:
        vd = draft_logits.shape[2] if draft_vocab_size is None else int(draft_vocab_size)
        if not 0 < vd <= min(draft_logits.shape[2], vocab_size):
            raise ValueError(f"resample_reference: draft_vocab_size must be in [1, min(W, V)], got {vd}")
    interpreted = not isinstance(resample_reference_kernel, triton.runtime.jit.JITFunction)
    if target_logits.device.type == "cpu" and not interpreted:
        raise RuntimeError("resample_reference: CPU tensors need TRITON_INTERPRET=1 set before triton is imported")
    out = torch.empty((num_reqs,), dtype=torch.int64, device=target_logits.device)
    if num_reqs == 0:
        return out
    draft = (draft_logits, draft_logits.stride(0), draft_logits.stride(1)) if draft_logits is not None else (
        None, 0, 0)
    resample_reference_kernel[(num_reqs,)](
        target_logits, target_logits.stride(0), *draft, draft_tokens, draft_tokens.stride(0),
        draft_tokens.stride(1), num_accepted, num_accepted.stride(0), cu_num_logits, cu_num_logits.stride(0),
        idx_mapping, idx_mapping.stride(0), temperature, temperature.stride(0), seed, seed.stride(0), pos,
        pos.stride(0), out, out.stride(0), vocab_size, vd,
        HAS_DRAFT=draft_logits is not None, FAST_LOG=target_logits.device.type == "cuda" and not interpreted,
        BLOCK=min(1024, triton.next_power_of_2(vocab_size)),
    )
    return out
