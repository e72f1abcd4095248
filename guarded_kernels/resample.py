"""Speculative-decoding resampling: one replacement (or bonus) token per request.

For request ``r`` the row ``cu_num_logits[r] + num_accepted[r]`` of the target logits is resampled:

* every draft accepted (the bonus position): a draw from ``p``;
* a draft rejected, with draft logits: a draw from the residual ``max(p - q, 0)`` normalised, which
  with the accept/reject step makes the output distributed as ``p`` (Leviathan et al., *Fast
  Inference from Transformers via Speculative Decoding*, 2023; Chen et al., *Accelerating Large
  Language Model Decoding with Speculative Sampling*, 2023);
* a draft rejected, with one-hot drafts (no draft logits): a draw from ``p`` with the rejected
  token removed (the residual of a point-mass ``q``);
* temperature 0: the target row's argmax.

``p`` and ``q`` are softmaxes after temperature. Draws are Gumbel-max in log space,
``argmax_i(log2 r_i + G_i)``, with the noise of :func:`guarded_kernels.gumbel_sample` for that
row (the verification stream of :mod:`guarded_kernels.noise`, keyed by ``(seed[slot], pos[row])``).
The residual weight ``r_i = p_i - q_i`` takes one of two float32 forms, the plan's
``residual_form``: the stable log form ``log r_i = log p_i + log(-expm1(log q_i - log p_i))``, or
``p_i - q_i`` itself with ``p_i = 2**(x_i / T * log2 e - lse_p)`` and ``q_i`` alike (each exponent
rounded once, so ``r_i`` carries ~2e-6 / (1 - q_i / p_i) relative error, as the log form does;
probabilities below 2**-126 flush to zero), half the instructions. The plan's ``race`` runs the
``p - q`` draw as an exponential race, ``argmax_i r_i / E_i`` with ``E_i = -log2(1 - v_i)`` the same
noise's exponential variate (the same argmax as ``log2 r_i - log2 E_i``: Gumbel-max's exponential
form, e.g. Huijben et al., *A Review of the Gumbel-max Trick and its Extensions*, IEEE TPAMI
2022), its logarithm taken once per lane (:func:`_race_key`). ``use_fp64`` runs a float64 branch
(``PHASE == 3``, one program per request, the log form).

The log-sum-exps are computed in the kernel. With one program per request both passes run in
one launch (``PHASE == 2``). With several (the plan's ``num_splits``), either a first launch
writes each chunk's partial (max, sum) pairs and a second merges them and draws, reading each row
again (``PHASE`` 0 then 1; one-hot drafts need no log-sum-exp, so 1 alone), or, with the plan's ``exchange``, one launch in which the programs of
a request exchange their pairs and each draws from the chunk it just reduced, whose bytes are
mostly still in L2 (``PHASE == 4``). Every log-sum-exp pass reduces 16-byte rows (a row's maximum
first, one rescale per row: :func:`_lse2_rows`). A rejected row whose residual has no mass
(``p == q``) falls back to a draw from ``p``, decided once per request after the maximum is known.

:mod:`guarded_kernels.resample_reference` is the same draw in one page, without the tuning;
:func:`resample_plan` says how a call is launched and why (each rule with its measurement).
"""

from __future__ import annotations

import dataclasses
import functools

import torch
import triton
import triton.language as tl

from guarded_kernels._interpreter import quiet_interpreter
from guarded_kernels._common import (
    FLOATS,
    INTS,
    LOG2E,
    Gpu,
    check_device,
    chunk_layout,
    fill_splits,
    gpu_of,
    greedy_update,
    merge_key,
    row_argmax,
    row_winner,
    wave_splits,
)
from guarded_kernels._launch import Launcher
from guarded_kernels._workspace import row_scratch, stats_scratch
from guarded_kernels.noise import (
    _log2_f32,
    block_key_bound,
    log2e_exponential,
    neg_log2_exponential,
    ordered_key,
    row_key,
    token_hash,
    token_hash_of_product,
    token_hash_unfinished,
    token_product,
    unpack_index,
    with_rounding_slack,
)
from stridecheck import Tensor, stride_guard


# The running maximum's start: the most negative finite float32, so that |x - m| is never
# -inf - -inf (NaN) and a masked lane (x = -inf) adds 2**-inf = 0 without a test (two
# instructions per element fewer than starting at -inf and selecting). A chunk with no finite
# logit keeps it, with a sum of 0: its log-sum-exp is still -inf.
_LSE_START = tl.constexpr(-3.4028234663852886e38)


@triton.jit
def _residual_keys(
    x, dl, idx, key, scale, lse_t, lse_d, rejected, best_val, best_idx,
    GREEDY: tl.constexpr, RESIDUAL: tl.constexpr, FAST_LOG: tl.constexpr,
):
    """One loaded block of the resampled row (target ``x``, draft ``dl``, read only with
    RESIDUAL): the residual's (or p's) Gumbel-max key, or the greedy key; running maximum.
    RESIDUAL: 0 a draw from p, 1 the residual in the stable log form, 2 the residual as p - q."""
    x = x.to(tl.float32)
    if GREEDY:
        new_val, new_idx = greedy_update(x, idx, best_val, best_idx)
    else:
        noise = neg_log2_exponential(token_hash_of_product(key, token_product(idx)), FAST_LOG, False)
        if RESIDUAL == 2:
            # p_i and q_i themselves, each log-sum-exp subtracted before its exponential (no
            # overflow), and the residual weight p_i - q_i: about 8 instructions per element
            # fewer than the stable log form below. Its error is the same order: each of p, q
            # carries ~1e-6 relative error from rounding its exponent (|x * scale - lse| ~ 20,
            # float32), so p - q carries ~2e-6 / (1 - q/p) relative, as the log form's
            # log q - log p does. p_i below 2**-126 flushes to zero (such a token's residual weight
            # is lost; the log form and the float64 path keep it).
            p = tl.exp2(x * scale - lse_t)
            q = tl.exp2(dl.to(tl.float32) * scale - lse_d)
            k = tl.where(p > q, _log2_f32(p - q, FAST_LOG) + noise, float("-inf"))
        elif RESIDUAL == 1:
            lp = x * scale - lse_t
            lq = dl.to(tl.float32) * scale - lse_d
            d2 = lq - lp
            dn = d2 * 0.6931471805599453
            # 1 - q/p = -expm1(dn): a series near dn = 0 (q close to p) avoids cancellation.
            series = -dn * (1.0 + dn * (0.5 + dn * (0.16666667 + dn * (0.041666668 + dn * 0.008333334))))
            one_minus = tl.where(dn > -0.03125, series, 1.0 - tl.exp2(d2))
            k = tl.where(lp > lq, lp + _log2_f32(one_minus, FAST_LOG) + noise, float("-inf"))
        else:
            k = tl.where(idx == rejected, float("-inf"), x * scale + noise)
        upd = k > best_val
        new_val = tl.where(upd, k, best_val)
        new_idx = tl.where(upd, idx, best_idx)
    return new_val, new_idx


@triton.jit
def _residual_race_of_product(x, dl, idx, idx_g, key, scale, lse_t, lse_d, best_w, best_idx,
                              FAST_LOG: tl.constexpr):
    """The ``p - q`` draw of :func:`_residual_keys` as an exponential race: per lane the
    column with the largest ``w_i = r_i / E_i`` (``r_i = p_i - q_i``, ``E_i`` the noise's
    exponential variate times ``log2 e``, :func:`log2e_exponential`). That is the Gumbel-max argmax
    of ``log2 r_i - log2 E_i`` with one reciprocal instead of two logarithms per column (four MUFU
    instructions per column instead of five): the same draw in
    exact arithmetic (log2 is increasing), keyed ``log2 w`` once per lane by :func:`_race_key`.
    ``w`` carries ~2**-22 relative rounding (the approximate reciprocal) where the log keys carry
    an absolute ~2**-19, so two columns within that of each other may be ordered otherwise than
    the log form orders them. ``r_i <= 0`` or NaN never enters (the strict compare against the
    start 0), as the log form's -inf / NaN keys never do. ``w`` may be subnormal (:func:`_race_key`
    takes its logarithm without flushing); a subnormal ``r`` itself, which the log keys' flushing
    logarithm drops on a GPU, may enter here: its weight is below 2**-126, where float32's ``p``
    is flushed anyway."""
    e = log2e_exponential(token_hash_of_product(key, idx_g), FAST_LOG)
    r = tl.exp2(x.to(tl.float32) * scale - lse_t) - tl.exp2(dl.to(tl.float32) * scale - lse_d)
    if FAST_LOG:
        w = r * tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [e], dtype=tl.float32,
                                          is_pure=True, pack=1)
    else:
        w = r / e
    upd = w > best_w
    return tl.where(upd, w, best_w), tl.where(upd, idx, best_idx)


@triton.jit
def _race_key(best_w, FAST_LOG: tl.constexpr):
    """The Gumbel-max key ``log2 w`` of a lane's race winner (-inf for a lane without one). On a
    GPU ``lg2.approx`` without ``.ftz``: ``w = r / E`` is subnormal for a normal ``r`` below
    ``E * 2**-126`` (``E`` up to 24), which the flushing logarithm of the log keys would make
    -inf, dropping that column's weight at random (a row whose whole residual sits at
    ``p ~ 2**-125.5`` fell back to p in 105 of 256 requests on an H200 with the flushing
    logarithm). The multiply and compare before it keep subnormals."""
    return _log2_f32(best_w, FAST_LOG, False)


@triton.jit
def _skip_draw_blocks(
    target_row_ptr, draft_row_ptr, start, d_end, key, scale, lse_t, lse_d, rejected, best_val, best_idx,
    RESIDUAL: tl.constexpr, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr, EVICT: tl.constexpr, STAGES: tl.constexpr,
):
    """The sampled draw over full blocks ``[start, d_end)`` (all below ``V_d`` with RESIDUAL) with
    the exact block skip of :mod:`guarded_kernels.sample`: every
    key of this kernel is at most ``x * scale - lse_t + noise`` (the residual's ``log2(p - q) <=
    log2 p``, the log form's ``log2(1 - q/p) <= 0``; a draw from p has ``lse_t = 0``), and the noise
    at most its :func:`noise_octave` bound, so a block whose bound stays below the chunk's best
    key so far cannot change the running maximum: neither its noise, its residual, nor its draft
    row is computed or read. :func:`block_key_bound`'s slack (2**-20 of the bound), applied again
    after ``lse_t`` is subtracted, covers float32 rounding at any magnitude; a ``p`` below 2**-126
    (subnormal where it is not flushed) is covered by a floor (below). So the keys kept, and the
    token, are bit for bit those of the loop without the skip."""
    lanes = tl.arange(0, BLOCK)
    best_s = tl.max(best_val, 0)
    for off in tl.range(start, d_end, BLOCK, num_stages=STAGES):
        idx = off + lanes
        x = tl.load(target_row_ptr + idx, eviction_policy=EVICT)
        h = token_hash_unfinished(key, token_product(idx))
        bound = block_key_bound(x.to(tl.float32), scale, h, FAST_LOG) - lse_t
        # The subtraction rounds at the key's magnitude, which block_key_bound's slack (relative
        # to the bound before it) does not cover when |lse_t| is large: the same slack again.
        bound = with_rounding_slack(bound)
        if RESIDUAL == 2:
            # p = 2**(x * scale - lse_t) below 2**-126 is subnormal where exp2 and log2 keep
            # subnormals (the CPU interpreter): rounded to a multiple of 2**-149, log2(p - q) may
            # exceed x * scale - lse_t by up to a bit, beyond the bound's margin. Every such key is
            # at most log2(2**-126) + the largest noise, 32.4712 (h = 0): below -93.5.
            bound = tl.maximum(bound, -93.5)
        if bound >= best_s:
            if RESIDUAL:
                dl = tl.load(draft_row_ptr + idx, eviction_policy=EVICT)
            else:
                dl = x
            best_val, best_idx = _residual_keys(
                x, dl, idx, key, scale, lse_t, lse_d, rejected, best_val, best_idx, GREEDY=False, RESIDUAL=RESIDUAL,
                FAST_LOG=FAST_LOG,
            )
            best_s = tl.max(best_val, 0)
    return best_val, best_idx


@triton.jit
def _draw_chunk(
    target_row_ptr, draft_row_ptr, start, end, draft_vocab_size, key, scale, lse_t, lse_d, rejected, best_val,
    best_idx, GREEDY: tl.constexpr, RESIDUAL: tl.constexpr, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr,
    EVICT: tl.constexpr, SKIP: tl.constexpr, STAGES: tl.constexpr, RACE: tl.constexpr,
):
    """Columns ``[start, end)`` of the resampled row, BLOCK at a time. Greedy, residual and p
    draws are separate copies of the loop (constexpr flags): runtime branches inside one loop
    cost registers in all of them. Blocks wholly below ``V_d`` read the draft without a mask
    (vectorised loads). EVICT is the loads' L2 eviction policy ("" the default). SKIP (sampled
    draws) skips the blocks below ``V_d`` that cannot hold the chunk's maximum
    (:func:`_skip_draw_blocks`), their target loads pipelined STAGES deep. RACE: the ``p - q``
    draw as an exponential race (:func:`_residual_race_of_product`), for an empty running maximum
    coming in."""
    lanes = tl.arange(0, BLOCK)
    full_end = start + ((end - start) // BLOCK) * BLOCK
    if RESIDUAL:
        # Full blocks wholly below V_d: the draft is read without a mask.
        d_end = start + tl.maximum(tl.minimum(end, draft_vocab_size) - start, 0) // BLOCK * BLOCK
    else:
        d_end = full_end
    if SKIP:
        best_val, best_idx = _skip_draw_blocks(
            target_row_ptr, draft_row_ptr, start, d_end, key, scale, lse_t, lse_d, rejected, best_val, best_idx,
            RESIDUAL=RESIDUAL, FAST_LOG=FAST_LOG, BLOCK=BLOCK, EVICT=EVICT, STAGES=STAGES,
        )
    elif RESIDUAL:
        # The race carries the columns' token product across the loop, as guarded_kernels.sample's
        # loop does (one add per element), runs its lane weights w in `acc` and keys each lane's
        # winner after the loop; the running maximum coming in must then be empty (-inf: the
        # kernel calls this first): it is replaced, not merged, so it holds no registers across
        # the loop.
        RACING: tl.constexpr = RACE and RESIDUAL == 2
        if RACING:
            acc = tl.zeros((BLOCK,), tl.float32)
        else:
            acc = best_val
        idx_g = token_product(start + lanes)
        for off in range(start, d_end, BLOCK):
            idx = off + lanes
            x = tl.load(target_row_ptr + idx, eviction_policy=EVICT)
            dl = tl.load(draft_row_ptr + idx, eviction_policy=EVICT)
            if RACING:
                acc, best_idx = _residual_race_of_product(
                    x, dl, idx, idx_g, key, scale, lse_t, lse_d, acc, best_idx, FAST_LOG=FAST_LOG,
                )
            else:
                acc, best_idx = _residual_keys(
                    x, dl, idx, key, scale, lse_t, lse_d, rejected, acc, best_idx, GREEDY=GREEDY,
                    RESIDUAL=RESIDUAL, FAST_LOG=FAST_LOG,
                )
            idx_g += (BLOCK * 0x9E3779B1) % 4294967296
        if RACING:
            best_val = _race_key(acc, FAST_LOG=FAST_LOG)
        else:
            best_val = acc
    else:
        for off in range(start, full_end, BLOCK):
            idx = off + lanes
            x = tl.load(target_row_ptr + idx, eviction_policy=EVICT)
            best_val, best_idx = _residual_keys(
                x, x, idx, key, scale, lse_t, lse_d, rejected, best_val, best_idx, GREEDY=GREEDY, RESIDUAL=RESIDUAL,
                FAST_LOG=FAST_LOG,
            )
    if RESIDUAL:
        # Full blocks reaching past V_d: q is zero there (the draft's log is -inf).
        for off in range(d_end, full_end, BLOCK):
            idx = off + lanes
            best_val, best_idx = _residual_keys(
                tl.load(target_row_ptr + idx, eviction_policy=EVICT),
                tl.load(draft_row_ptr + idx, mask=idx < draft_vocab_size, other=float("-inf"), eviction_policy=EVICT),
                idx, key, scale, lse_t, lse_d, rejected, best_val, best_idx, GREEDY=GREEDY, RESIDUAL=RESIDUAL,
                FAST_LOG=FAST_LOG,
            )
    if full_end < end:
        idx = full_end + lanes
        x = tl.load(target_row_ptr + idx, mask=idx < end, other=float("-inf"), eviction_policy=EVICT)
        if RESIDUAL:
            dl = tl.load(draft_row_ptr + idx, mask=idx < draft_vocab_size, other=float("-inf"), eviction_policy=EVICT)
        else:
            dl = x
        best_val, best_idx = _residual_keys(
            x, dl, idx, key, scale, lse_t, lse_d, rejected, best_val, best_idx, GREEDY=GREEDY, RESIDUAL=RESIDUAL,
            FAST_LOG=FAST_LOG,
        )
    return best_val, best_idx


@triton.jit
def _lse2_rows(x, scale, m, s):
    """Online log-sum-exp of a ``[ROWS, VEC]`` block whose rows are one thread's contiguous
    16 bytes (:func:`_lse2_lanes`): each row's maximum first (in-thread), then its running sum
    rescaled once and its elements' ``2**(x - max)`` added. One exp2 per element as the per-lane
    update (the sum rescaled per element behind a compare and a select), with ~1.6 instructions
    per element fewer in SASS (bf16 9.3 -> 7.7, fp32 8.1 -> 6.6). ``m`` starts at ``_LSE_START``, so ``m - max`` is finite, a masked element (-inf) adds
    2**-inf = 0, and a row without a finite logit keeps a sum of 0."""
    x = x.to(tl.float32) * scale
    m_new = tl.maximum(m, tl.max(x, 1))
    s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), 1)
    return m_new, s


@triton.jit
def _lse2_lanes(row_ptr, BLOCK: tl.constexpr):
    """A log-sum-exp pass's ``[BLOCK // VEC, VEC]`` offsets, ``VEC`` elements of 16 bytes a row (or
    the whole BLOCK when smaller), and the rows' running (max, sum) start."""
    WIDE: tl.constexpr = 128 // row_ptr.dtype.element_ty.primitive_bitwidth
    VEC: tl.constexpr = WIDE if WIDE < BLOCK else BLOCK
    lanes = tl.arange(0, BLOCK // VEC)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    return lanes, tl.full((BLOCK // VEC,), _LSE_START, tl.float32), tl.zeros((BLOCK // VEC,), tl.float32)


@triton.jit
def _chunk_lse2(row_ptr, start, end, scale, BLOCK: tl.constexpr, EVICT: tl.constexpr, UNROLL: tl.constexpr = 1,
                STAGES: tl.constexpr = 1):
    """(max, sum) with ``log2(sum) + max = log2 sum_i 2**(x_i * scale)`` over ``[start, end)``;
    EVICT is the loads' L2 eviction policy ("" the default). UNROLL 2 unrolls the main loop by two
    (Triton's ``loop_unroll_factor``): the loop carries the prefetched block and the running sums
    in alternating registers instead of moving them back every block (triton 3.9, bf16 1,024 / 4:
    148 instructions per two blocks against 2 x 87). STAGES > 1
    (the one launch's 16-bit pass, the plan's ``lse_stages``) pipelines the loads instead. Rows of 16
    bytes, one running (max, sum) each (:func:`_lse2_rows`)."""
    lanes, m, s = _lse2_lanes(row_ptr, BLOCK)
    # Full blocks unmasked (vectorised loads), then the masked tail block.
    full_end = start + tl.maximum(end - start, 0) // BLOCK * BLOCK
    if STAGES > 1:
        # Triton's software pipeliner: the loads of STAGES - 1 blocks ahead in flight (asynchronous
        # copies into shared memory).
        for off in tl.range(start, full_end, BLOCK, num_stages=STAGES):
            m, s = _lse2_rows(tl.load(row_ptr + off + lanes, eviction_policy=EVICT), scale, m, s)
    elif full_end > start:
        # The next block is loaded before this one is reduced (at the end the last block is loaded
        # again: in bounds, unused), so memory latency overlaps the arithmetic.
        x_next = tl.load(row_ptr + start + lanes, eviction_policy=EVICT)
        for off in tl.range(start, full_end, BLOCK, loop_unroll_factor=UNROLL):
            x = x_next
            x_next = tl.load(row_ptr + tl.minimum(off + BLOCK, full_end - BLOCK) + lanes, eviction_policy=EVICT)
            m, s = _lse2_rows(x, scale, m, s)
    if full_end < end:
        tail = full_end + lanes
        x = tl.load(row_ptr + tail, mask=tail < end, other=float("-inf"), eviction_policy=EVICT)
        m, s = _lse2_rows(x, scale, m, s)
    mx = tl.max(m, 0)
    ref = tl.where(mx == float("-inf"), 0.0, mx)
    total = tl.sum(s * tl.exp2(m - ref), 0)
    return mx, total


@triton.jit
def _merge_lse2(stats_ptr, row_offset, which, num_splits, SPLITS_P2: tl.constexpr):
    """log2-sum-exp2 of a row from its programs' partial (max, sum) pairs."""
    j = tl.arange(0, SPLITS_P2)
    mask = j < num_splits
    m = tl.load(stats_ptr + row_offset + j * 4 + which * 2, mask=mask, other=float("-inf"))
    s = tl.load(stats_ptr + row_offset + j * 4 + which * 2 + 1, mask=mask, other=0.0)
    mx = tl.max(m, 0)
    ref = tl.where(mx == float("-inf"), 0.0, mx)
    return mx + tl.log2(tl.sum(s * tl.exp2(m - ref), 0))


@triton.jit
def _chunk_lse2_f64(row_ptr, end, scale, BLOCK: tl.constexpr):
    """float64 ``log2 sum_i 2**(x_i * scale)`` over ``[0, end)`` (``scale`` float64)."""
    lanes = tl.arange(0, BLOCK)
    m = tl.full((BLOCK,), float("-inf"), tl.float64)
    s = tl.zeros((BLOCK,), tl.float64)
    for off in range(0, end, BLOCK):
        idx = off + lanes
        x = tl.load(row_ptr + idx, mask=idx < end, other=float("-inf")).to(tl.float64) * scale
        # A per-lane online update with one exp2 per element, in float64: of 2**(m - max) and
        # 2**(x - max) one is 1, so s' = s * e + 1 when x is the new maximum and s + e otherwise.
        e = tl.where(x == float("-inf"), 0.0, tl.exp2(-tl.abs(x - m)))
        grow = x > m
        s = tl.where(grow, s * e + 1.0, s + e)
        m = tl.maximum(m, x)
    mx = tl.max(m, 0)
    ref = tl.where(mx == float("-inf"), 0.0, mx)
    return mx + tl.log2(tl.sum(s * tl.exp2(m - ref), 0))


@triton.jit
def _residual_block_f64(
    target_row_ptr, draft_row_ptr, idx, end, draft_vocab_size, key, scale, lse_t, lse_d, greedy, residual,
    rejected, best_val, best_idx,
):
    """float64 twin of :func:`_residual_keys` (every block masked: this path is not tuned)."""
    x = tl.load(target_row_ptr + idx, mask=idx < end, other=float("-inf")).to(tl.float64)
    if greedy:
        new_val, new_idx = greedy_update(x, idx, best_val, best_idx)
    else:
        noise = neg_log2_exponential(token_hash(key, idx), False, True)
        if residual:
            lp = x * scale - lse_t
            dl = tl.load(draft_row_ptr + idx, mask=idx < draft_vocab_size, other=float("-inf"))
            lq = dl.to(tl.float64) * scale - lse_d
            d2 = lq - lp
            dn = d2 * 0.6931471805599453
            # 1 - q/p = -expm1(dn). Above dn = -2**-5 the Taylor series to dn**8/8! (truncation
            # below 2**-40 / 9! ~ 2**-58 relative, under float64's 2**-53); below it
            # 1 - exp2(d2) >= 0.03 loses at most 5 of 53 bits to cancellation.
            series = -dn * (1.0 + dn * (0.5 + dn * (0.16666666666666666 + dn * (0.041666666666666664 + dn * (
                0.008333333333333333 + dn * (0.001388888888888889 + dn * (0.0001984126984126984
                + dn * 2.48015873015873e-05)))))))
            one_minus = tl.where(dn > -0.03125, series, 1.0 - tl.exp2(d2))
            k = tl.where(lp > lq, lp + tl.log2(one_minus) + noise, float("-inf"))
        else:
            k = tl.where(idx == rejected, float("-inf"), x * scale + noise)
        upd = k > best_val
        new_val = tl.where(upd, k, best_val)
        new_idx = tl.where(upd, idx, best_idx)
    return new_val, new_idx


@triton.jit
def _draw_from_p(target_row_ptr, vocab_size, key, scale, FAST_LOG: tl.constexpr, USE_FP64: tl.constexpr,
                 BLOCK: tl.constexpr):
    """Gumbel-max draw from ``p`` over the whole row with the row's own noise: the draw of
    :func:`guarded_kernels.gumbel_sample` for that row. Used only when a rejected row's residual
    has no mass (see :func:`resample`), so it is not tuned: every block is masked."""
    lanes = tl.arange(0, BLOCK)
    if USE_FP64:
        best_val = tl.full((BLOCK,), float("-inf"), tl.float64)
    else:
        best_val = tl.full((BLOCK,), float("-inf"), tl.float32)
    best_idx = lanes
    for off in range(0, vocab_size, BLOCK):
        idx = off + lanes
        x = tl.load(target_row_ptr + idx, mask=idx < vocab_size, other=float("-inf"))
        if USE_FP64:
            xf = x.to(tl.float64)
        else:
            xf = x.to(tl.float32)
        k = xf * scale + neg_log2_exponential(token_hash(key, idx), FAST_LOG, USE_FP64)
        upd = k > best_val
        best_val = tl.where(upd, k, best_val)
        best_idx = tl.where(upd, idx, best_idx)
    m, win = row_argmax(best_val, best_idx)
    return win.to(tl.int64)


@triton.jit
def _resample_kernel(
    # [N, V] unit inner stride
    target_ptr,
    target_stride_0,
    # [R, S, W] unit inner stride (None without HAS_DRAFT)
    draft_ptr,
    draft_stride_0,
    draft_stride_1,
    # [Q, S] int (None with HAS_DRAFT)
    draft_tokens_ptr,
    draft_tokens_stride_0,
    draft_tokens_stride_1,
    # [Q] int
    num_accepted_ptr,
    num_accepted_stride_0,
    # [Q + 1] int
    cu_num_logits_ptr,
    cu_num_logits_stride_0,
    # [Q] int
    idx_mapping_ptr,
    idx_mapping_stride_0,
    # [R] float32
    temperature_ptr,
    temperature_stride_0,
    # [R] int64
    seed_ptr,
    seed_stride_0,
    # [N] int64
    pos_ptr,
    pos_stride_0,
    # [Q, num_splits, 4] float32 partial (max, sum) of target and draft, contiguous (None for
    # PHASE 2 and 3)
    stats_ptr,
    # [>= Q] self-resetting merge scratch (None for PHASE 2 and 3)
    best_ptr,
    best_stride_0,
    done_ptr,
    done_stride_0,
    # [Q] int64
    out_ptr,
    num_reqs,
    vocab_size,
    draft_vocab_size,
    chunk_size,
    num_splits,
    # 0: partial log-sum-exps only; 1: draw using them; 2: both, one program per request;
    # 3: as 2, in float64 (use_fp64); 4: both in one launch, the programs of a request exchanging
    # their partial log-sum-exps (exchange_config)
    PHASE: tl.constexpr,
    HAS_DRAFT: tl.constexpr,
    FAST_LOG: tl.constexpr,
    SPLITS_P2: tl.constexpr,
    # The residual key's form in the float32 draw: 1 the log form, 2 p - q
    RESIDUAL_FORM: tl.constexpr,
    BLOCK: tl.constexpr,
    # L2 eviction policy of the draw's loads ("" the default)
    EVICT_DRAW: tl.constexpr,
    # The sampled draw's exact block skip and its loads' pipeline depth
    SKIP: tl.constexpr = False,
    STAGES: tl.constexpr = 1,
    # PHASE 4: the log-sum-exp loop unrolled by this factor
    LSE_UNROLL: tl.constexpr = 1,
    # PHASE 4: the 16-bit p - q draw as an exponential race
    RACE_DRAW: tl.constexpr = False,
    # PHASE 4: the log-sum-exp loads pipelined this deep (1: the manual one-block prefetch)
    LSE_STAGES: tl.constexpr = 1,
):
    if PHASE == 4:
        # Chunks are handed out by a ticket counter (the word after the last request's counter),
        # first come, first served: a program waits only for programs of its own request that
        # already hold their tickets, or for at most num_splits - 1 tickets not yet taken, so
        # the launch cannot deadlock while num_splits programs fit on the device at once,
        # whatever order the hardware starts programs in (the dynamic-ticket argument of Merrill
        # and Garland, *Single-pass Parallel Prefix Scan with Decoupled Look-back*, NVIDIA, 2016).
        ticket_ptr = done_ptr + num_reqs * done_stride_0
        ticket = tl.atomic_add(ticket_ptr, 1, sem="relaxed")
        if ticket == num_reqs * num_splits - 1:
            # Every ticket of this launch is taken: the dispenser returns to rest for the next.
            tl.atomic_xchg(ticket_ptr, 0, sem="relaxed")
        req = (ticket // num_splits).to(tl.int64)
        split = ticket % num_splits
    else:
        req = tl.program_id(0).to(tl.int64)
        split = tl.program_id(1)
    first = tl.load(cu_num_logits_ptr + req * cu_num_logits_stride_0).to(tl.int64)
    last = tl.load(cu_num_logits_ptr + (req + 1) * cu_num_logits_stride_0).to(tl.int64)
    accepted = tl.load(num_accepted_ptr + req * num_accepted_stride_0).to(tl.int64)
    row = first + accepted
    num_drafts = last - first - 1
    slot = tl.load(idx_mapping_ptr + req * idx_mapping_stride_0).to(tl.int64)
    temp = tl.load(temperature_ptr + slot * temperature_stride_0).to(tl.float32)
    greedy = temp == 0.0
    scale = LOG2E / tl.where(greedy, 1.0, temp)
    if HAS_DRAFT:
        residual = (temp != 0.0) & (accepted < num_drafts)
    else:
        residual = temp != temp  # always False, as a scalar tensor like the other branch
    # A column inside one row: below V < 2**31 (the launcher checks), so int32 cannot wrap;
    # keeping token ids 32-bit saves 64-bit integer work on every element. SC001 reads a chunk
    # index that came from the ticket (an atomic) as a loaded row selector; it counts chunks
    # along the row, whose inner stride the guard requires to be 1, as the arange beside it does.
    start = split * chunk_size  # stridecheck: ignore[SC001, SC006]
    end = tl.minimum(start + chunk_size, vocab_size)
    target_row_ptr = target_ptr + row * target_stride_0
    draft_row_ptr = draft_ptr
    if HAS_DRAFT:
        draft_row_ptr = draft_ptr + slot * draft_stride_0 + accepted * draft_stride_1
    stats_row = req * num_splits * 4
    # A draw that replaces a rejected draft; if its residual has no mass (no token with p > q:
    # p == q, where the residual is undefined) it falls back to p.
    rejecting = (temp != 0.0) & (accepted < num_drafts)
    if PHASE == 3:
        # float64 throughout: logits, scale, log-sum-exps, residual, noise and the maximum.
        scale64 = 1.4426950408889634 / tl.where(greedy, 1.0, temp).to(tl.float64)
        lse_t64 = tl.full((), 0.0, tl.float64)
        lse_d64 = tl.full((), 0.0, tl.float64)
        if residual:
            lse_t64 = _chunk_lse2_f64(target_row_ptr, vocab_size, scale64, BLOCK=BLOCK)
            lse_d64 = _chunk_lse2_f64(draft_row_ptr, draft_vocab_size, scale64, BLOCK=BLOCK)
        rejected64 = tl.full((), -1, tl.int64)
        if not HAS_DRAFT:
            if accepted < num_drafts:
                rejected64 = tl.load(
                    draft_tokens_ptr + req * draft_tokens_stride_0 + accepted * draft_tokens_stride_1
                ).to(tl.int64)
        key64 = row_key(tl.load(seed_ptr + slot * seed_stride_0), tl.load(pos_ptr + row * pos_stride_0), 0)
        lanes64 = tl.arange(0, BLOCK)
        best_val64 = tl.full((BLOCK,), float("-inf"), tl.float64)
        best_idx64 = lanes64
        for off in range(0, vocab_size, BLOCK):
            best_val64, best_idx64 = _residual_block_f64(
                target_row_ptr, draft_row_ptr, off + lanes64, vocab_size, draft_vocab_size, key64, scale64, lse_t64,
                lse_d64, greedy, residual, rejected64, best_val64, best_idx64,
            )
        m64, win64, _ = row_winner(best_val64, best_idx64)
        token64 = win64.to(tl.int64)
        if rejecting & (m64 == float("-inf")):
            token64 = _draw_from_p(target_row_ptr, vocab_size, key64, scale64, FAST_LOG=False, USE_FP64=True, BLOCK=BLOCK)
        tl.store(out_ptr + req, token64)
    elif PHASE == 0:
        if residual:
            mt, st = _chunk_lse2(target_row_ptr, start, end, scale, BLOCK=BLOCK, EVICT="")
            md, sd = _chunk_lse2(draft_row_ptr, start, tl.minimum(end, draft_vocab_size), scale, BLOCK=BLOCK, EVICT="")
            base = stats_ptr + stats_row + split * 4
            tl.store(base, mt)
            tl.store(base + 1, st)
            tl.store(base + 2, md)
            tl.store(base + 3, sd)
    else:
        lse_t = tl.full((), 0.0, tl.float32)
        lse_d = tl.full((), 0.0, tl.float32)
        if residual:
            if PHASE == 2:
                mt, st = _chunk_lse2(target_row_ptr, 0, vocab_size, scale, BLOCK=BLOCK, EVICT="")
                md, sd = _chunk_lse2(draft_row_ptr, 0, draft_vocab_size, scale, BLOCK=BLOCK, EVICT="")
                lse_t = mt + tl.log2(st)
                lse_d = md + tl.log2(sd)
            elif PHASE == 4:
                # This chunk's pass: its bytes stay in L2 for the draw below, which reads them
                # again once every chunk of the request has published its partial pair.
                mt, st = _chunk_lse2(target_row_ptr, start, end, scale, BLOCK=BLOCK, EVICT="", UNROLL=LSE_UNROLL,
                                     STAGES=LSE_STAGES)
                md, sd = _chunk_lse2(draft_row_ptr, start, tl.minimum(end, draft_vocab_size), scale, BLOCK=BLOCK,
                                     EVICT="", UNROLL=LSE_UNROLL, STAGES=LSE_STAGES)
                base = stats_ptr + stats_row + split * 4
                tl.store(base, mt)
                tl.store(base + 1, st)
                tl.store(base + 2, md)
                tl.store(base + 3, sd)
                # The barrier orders the program's stores before the count; the count's release
                # publishes them, and the acquire that sees the count complete makes every
                # program's pair visible.
                tl.debug_barrier()
                arrived = tl.atomic_add(done_ptr + req * done_stride_0, 1, sem="acq_rel") + 1
                while arrived < num_splits:
                    arrived = tl.atomic_add(done_ptr + req * done_stride_0, 0, sem="acquire")
                lse_t = _merge_lse2(stats_ptr, stats_row, 0, num_splits, SPLITS_P2=SPLITS_P2)
                lse_d = _merge_lse2(stats_ptr, stats_row, 1, num_splits, SPLITS_P2=SPLITS_P2)
            else:
                lse_t = _merge_lse2(stats_ptr, stats_row, 0, num_splits, SPLITS_P2=SPLITS_P2)
                lse_d = _merge_lse2(stats_ptr, stats_row, 1, num_splits, SPLITS_P2=SPLITS_P2)
        rejected = tl.full((), -1, tl.int64)
        if not HAS_DRAFT:
            if accepted < num_drafts:
                rejected = tl.load(
                    draft_tokens_ptr + req * draft_tokens_stride_0 + accepted * draft_tokens_stride_1
                ).to(tl.int64)
        # Stream 0: the verification stream (noise.VERIFY_STREAM).
        key = row_key(tl.load(seed_ptr + slot * seed_stride_0), tl.load(pos_ptr + row * pos_stride_0), 0)
        lanes = tl.arange(0, BLOCK)
        best_val = tl.full((BLOCK,), float("-inf"), tl.float32)
        best_idx = start + lanes
        if greedy:
            best_val, best_idx = _draw_chunk(
                target_row_ptr, draft_row_ptr, start, end, draft_vocab_size, key, scale, lse_t, lse_d, rejected,
                best_val, best_idx, GREEDY=True, RESIDUAL=False, FAST_LOG=FAST_LOG, BLOCK=BLOCK, EVICT=EVICT_DRAW,
                SKIP=False, STAGES=1, RACE=False,
            )
        elif residual:
            best_val, best_idx = _draw_chunk(
                target_row_ptr, draft_row_ptr, start, end, draft_vocab_size, key, scale, lse_t, lse_d, rejected,
                best_val, best_idx, GREEDY=False, RESIDUAL=RESIDUAL_FORM, FAST_LOG=FAST_LOG, BLOCK=BLOCK,
                EVICT=EVICT_DRAW, SKIP=SKIP, STAGES=STAGES, RACE=RACE_DRAW,
            )
        else:
            best_val, best_idx = _draw_chunk(
                target_row_ptr, draft_row_ptr, start, end, draft_vocab_size, key, scale, lse_t, lse_d, rejected,
                best_val, best_idx, GREEDY=False, RESIDUAL=False, FAST_LOG=FAST_LOG, BLOCK=BLOCK, EVICT=EVICT_DRAW,
                SKIP=SKIP, STAGES=STAGES, RACE=False,
            )
        m, win, nan_won = row_winner(best_val, best_idx)
        if PHASE == 1 or PHASE == 4:
            tl.atomic_max(best_ptr + req * best_stride_0, merge_key(m, win, nan_won))
            finished = tl.atomic_add(done_ptr + req * done_stride_0, 1)
            last_count = num_splits - 1
            if PHASE == 4:
                # A request that exchanged log-sum-exps counted each program in once already.
                last_count = tl.where(residual, 2 * num_splits - 1, num_splits - 1)
            if finished == last_count:
                packed = tl.atomic_xchg(best_ptr + req * best_stride_0, -9223372036854775808)
                tl.atomic_xchg(done_ptr + req * done_stride_0, 0)
                token = unpack_index(packed)
                # Once per request, by its last program: the rare no-mass fallback walks the row.
                if rejecting & ((packed >> 32) == ordered_key(tl.full((), float("-inf"), tl.float32))):
                    token = _draw_from_p(target_row_ptr, vocab_size, key, scale, FAST_LOG=FAST_LOG, USE_FP64=False,
                                         BLOCK=BLOCK)
                tl.store(out_ptr + req, token)
        else:
            token = win.to(tl.int64)
            if rejecting & (m == float("-inf")):
                token = _draw_from_p(target_row_ptr, vocab_size, key, scale, FAST_LOG=FAST_LOG, USE_FP64=False, BLOCK=BLOCK)
            tl.store(out_ptr + req, token)


INTERPRETED = not isinstance(_resample_kernel, triton.runtime.jit.JITFunction)


@dataclasses.dataclass(frozen=True)
class ResamplePlan:
    """How :func:`resample` launches for one vocabulary size; made by :func:`resample_plan`.

    None of the fields changes the drawn tokens except ``residual_form`` and ``race``, which
    change float32 rounding only (each is the same draw in exact arithmetic).
    """

    vocab_size: int
    block: int  # columns a program loads at once (BLOCK)
    num_warps: int
    chunk: int  # columns per program, a multiple of block
    num_splits: int  # programs per request
    exchange: bool  # one launch whose programs exchange partial log-sum-exps (else two launches)
    residual_form: int  # the float32 residual key: 1 the stable log form, 2 p - q
    skip: bool  # the draw's exact block skip
    stages: int  # pipeline depth of the skipping draw's loads
    evict_draw: str  # L2 eviction policy of the draw's loads: "" or "evict_first"
    lse_unroll: int  # the one launch's log-sum-exp loop unroll factor
    lse_stages: int  # the one launch's log-sum-exp pipeline depth (1: a one-block prefetch)
    race: bool  # the one launch's 16-bit p - q draw as an exponential race
    fast_log: bool  # the hardware's lg2.approx (GPU only)
    use_fp64: bool


def _two_launch_grid(num_reqs: int, vocab_size: int, dtype: torch.dtype, gpu) -> tuple[int, int, int]:
    """(BLOCK, num_warps, programs per request asked) of the two launches."""
    if gpu is None:
        return 256, 4, fill_splits(num_reqs, vocab_size, 256, 16, 256)
    if num_reqs >= 256:
        # Swept on an H200 at 256 and 1024 requests: float32 1024 / 4 warps (eight programs per
        # SM) from 4 x SMs requests, 2048 / 8 below (four per SM: 64 registers at 256 threads);
        # bfloat16 / float16 2048 / 8. Programs per request by the wave count: at 256 requests
        # two, which fill one wave of 4 x 132 slots where three left 1.45 waves (+17%).
        if dtype == torch.float32 and num_reqs >= 4 * gpu.sms:
            block, warps, per_sm = 1024, 4, 8
        else:
            block, warps, per_sm = 2048, 8, 4
        return block, warps, wave_splits(num_reqs, triton.cdiv(vocab_size, block), per_sm * gpu.sms)
    # Swept on an H200 at T = 256 / 1024 and carried below: float32 1024 / 4 warps (64 registers,
    # eight programs per SM), bfloat16 / float16 4096 / 8.
    block, warps = (1024, 4) if dtype == torch.float32 else (4096, 8)
    return block, warps, fill_splits(num_reqs, vocab_size, block, 4 * gpu.sms, 256)


def _one_launch_columns(num_reqs: int, vocab_size: int, dtype: torch.dtype, gpu) -> int | None:
    """Columns per program of the one launch, or None where the two launches are faster.

    The one launch reads each chunk twice a few microseconds apart, the second time mostly from
    L2, where the two launches read every row twice from DRAM (their 50% ceiling). Measured on an
    H200 against the two launches in the same process (1,024 / 4 warps, evict_first on the
    draw's loads): float32, chunks of 8,192 columns, -8% to -27% from 256 requests at
    V >= 151,936 (V = 32,000: -4% to -19%), at 64 requests -8% at V = 262,144 and +0.6% at
    151,936; 16-bit logits, chunks of 16,384, -20% / -22% at 64 requests, -9% / -12% at 256, -2%
    at 512 (V >= 151,936), level at 1,024 (two launches kept from 4 x SMs requests). At
    V = 32,000 below 256 requests (float32) or at all (16-bit) it lost 3-23%; below 64 requests it
    is not used (not measured)."""
    if gpu is None or num_reqs < 64:
        return None
    if dtype.itemsize == 4:
        return None if vocab_size < 65536 and num_reqs < 256 else 8192
    if num_reqs < 4 * gpu.sms and vocab_size >= 65536:
        return 16384
    return None


_FIELDS = {f.name for f in dataclasses.fields(ResamplePlan)} - {"vocab_size", "use_fp64", "chunk"}


def resample_plan(num_reqs: int, vocab_size: int, dtype: torch.dtype, device, *, use_fp64: bool = False,
                  **overrides) -> ResamplePlan:
    """The launch plan of a :func:`resample` call with ``num_reqs`` requests on target logits of
    ``vocab_size`` columns and ``dtype`` on ``device`` (a ``torch.device`` or name; a
    :class:`guarded_kernels.Gpu` plans for a GPU that is not here), by the rules measured on an
    H200.

    ``overrides`` set fields of :class:`ResamplePlan` by name (tests and benchmarks): ``exchange``
    chooses the one launch or the two; ``block``, ``num_warps`` and ``num_splits`` (programs asked
    per request; the chunk layout may launch fewer) set the grid (``use_fp64`` always runs one
    program per request, and the one launch under the CPU interpreter too: its programs wait for
    each other, which the interpreter, running them one after another, cannot); the other knobs
    follow the rules for that grid unless given. Raises ValueError for an unknown field or a
    combination the kernel does not support.
    """
    unknown = set(overrides) - _FIELDS
    if unknown:
        raise ValueError(f"resample_plan: unknown fields {sorted(unknown)}; known: {sorted(_FIELDS)}")
    if not isinstance(device, Gpu):
        device = torch.device(device)
    gpu = gpu_of(device, INTERPRETED)
    columns = None if use_fp64 else _one_launch_columns(num_reqs, vocab_size, dtype, gpu)
    exchange = overrides.pop("exchange", columns is not None)
    if use_fp64 and exchange:
        raise ValueError("resample_plan: use_fp64 runs its own one-program-per-request launch (no exchange)")
    if exchange and columns is not None:
        block, warps, splits = 1024, 4, triton.cdiv(vocab_size, columns)
    else:
        block, warps, splits = _two_launch_grid(num_reqs, vocab_size, dtype, gpu)
    if use_fp64 and gpu is not None:
        block, warps = 1024, 8
    block = overrides.pop("block", block)
    warps = overrides.pop("num_warps", warps)
    splits = overrides.pop("num_splits", splits)
    if use_fp64:
        # One program per request: the cross-program merge packs a float32 key.
        splits = 1
    if exchange:
        # Every program of a request must be resident at once (the ticket argument in the kernel):
        # at most one program per multiprocessor.
        splits = min(splits, gpu.sms) if gpu is not None else 1
    chunk, splits = chunk_layout(vocab_size, splits, block)
    # The p - q key: about 8 instructions per element fewer than the log form, one MUFU more.
    # 16-bit logits are bound by instruction issue and take it (-4.3 to -5.8% at T >= 256);
    # float32 from 256 requests, where its 2,048 / 8-warp launch keeps four programs per SM only
    # with p - q's registers (the log form there: +5.9 / +8.2%), and the log form below (p - q
    # cost +5.6 / +6.4% at 64 requests).
    form = overrides.pop("residual_form", 2 if dtype.itemsize < 4 or num_reqs >= 256 else 1)
    # The draw's block skip on the two launches for 16-bit logits where a program walks >= 32
    # blocks (from 4 x SMs requests): -4.9% / -8.4% at T = 1024, V = 151,936 / 262,144. Elsewhere it
    # lost or did not pay: it raises the draw's registers (1,024 / 4: 64-72 -> 80-96) and the one
    # launch's chunks are short (16 blocks: its best key is young): float32 +9 to +16% at
    # T >= 256, bf16 T = 256 -1.7% to +5.7%, T = 64 -9% to +25%.
    skip = overrides.pop("skip", gpu is not None and not use_fp64 and dtype.itemsize <= 2 and not exchange
                         and num_reqs >= 4 * gpu.sms and chunk >= 32 * block)
    sixteen = gpu is not None and dtype.itemsize <= 2
    plan = ResamplePlan(
        vocab_size=vocab_size, block=block, num_warps=warps, chunk=chunk, num_splits=splits, exchange=exchange,
        residual_form=form, skip=skip, stages=overrides.pop("stages", 4 if skip and gpu is not None else 1),
        # The one launch's draw reads bytes nobody reads again.
        evict_draw=overrides.pop("evict_draw", "evict_first" if exchange and gpu is not None else ""),
        # Unrolled by two the loop keeps the prefetched block and the sums in alternating registers
        # instead of moving them back every block (bf16 1,024 / 4: 148 instructions per two blocks
        # against 2 x 87): bfloat16 T = 256 -5.3% / -3.7%, T = 64 -7.9% / -4.2%; float32 T = 64
        # -7.1% / -5.6%, T = 1024 -1.5% to -4.1%, T = 256 -1.3% to +1.0%.
        lse_unroll=overrides.pop("lse_unroll", 2 if exchange and gpu is not None else 1),
        # 16-bit logits stream from DRAM with too few bytes in flight: five blocks pipelined,
        # bfloat16 T = 64 -5% to -8%, T = 256 -1.6% to -2.1% (3 deep did nothing, 8 was mixed);
        # float32 +1.0% / +1.6% at T = 256, so none there.
        lse_stages=overrides.pop("lse_stages", 5 if exchange and sixteen else 1),
        # The race: 32 instead of 40 MUFU per 8 positions, with the carried token product and the
        # row log-sum-exp -1.9% / -2.7% at bfloat16 T = 256; float32 lost 6-23% with the carried
        # product, so only 16-bit logits.
        race=overrides.pop("race", exchange and sixteen and form == 2),
        fast_log=overrides.pop("fast_log", gpu is not None), use_fp64=use_fp64,
    )
    if plan.residual_form not in (1, 2) or plan.block & (plan.block - 1):
        raise ValueError(f"resample_plan: residual_form must be 1 or 2 and block a power of two: {plan}")
    if plan.race and (plan.residual_form != 2 or not plan.exchange):
        raise ValueError("resample_plan: the race is the one launch's p - q draw (exchange, residual_form=2)")
    if plan.use_fp64 and plan.skip:
        raise ValueError("resample_plan: use_fp64 has no block skip")
    if gpu is None and plan.fast_log:
        raise ValueError("resample_plan: fast_log needs a GPU (not the CPU interpreter)")
    return plan


@functools.lru_cache(maxsize=4096)
def _default_plan(num_reqs: int, vocab_size: int, dtype: torch.dtype, device: torch.device, use_fp64: bool):
    return resample_plan(num_reqs, vocab_size, dtype, device, use_fp64=use_fp64)


@functools.lru_cache(maxsize=4096)
def _launchers(plan: ResamplePlan, has_draft: bool) -> tuple[Launcher, ...]:
    """The launches of a call, in order: (PHASE 3), (PHASE 4), (PHASE 0, PHASE 1) with draft
    logits or (PHASE 1) without, or (PHASE 2)."""
    constexprs = dict(HAS_DRAFT=has_draft, FAST_LOG=plan.fast_log, SPLITS_P2=triton.next_power_of_2(plan.num_splits),
                      RESIDUAL_FORM=plan.residual_form, BLOCK=plan.block, EVICT_DRAW=plan.evict_draw)
    if plan.skip:
        constexprs.update(SKIP=True, STAGES=plan.stages)
    options = dict(num_warps=plan.num_warps)
    if plan.use_fp64:
        phases = (3,)
    elif plan.exchange:
        constexprs.update(LSE_UNROLL=plan.lse_unroll, LSE_STAGES=plan.lse_stages, RACE_DRAW=plan.race)
        phases = (4,)
    elif plan.num_splits > 1:
        phases = (0, 1) if has_draft else (1,)
    else:
        phases = (2,)
    return tuple(Launcher(_resample_kernel, dict(constexprs, PHASE=phase), options) for phase in phases)


@stride_guard(
    target_logits=Tensor("N V", dtype=FLOATS),
    draft_logits=Tensor("R * >=Vd", dtype=FLOATS),
    draft_tokens=Tensor("Q *", dtype=INTS, inner_stride=None),
    num_accepted=Tensor("Q", dtype=INTS, inner_stride=None),
    cu_num_logits=Tensor("*", dtype=INTS, inner_stride=None),
    idx_mapping=Tensor("Q", dtype=INTS, inner_stride=None),
    temperature=Tensor("R", dtype=torch.float32, inner_stride=None),
    seed=Tensor("R", dtype=torch.int64, inner_stride=None),
    pos=Tensor("N", dtype=torch.int64, inner_stride=None),
    draft_vocab_size="Vd",
)
@quiet_interpreter
def resample(
    target_logits: torch.Tensor,
    draft_logits: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    num_accepted: torch.Tensor,
    cu_num_logits: torch.Tensor,
    idx_mapping: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    pos: torch.Tensor,
    *,
    draft_vocab_size: int | None = None,
    use_fp64: bool = False,
    plan: ResamplePlan | None = None,
) -> torch.Tensor:
    """Draw each request's replacement token (first rejected draft) or bonus token.

    Args:
        target_logits: [N, V] float32 / bfloat16 / float16, unit inner stride; request ``r`` owns
            rows ``cu_num_logits[r] .. cu_num_logits[r + 1] - 1`` (its drafts, then the bonus row).
        draft_logits: [R, S, W] or None; ``draft_logits[idx_mapping[r], k, :V_d]`` are the draft
            model's logits for draft step ``k`` of request ``r``, addressed through the tensor's own
            strides (``W`` may exceed ``V_d``). None: one-hot drafts.
        draft_tokens: [Q, S] int, the drafted tokens (read only for one-hot drafts).
        num_accepted: [Q] int, accepted drafts; equal to the request's draft count -> bonus row.
        cu_num_logits: [Q + 1] int, cumulative rows per request.
        idx_mapping: [Q] int, request -> request-state slot.
        temperature: [R] float32; 0 = greedy: ``torch.argmax`` of the resampled target row
            (lowest index on ties, the first NaN of a row that has one).
        seed: [R] int64.
        pos: [N] int64, each target row's position (keys the noise).
        draft_vocab_size: ``V_d <= min(V, W)``, default ``W``: ``q`` is zero beyond it.
        use_fp64: float64 logits, ``log2(e) / T``, log-sum-exps, residual, noise and maximum
            (one program per request; not tuned for speed). The float32 default resolves keys to
            about 2**-22 relative (where it forms ``p - q``, see :class:`ResamplePlan`, tokens whose
            ``p`` and ``q`` are both below 2**-126 get a residual weight of zero).
        plan: how to launch (:func:`resample_plan`); None: the measured rules for this shape.

    Returns:
        [Q] int64 token ids in ``[0, V)``. If a rejected row's residual has no mass (no token with
        ``p > q``: ``p == q``, where ``max(p - q, 0)`` normalised is undefined; exact arithmetic
        would have accepted such a draft) the token is drawn from ``p`` with the same noise, that
        is, the token :func:`guarded_kernels.gumbel_sample` draws for that row. The same holds for
        one-hot drafts whose ``p`` has no mass outside the rejected token. A NaN in a sampled row's
        target or draft logits makes its log-sum-exp, so the residual, undefined: a rejected row
        then falls back to the same draw from ``p``, in which NaN entries have probability 0 (as
        in every sampled draw); sampled rows whose logits are all NaN or ``-inf`` return token 0.

    Algorithm:
        Gumbel-max (Gumbel, 1954; Maddison et al., 2014) over the residual distribution of
        speculative sampling (Leviathan et al., 2023; Chen et al., 2023); the noise is
        :mod:`guarded_kernels.noise`'s verification stream keyed by (seed, pos, token id).
        Temperature is dimensionless; ``pos`` counts tokens.

    Raises:
        StrideGuardError: a layout the kernel cannot address.
        ValueError: inconsistent request counts or draft vocabulary, a plan made for another
            vocabulary size.
        RuntimeError: CPU tensors without Triton's interpreter (``TRITON_INTERPRET=1``).
    """
    num_rows, vocab_size = target_logits.shape
    num_reqs = num_accepted.shape[0]
    device = target_logits.device
    if device.type == "cpu":
        check_device("resample", target_logits, INTERPRETED)
    if cu_num_logits.dim() != 1 or cu_num_logits.shape[0] != num_reqs + 1:
        raise ValueError(
            f"resample: cu_num_logits must be [num_reqs + 1] = [{num_reqs + 1}], got {tuple(cu_num_logits.shape)}"
        )
    out = torch.empty((num_reqs,), dtype=torch.int64, device=device)
    if num_reqs == 0:
        return out
    if vocab_size == 0:
        raise ValueError("resample: target_logits has 0 columns; there is no token to draw")
    if vocab_size >= 2**31:
        raise ValueError(f"resample: V = {vocab_size} >= 2**31; token ids are 32-bit in the kernel")
    has_draft = draft_logits is not None
    if has_draft:
        width = draft_logits.shape[2]
        vd = width if draft_vocab_size is None else int(draft_vocab_size)
        if not 0 < vd <= min(width, vocab_size):
            raise ValueError(
                f"resample: draft_vocab_size must be in [1, min(W, V)] = [1, {min(width, vocab_size)}], got {vd}"
            )
        draft, d0, d1 = draft_logits, draft_logits.stride(0), draft_logits.stride(1)
        tokens, t0, t1 = None, None, None
        ptrs = draft.data_ptr()
    else:
        # Never read (HAS_DRAFT=False), but compiled: a pointer and strides of the right kinds.
        vd, draft, d0, d1 = 0, target_logits, 0, 0
        tokens, t0, t1 = draft_tokens, draft_tokens.stride(0), draft_tokens.stride(1)
        ptrs = tokens.data_ptr()
    if plan is None:
        plan = _default_plan(num_reqs, vocab_size, target_logits.dtype, device, use_fp64)
    elif plan.vocab_size != vocab_size or plan.use_fp64 != use_fp64:
        raise ValueError(
            f"resample: the plan is for V = {plan.vocab_size}, use_fp64 = {plan.use_fp64}; "
            f"the call has V = {vocab_size}, use_fp64 = {use_fp64}"
        )
    splits = plan.num_splits
    if plan.exchange or splits > 1:
        # With the one launch one counter word more than requests: the ticket dispenser.
        best, best_s0, done, done_s0 = row_scratch(device, num_reqs + 1 if plan.exchange else num_reqs)
        stats = stats_scratch(device, num_reqs * splits * 4)
    else:
        best, best_s0, done, done_s0, stats = None, None, None, None, None
    args = (target_logits, target_logits.stride(0), draft, d0, d1, tokens, t0, t1, num_accepted,
            num_accepted.stride(0), cu_num_logits, cu_num_logits.stride(0), idx_mapping, idx_mapping.stride(0),
            temperature, temperature.stride(0), seed, seed.stride(0), pos, pos.stride(0), stats, best, best_s0,
            done, done_s0, out, num_reqs, vocab_size, vd, plan.chunk, splits)
    # What Triton specialises the compiled kernels on beyond the plan (see gumbel_sample).
    ptrs |= (target_logits.data_ptr() | num_accepted.data_ptr() | cu_num_logits.data_ptr() | idx_mapping.data_ptr()
             | temperature.data_ptr() | seed.data_ptr() | pos.data_ptr())
    key = None if ptrs & 15 else (
        target_logits.dtype, None if draft is None else draft.dtype, None if tokens is None else tokens.dtype,
        num_accepted.dtype, cu_num_logits.dtype, idx_mapping.dtype, temperature.dtype, seed.dtype, pos.dtype,
        args[1], d0, d1, t0, t1, args[9], args[11], args[13], args[15], args[17], args[19], best_s0, done_s0,
        num_reqs, vd)
    grid = (num_reqs, splits)
    for launch in _launchers(plan, has_draft):
        launch(grid, key, args)
    return out
