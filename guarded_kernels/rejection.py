"""Speculative-decoding verification in one launch: accept or reject each draft token, then the
replacement (residual) or bonus token.

For request ``r`` with ``n`` drafts ``x_0 .. x_{n-1}`` and target rows ``cu[r] .. cu[r] + n`` (the
last is the bonus row), step ``i`` accepts ``x_i`` with probability ``min(1, p_i(x_i) / q_i(x_i))``
(``p_i``, ``q_i`` the softmaxes after temperature of target row ``cu[r] + i`` and of the draft
logits of step ``i``); at the first rejection the token is drawn from the residual
``max(p_i - q_i, 0)`` normalised, and if every draft is accepted a bonus token is drawn from
``p_n``. The emitted tokens are then distributed exactly as ``n + 1`` draws from the target
(Leviathan et al., *Fast Inference from Transformers via Speculative Decoding*, ICML 2023, theorem 1
and appendix A.1; Chen et al., *Accelerating Large Language Model Decoding with Speculative
Sampling*, 2023, theorem 1). Temperature 0 is greedy decoding: a draft is accepted iff it is the
target row's ``torch.argmax``, and the replacement or bonus token is that argmax.

Launch structure
----------------
One launch per call (:func:`rejection_sample`). The vocabulary is cut into *units* of
``UNIT_BLOCKS * BLOCK`` columns, and each request gets ``num_splits`` programs, each owning a run of
consecutive units (its chunk). For each draft step in turn, every program reduces its units of the
target row (and of the draft row) to per-unit ``(max, sum)`` pairs of ``2**(x * log2(e) / T)``
(greedy rows: per-unit packed ``(value, index)`` maxima); the programs of a request exchange them
through a small scratch buffer (each program publishes, counts itself in, and waits until every
program of its request has: the dynamic-ticket scheme of Merrill and Garland, *Single-pass Parallel
Prefix Scan with Decoupled Look-back*, NVIDIA, 2016, which cannot deadlock while a request's
programs fit on the device at once: a request has at most one program per multiprocessor), and each
merges all units in one fixed order and decides the step. After the first rejection (or the last
draft), each program draws from its own chunk of the stopping row, whose bytes it has just read and
which are mostly still in L2, and the programs merge their winners through one atomic maximum; the
last one writes the request's tokens and its accepted count and resets the scratch.

Why (chosen from the in-house measurements below; benchmarks/rejection.py measures it against
vLLM's): verification is latency-bound at small batches, where vLLM's ``rejection_sample`` spends
four launches (statistics, verification, resample, insert) and much of its time in launch gaps (an
empty Triton kernel costs ~2.5 us under CUDA-graph replay on an H200, benchmarks/results/
sampling_launch_floor.json), and eager calls pay the Triton launch's host cost four times; one
launch pays each once. At large batches the byte traffic decides: the one launch reads each verified
row from DRAM once and the draw re-reads its chunk mostly from L2, where a statistics launch
followed by a resample launch reads the rejected row twice. The in-house precedent is
:mod:`guarded_kernels.resample`'s one launch (its ``exchange_config``): against its own two launches
on an H200 it measured 2-27% faster from 64 to 512 requests at V >= 151,936, and 3-23% slower at
V = 32,000 below 256 requests in float32 and at all sizes in 16 bits, where a request's few programs
each chain a short pass; here the one launch also saves the
verification launch and its round trip, so it is used at every size on a GPU, with more programs per
request at small batches (:func:`launch_config`). Units of a fixed width make the result independent
of the split: each unit's pair is computed by the same code whichever program owns it, and the merge
reduces the same vector in the same order, so the tokens (and every accept / reject decision) are
bit for bit the same whatever ``num_splits`` and batch composition the launch uses (on one device,
for one dtype and vocabulary size). The CPU interpreter runs programs one after another, so there a
request has one program (no exchange). The draw computes every block of its chunk: the exact block
skip of :mod:`guarded_kernels.resample` (pass over blocks whose key bound cannot reach the best key)
measured 5-19% slower here at every size (H200, graph replay, every draft rejected, T 1-256, V
32,000-262,144, both dtypes; ``benchmarks/results/history.jsonl``): a chunk of 8-32 blocks keeps
its best key young, and each block pays a reduction for the bound.
"""

from __future__ import annotations

import functools
import inspect
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from guarded_kernels._interpreter import quiet_interpreter
from guarded_kernels._launch import Launcher
from guarded_kernels._workspace import _stream_id
from guarded_kernels.noise import (
    interpreting,
    neg_log2_exponential,
    ordered_key,
    pack_key_index,
    row_key,
    token_hash,
    token_hash_of_product,
    token_product,
    unpack_index,
    use_fast_log,
)
from stridecheck import Tensor, stride_guard

#: The token id written after a request's last emitted token.
PLACEHOLDER = -1

_FLOATS = (torch.float32, torch.bfloat16, torch.float16)
_INTS = (torch.int32, torch.int64)
_LOG2E = tl.constexpr(1.4426950408889634)
# A running maximum starts at the most negative finite float32, so that `m - m_new` is never
# -inf - -inf (NaN) and a masked lane (-inf) adds 2**-inf = 0 without a test.
_LSE_FLOOR = tl.constexpr(-3.4028234663852886e38)
# The greedy key of a NaN: above every number's ordered key (torch.argmax ranks NaN first).
_NAN_KEY = tl.constexpr(2147483647)
# A request's counter: one 128-byte line each (int32 words), so that the requests' atomics do not
# queue on one L2 line.
_DONE_STRIDE = tl.constexpr(32)


@triton.jit
def _log2(x, FAST_LOG: tl.constexpr):
    """log2 of a float32 block; with FAST_LOG the hardware's ``lg2.approx.f32`` (absolute error
    about 2**-22; subnormal inputs kept, not flushed: ``p - q`` may be subnormal)."""
    if FAST_LOG:
        return tl.inline_asm_elementwise("lg2.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True,
                                         pack=1)
    else:
        return tl.log2(x)


@triton.jit
def _greedy_key(x, idx):
    """``torch.argmax``'s order as one int64 per element: a NaN above every number (the first NaN
    wins), then the value, then the lower index."""
    xf = x.to(tl.float32)
    k = tl.where(xf != xf, _NAN_KEY, ordered_key(xf))
    return (k << 32) | (4294967295 - idx.to(tl.int64))


@triton.jit
def _lse_rows(x, scale, m, s):
    """Online log2-sum-exp2 of a ``[ROWS, VEC]`` block (each row one thread's ``VEC`` contiguous
    elements): the row maxima first, then one rescale per row, so about one exp2 per element."""
    x = x.to(tl.float32) * scale
    m_new = tl.maximum(m, tl.max(x, 1))
    s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), 1)
    return m_new, s


@triton.jit
def _unit_pair_lse(t_row, d_row, lo, hi, hi_d, scale, HAS_DRAFT: tl.constexpr, BLOCK: tl.constexpr,
                   UNIT_BLOCKS: tl.constexpr, VEC: tl.constexpr):
    """One unit's ``(max, sum)`` of the target row over ``[lo, hi)`` and of the draft row over
    ``[lo, hi_d)`` (``max + log2(sum) = log2 sum_i 2**(x_i * scale)``; an empty span gives
    ``(_LSE_FLOOR, 0)``). A full unit's ``2 * UNIT_BLOCKS`` block loads are unmasked and unrolled,
    so they are all in flight together; a partial unit (the row's last, or the draft's) is
    masked. The arithmetic is the same whichever program computes the unit. ``VEC``: elements a
    thread holds per block (:func:`_plan`), each thread one row."""
    ROWS: tl.constexpr = BLOCK // VEC
    offs = tl.arange(0, ROWS)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    mt = tl.full((ROWS,), _LSE_FLOOR, tl.float32)
    st = tl.zeros((ROWS,), tl.float32)
    md = tl.full((ROWS,), _LSE_FLOOR, tl.float32)
    sd = tl.zeros((ROWS,), tl.float32)
    UNIT: tl.constexpr = BLOCK * UNIT_BLOCKS
    full_t = hi - lo == UNIT
    if HAS_DRAFT:
        full_d = hi_d - lo == UNIT
    else:
        full_d = full_t
    if full_t & full_d:
        for b in tl.static_range(UNIT_BLOCKS):
            mt, st = _lse_rows(tl.load(t_row + lo + b * BLOCK + offs), scale, mt, st)
            if HAS_DRAFT:
                md, sd = _lse_rows(tl.load(d_row + lo + b * BLOCK + offs), scale, md, sd)
    else:
        for b in tl.static_range(UNIT_BLOCKS):
            idx = lo + b * BLOCK + offs
            mt, st = _lse_rows(tl.load(t_row + idx, mask=idx < hi, other=float("-inf")), scale, mt, st)
            if HAS_DRAFT:
                md, sd = _lse_rows(tl.load(d_row + idx, mask=idx < hi_d, other=float("-inf")), scale, md, sd)
    mxt = tl.max(mt, 0)
    mxd = tl.max(md, 0)
    return mxt, tl.sum(st * tl.exp2(mt - mxt), 0), mxd, tl.sum(sd * tl.exp2(md - mxd), 0)


@triton.jit
def _unit_greedy(t_row, lo, hi, BLOCK: tl.constexpr, UNIT_BLOCKS: tl.constexpr):
    """One unit's greedy key (:func:`_greedy_key`) maximum over ``[lo, hi)``."""
    lanes = tl.arange(0, BLOCK)
    best = tl.full((BLOCK,), -9223372036854775808, tl.int64)
    UNIT: tl.constexpr = BLOCK * UNIT_BLOCKS
    if hi - lo == UNIT:
        for b in tl.static_range(UNIT_BLOCKS):
            idx = lo + b * BLOCK + lanes
            best = tl.maximum(best, _greedy_key(tl.load(t_row + idx), idx))
    else:
        for b in tl.static_range(UNIT_BLOCKS):
            idx = lo + b * BLOCK + lanes
            # Masked lanes lie beyond every real column: at -inf they lose every tie to one.
            best = tl.maximum(best, _greedy_key(tl.load(t_row + idx, mask=idx < hi, other=float("-inf")), idx))
    return tl.max(best, 0)


@triton.jit
def _merge_lse(m, s):
    """log2-sum-exp2 of a row from its units' ``(max, sum)`` vectors: one fixed reduction, so every
    program (and every split of the row) gets the same bits. ``-inf`` for a row with no finite
    logit (every unit ``(_LSE_FLOOR, 0)``); NaN when a NaN or ``+inf`` logit made a unit's sum NaN."""
    mx = tl.max(m, 0)
    return mx + tl.log2(tl.sum(s * tl.exp2(m - mx), 0))


@triton.jit
def _arrive_and_wait(done_ptr, req, target):
    """Count this program in for the request and wait until ``target`` programs have. The barrier
    orders every thread's stores before the count; the count's release publishes them and the
    acquire that sees the count complete makes the other programs' stores visible."""
    tl.debug_barrier()
    arrived = tl.atomic_add(done_ptr + req * _DONE_STRIDE, 1, sem="acq_rel") + 1
    while arrived < target:
        arrived = tl.atomic_add(done_ptr + req * _DONE_STRIDE, 0, sem="acquire")


@triton.jit
def _verify_round(
    t_row, d_row, stats_ptr, done_ptr, req, greedy, scale, draft_vocab_size, vocab_size, unit_lo, unit_hi,
    num_units, num_splits, rounds,
    HAS_DRAFT: tl.constexpr, EXCHANGE: tl.constexpr, BLOCK: tl.constexpr, UNIT_BLOCKS: tl.constexpr,
    UNITS_P2: tl.constexpr, VEC: tl.constexpr,
):
    """One verified row: its units ``[unit_lo, unit_hi)`` reduced here, every unit of the row merged.
    Returns ``(lse_t, lse_d, greedy_key)``: the target's and draft's log2-sum-exp2 of ``x * scale``
    (sampled rows), or the row's greedy key maximum (greedy rows). With EXCHANGE the units' values
    go through ``stats_ptr`` (int32 bits, four per unit, double-buffered by round parity: a program
    may publish round ``r + 1`` while another still reads round ``r``, never round ``r - 1``)."""
    UNIT: tl.constexpr = BLOCK * UNIT_BLOCKS
    uu = tl.arange(0, UNITS_P2)
    vm_t = tl.full((UNITS_P2,), _LSE_FLOOR, tl.float32)
    vs_t = tl.zeros((UNITS_P2,), tl.float32)
    vm_d = tl.full((UNITS_P2,), _LSE_FLOOR, tl.float32)
    vs_d = tl.zeros((UNITS_P2,), tl.float32)
    vg = tl.full((UNITS_P2,), -9223372036854775808, tl.int64)
    stats_row = stats_ptr + ((req * 2 + rounds % 2) * num_units) * 4
    for u in range(unit_lo, unit_hi):
        # A column inside one row: below V < 2**31 (the launcher checks), so int32 cannot wrap.
        lo = u * UNIT
        hi = tl.minimum(lo + UNIT, vocab_size)
        if greedy:
            g = _unit_greedy(t_row, lo, hi, BLOCK, UNIT_BLOCKS)
            if EXCHANGE:
                tl.store(stats_row + u * 4, (g >> 32).to(tl.int32))
                tl.store(stats_row + u * 4 + 1, (g & 4294967295).to(tl.int32))
            else:
                vg = tl.where(uu == u, g, vg)
        else:
            mt, st, md, sd = _unit_pair_lse(t_row, d_row, lo, hi, tl.minimum(hi, draft_vocab_size), scale, HAS_DRAFT,
                                            BLOCK, UNIT_BLOCKS, VEC)
            if EXCHANGE:
                tl.store(stats_row + u * 4, mt.to(tl.int32, bitcast=True))
                tl.store(stats_row + u * 4 + 1, st.to(tl.int32, bitcast=True))
                tl.store(stats_row + u * 4 + 2, md.to(tl.int32, bitcast=True))
                tl.store(stats_row + u * 4 + 3, sd.to(tl.int32, bitcast=True))
            else:
                vm_t = tl.where(uu == u, mt, vm_t)
                vs_t = tl.where(uu == u, st, vs_t)
                vm_d = tl.where(uu == u, md, vm_d)
                vs_d = tl.where(uu == u, sd, vs_d)
    if EXCHANGE:
        _arrive_and_wait(done_ptr, req, (rounds + 1) * num_splits)
        live = uu < num_units
        # .cg: from L2, where the other programs' stores are (not a stale L1 line).
        w0 = tl.load(stats_row + uu * 4, mask=live, other=0, cache_modifier=".cg")
        w1 = tl.load(stats_row + uu * 4 + 1, mask=live, other=0, cache_modifier=".cg")
        if greedy:
            vg = tl.where(live, (w0.to(tl.int64) << 32) | (w1.to(tl.int64) & 4294967295), vg)
        else:
            w2 = tl.load(stats_row + uu * 4 + 2, mask=live, other=0, cache_modifier=".cg")
            w3 = tl.load(stats_row + uu * 4 + 3, mask=live, other=0, cache_modifier=".cg")
            vm_t = tl.where(live, w0.to(tl.float32, bitcast=True), vm_t)
            vs_t = tl.where(live, w1.to(tl.float32, bitcast=True), vs_t)
            vm_d = tl.where(live, w2.to(tl.float32, bitcast=True), vm_d)
            vs_d = tl.where(live, w3.to(tl.float32, bitcast=True), vs_d)
    lse_t = tl.full((), 0.0, tl.float32)
    lse_d = tl.full((), 0.0, tl.float32)
    gkey = tl.full((), -9223372036854775808, tl.int64)
    if greedy:
        gkey = tl.max(vg, 0)
    else:
        lse_t = _merge_lse(vm_t, vs_t)
        if HAS_DRAFT:
            lse_d = _merge_lse(vm_d, vs_d)
    return lse_t, lse_d, gkey


@triton.jit
def _residual_update(x, d, idx, g, key, scale, lse_t, lse_d, best, best_idx, FAST_LOG: tl.constexpr):
    """Gumbel-max key of the residual ``max(p - q, 0)`` for one block, and the running maximum:
    ``log2(p_i - q_i) + noise_i`` where ``p_i > q_i``, else -inf (never drawn). ``p`` and ``q`` are
    formed as ``2**(x * scale - lse)`` (each exponent rounded once: ``p - q`` carries ~2e-6 /
    (1 - q/p) relative error; probabilities below 2**-126 may flush to zero on a GPU)."""
    p = tl.exp2(x.to(tl.float32) * scale - lse_t)
    q = tl.exp2(d.to(tl.float32) * scale - lse_d)
    noise = neg_log2_exponential(token_hash_of_product(key, g), FAST_LOG, False)
    k = tl.where(p > q, _log2(p - q, FAST_LOG) + noise, float("-inf"))
    upd = k > best
    return tl.where(upd, k, best), tl.where(upd, idx, best_idx)


@triton.jit
def _target_update(x, idx, g, key, scale, excluded, best, best_idx, FAST_LOG: tl.constexpr):
    """Gumbel-max key of ``p`` (the expression of :func:`guarded_kernels.gumbel_sample`, so the same
    row draws the same token) with column ``excluded`` removed (-1: none), and the running maximum.
    NaN logits compare false: never drawn."""
    k = x.to(tl.float32) * scale + neg_log2_exponential(token_hash_of_product(key, g), FAST_LOG, False)
    k = tl.where(idx == excluded, float("-inf"), k)
    upd = k > best
    return tl.where(upd, k, best), tl.where(upd, idx, best_idx)


@triton.jit
def _draw_unit(t_row, d_row, lo, hi, hi_d, key, scale, lse_t, lse_d, excluded, best, best_idx,
               RESIDUAL: tl.constexpr, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr, UNIT_BLOCKS: tl.constexpr):
    """One unit of the draw: from the residual (RESIDUAL) or from ``p`` less ``excluded``. A loop,
    not unrolled: the unit's bytes were just read (mostly in L2), and two blocks' keys at once
    raised the kernel's registers (sm_90, triton 3.9, 1,024 columns / 4 warps: bfloat16 120 -> 96)."""
    lanes = tl.arange(0, BLOCK)
    UNIT: tl.constexpr = BLOCK * UNIT_BLOCKS
    full = hi - lo == UNIT
    if RESIDUAL:
        full = full & (hi_d - lo == UNIT)
    if full:
        for b in range(0, UNIT_BLOCKS):
            idx = lo + b * BLOCK + lanes
            x = tl.load(t_row + idx)
            if RESIDUAL:
                best, best_idx = _residual_update(x, tl.load(d_row + idx), idx, token_product(idx), key, scale, lse_t,
                                                  lse_d, best, best_idx, FAST_LOG)
            else:
                best, best_idx = _target_update(x, idx, token_product(idx), key, scale, excluded, best, best_idx,
                                                FAST_LOG)
    else:
        for b in range(0, UNIT_BLOCKS):
            idx = lo + b * BLOCK + lanes
            x = tl.load(t_row + idx, mask=idx < hi, other=float("-inf"))
            if RESIDUAL:
                d = tl.load(d_row + idx, mask=idx < hi_d, other=float("-inf"))
                best, best_idx = _residual_update(x, d, idx, token_product(idx), key, scale, lse_t, lse_d, best,
                                                  best_idx, FAST_LOG)
            else:
                best, best_idx = _target_update(x, idx, token_product(idx), key, scale, excluded, best, best_idx,
                                                FAST_LOG)
    return best, best_idx


@triton.jit
def _lane_winner(best, best_idx):
    """(maximum, lowest column holding it) of a program's lanes."""
    m = tl.max(best, 0)
    return m, tl.min(tl.where(best == m, best_idx, 2147483647), 0)


@triton.jit
def _draw_from_p(t_row, vocab_size, key, scale, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr):
    """The whole row's Gumbel-max draw from ``p`` (token 0 for a row with no finite logit): the
    fallback of a rejected row whose residual has no mass, once per request, so not tuned."""
    lanes = tl.arange(0, BLOCK)
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    best_idx = lanes
    for off in range(0, vocab_size, BLOCK):
        idx = off + lanes
        x = tl.load(t_row + idx, mask=idx < vocab_size, other=float("-inf"))
        best, best_idx = _target_update(x, idx, token_product(idx), key, scale, -1, best, best_idx, FAST_LOG)
    _, win = _lane_winner(best, best_idx)
    return win.to(tl.int64)


# Only the logits' pointers and row strides are specialised (16-byte alignment: vectorised row
# loads). Everything else is read or written a scalar at a time, so a value of 1 or a multiple of
# 16 there would only compile another kernel per batch shape or layout. (Triton splits the two:
# do_not_specialize is the value 1, do_not_specialize_on_alignment the multiple of 16, where the
# installed Triton has it.)
_UNSPECIALISED = [
    "draft_tokens_ptr", "draft_tokens_stride_0", "draft_tokens_stride_1", "cu_num_logits_ptr",
    "cu_num_logits_stride_0", "idx_mapping_ptr", "idx_mapping_stride_0", "temperature_ptr", "temperature_stride_0",
    "seed_ptr", "seed_stride_0", "pos_ptr", "pos_stride_0", "out_tokens_ptr", "out_tokens_stride_0",
    "out_tokens_stride_1", "out_accepted_ptr", "out_accepted_stride_0", "stats_ptr", "best_ptr", "done_ptr",
    "num_reqs", "num_steps", "vocab_size", "draft_vocab_size", "num_units", "units_per_program", "num_splits",
]
_JIT_OPTIONS = {"do_not_specialize": _UNSPECIALISED}
if "do_not_specialize_on_alignment" in inspect.signature(triton.jit).parameters:
    _JIT_OPTIONS["do_not_specialize_on_alignment"] = _UNSPECIALISED


@triton.jit(**_JIT_OPTIONS)
def _rejection_kernel(
    # [N, V] unit inner stride
    target_ptr,
    target_stride_0,
    # [R, >= S, W] unit inner stride (read only with HAS_DRAFT)
    draft_ptr,
    draft_stride_0,
    draft_stride_1,
    # [Q, S] int
    draft_tokens_ptr,
    draft_tokens_stride_0,
    draft_tokens_stride_1,
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
    # [Q, S + 1] int64, written
    out_tokens_ptr,
    out_tokens_stride_0,
    out_tokens_stride_1,
    # [Q] int32, written
    out_accepted_ptr,
    out_accepted_stride_0,
    # EXCHANGE scratch (the launcher's, contiguous): [Q, 2, num_units, 4] int32 unit values;
    # [Q, num_splits] int64 winner slots; [Q + 1] int32 counters (0 at rest, the last one the
    # ticket dispenser), one 128-byte line per request
    stats_ptr,
    best_ptr,
    done_ptr,
    num_reqs,
    num_steps,
    vocab_size,
    draft_vocab_size,
    num_units,
    units_per_program,
    num_splits,
    HAS_DRAFT: tl.constexpr,
    EXCHANGE: tl.constexpr,
    FAST_LOG: tl.constexpr,
    BLOCK: tl.constexpr,
    UNIT_BLOCKS: tl.constexpr,
    UNITS_P2: tl.constexpr,
    STEPS_P2: tl.constexpr,
    # Elements per thread and block in the log-sum-exp pass (at most 16 bytes)
    VEC: tl.constexpr,
    # EXCHANGE: (request, chunk) from the ticket dispenser (else from the program id: grids of at
    # most one program per multiprocessor)
    TICKETS: tl.constexpr = True,
    # Programmatic dependent launch: wait for the previous grid in the stream before any load
    PDL: tl.constexpr = 0,
):
    if PDL:
        tl.extra.cuda.gdc_wait()
    if EXCHANGE:
        if TICKETS:
            # Programs take their (request, chunk) from a ticket, first come, first served: a
            # program waits only for programs of its own request that already hold tickets, or for
            # at most num_splits - 1 tickets not yet taken, so the launch cannot deadlock while
            # num_splits programs fit on the device at once, whatever order the hardware starts
            # them in.
            ticket_ptr = done_ptr + num_reqs * _DONE_STRIDE
            ticket = tl.atomic_add(ticket_ptr, 1, sem="relaxed")
            if ticket == num_reqs * num_splits - 1:
                # Every ticket of this launch is taken: the dispenser returns to rest for the next.
                tl.atomic_xchg(ticket_ptr, 0, sem="relaxed")
        else:
            # No more programs than multiprocessors: all of them are resident at once, in any
            # start order, and the program id saves the ticket's round trip to L2.
            ticket = tl.program_id(0)
        req = (ticket // num_splits).to(tl.int64)
        split = ticket % num_splits
    else:
        req = tl.program_id(0).to(tl.int64)
        split = 0
    # The request's draft tokens at once, first: their load depends on nothing else, so it overlaps
    # the ones below instead of following them (each dependent load is a round trip to memory, and
    # at small batches the chain of them is most of a call).
    tokens_row = draft_tokens_ptr + req * draft_tokens_stride_0
    j = tl.arange(0, STEPS_P2)
    drafts = tl.load(tokens_row + j * draft_tokens_stride_1, mask=j < num_steps, other=-1)
    # Held as int32 (fewer registers across the kernel): an id outside [0, V) becomes -1 first, so
    # none wraps into a valid one.
    drafts = tl.where((drafts >= 0) & (drafts < vocab_size), drafts, -1).to(tl.int32)
    first = tl.load(cu_num_logits_ptr + req * cu_num_logits_stride_0).to(tl.int64)
    last = tl.load(cu_num_logits_ptr + (req + 1) * cu_num_logits_stride_0).to(tl.int64)
    # Drafts of the request: its rows less the bonus row, at most the S columns of draft_tokens.
    n = tl.minimum(tl.maximum(last - first - 1, 0), num_steps)
    slot = tl.load(idx_mapping_ptr + req * idx_mapping_stride_0).to(tl.int64)
    temp = tl.load(temperature_ptr + slot * temperature_stride_0).to(tl.float32)
    seed = tl.load(seed_ptr + slot * seed_stride_0)
    greedy = temp == 0.0
    scale = _LOG2E / tl.where(greedy, 1.0, temp)
    UNIT: tl.constexpr = BLOCK * UNIT_BLOCKS
    # The program's chunk: units [unit_lo, unit_hi), columns [start, end). A unit index or column
    # inside one row stays below V < 2**31 (the launcher checks), so int32 cannot wrap.
    unit_lo = split * units_per_program  # stridecheck: ignore[SC001, SC006]
    unit_hi = tl.minimum(unit_lo + units_per_program, num_units)
    draft_req = draft_ptr + slot * draft_stride_0
    # The bonus row's position, for its key if every draft is accepted (loaded now, not after).
    bonus_pos = tl.load(pos_ptr + (first + n) * pos_stride_0)

    # Verification: step by step until a rejection. Every program of a request decides alike (the
    # same merged values, the same arithmetic).
    accepted = tl.full((), 0, tl.int64)
    rounds = tl.full((), 0, tl.int32)
    going = n > 0
    valid = n < 0
    x = tl.full((), -1, tl.int64)
    lse_t = tl.full((), 0.0, tl.float32)
    lse_d = tl.full((), 0.0, tl.float32)
    gkey = tl.full((), -9223372036854775808, tl.int64)
    key = tl.full((), 0, tl.uint32)  # the last verified sampled row's noise key
    while going:
        row = first + accepted
        x = tl.sum(tl.where(j == accepted, drafts, 0), 0).to(tl.int64)
        # A negative (placeholder) or out-of-range draft id is rejected without a test and ends
        # verification; its token is drawn from p (sampled) or is the argmax (greedy).
        valid = (x >= 0) & (x < vocab_size)
        xc = tl.where(valid, x, 0)
        t_row = target_ptr + row * target_stride_0
        d_row = draft_req + accepted * draft_stride_1
        ok = n < 0
        if greedy | valid:
            # The draft token's logits and the row's uniform first: their loads then overlap the
            # row's pass instead of following its exchange. Accept with probability
            # min(1, p(x) / q(x)): u < p(x) / q(x), in base-2 logs. The uniform u = (h + 1/2) / 2**32
            # is the verification stream's hash of this row's key at the "token" 2**32 - 1, which no
            # column has (V < 2**31): for a fixed key the hash is a bijection of the token, so u is
            # none of the row's Gumbel noises, and the residual draw below (same key, the row's
            # columns) does not reuse it. (Greedy rows load and hash for nothing: a few scalars.)
            tx = tl.load(t_row + xc).to(tl.float32)
            if HAS_DRAFT:
                dx = tl.load(d_row + xc, mask=xc < draft_vocab_size, other=float("-inf")).to(tl.float32)
            key = row_key(seed, tl.load(pos_ptr + row * pos_stride_0), 0)  # 0: the verification stream
            log2u = _log2(token_hash(key, tl.full((), -1, tl.int32)).to(tl.float32) + 0.5, FAST_LOG) - 32.0
            lse_t, lse_d, gkey = _verify_round(
                t_row, d_row, stats_ptr, done_ptr, req, greedy, scale, draft_vocab_size, vocab_size, unit_lo, unit_hi,
                num_units, num_splits, rounds, HAS_DRAFT, EXCHANGE, BLOCK, UNIT_BLOCKS, UNITS_P2, VEC,
            )
            rounds += 1
            if greedy:
                ok = valid & (unpack_index(gkey) == x)
            else:
                if HAS_DRAFT:
                    lq = dx * scale - lse_d
                else:
                    lq = 0.0  # one-hot draft: q(x) = 1
                ok = log2u < (tx * scale - lse_t) - lq
        accepted = tl.where(ok, accepted + 1, accepted)
        going = ok & (accepted < n)

    # The draw at the stopping row: the first rejected step's row, or the bonus row.
    stop = first + accepted
    bonus = accepted == n
    rejected_draft = (accepted < n) & valid
    t_row = target_ptr + stop * target_stride_0
    if greedy:
        packed = gkey  # the rejected row's argmax, merged over every unit
        if bonus:
            packed = tl.full((), -9223372036854775808, tl.int64)
            for u in range(unit_lo, unit_hi):
                lo = u * UNIT
                packed = tl.maximum(packed, _unit_greedy(t_row, lo, tl.minimum(lo + UNIT, vocab_size), BLOCK,
                                                         UNIT_BLOCKS))
    else:
        if bonus:
            key = row_key(seed, bonus_pos, 0)  # 0: the verification stream
        elif ~valid:
            # A placeholder's row, whose key the verification did not compute.
            key = row_key(seed, tl.load(pos_ptr + stop * pos_stride_0), 0)
        lanes = tl.arange(0, BLOCK)
        best = tl.full((BLOCK,), float("-inf"), tl.float32)
        best_idx = unit_lo * UNIT + lanes
        if HAS_DRAFT:
            residual = rejected_draft
        else:
            residual = False  # compiled out: one-hot drafts have no residual row
        if residual:
            d_row = draft_req + accepted * draft_stride_1
            for u in range(unit_lo, unit_hi):
                lo = u * UNIT
                hi = tl.minimum(lo + UNIT, vocab_size)
                best, best_idx = _draw_unit(t_row, d_row, lo, hi, tl.minimum(hi, draft_vocab_size), key, scale, lse_t,
                                            lse_d, -1, best, best_idx, True, FAST_LOG, BLOCK, UNIT_BLOCKS)
        else:
            # p itself (bonus row, rejected placeholder), or p less the rejected token (one-hot q).
            excluded = tl.where(rejected_draft, x, -1).to(tl.int32)
            for u in range(unit_lo, unit_hi):
                lo = u * UNIT
                hi = tl.minimum(lo + UNIT, vocab_size)
                best, best_idx = _draw_unit(t_row, t_row, lo, hi, hi, key, scale, lse_t, lse_d, excluded, best,
                                            best_idx, False, FAST_LOG, BLOCK, UNIT_BLOCKS)
        m, win = _lane_winner(best, best_idx)
        packed = pack_key_index(m, win)
    finishing = n >= 0
    if EXCHANGE:
        # Each program's winner in its own slot (a plain store; slots need no resting value), then
        # the count: its release publishes the slot, and the last program's acquire makes every
        # slot visible to its read (one round trip fewer than an atomic maximum before the count).
        slots = best_ptr + req * num_splits
        tl.store(slots + split, packed)
        tl.debug_barrier()
        finished = tl.atomic_add(done_ptr + req * _DONE_STRIDE, 1, sem="acq_rel")
        finishing = finished == (rounds + 1) * num_splits - 1
        if finishing:
            # Last program of the request: the slots' maximum; the counter back to rest (the
            # launch's end orders the store before the next launch's first count).
            sp = tl.arange(0, UNITS_P2)  # num_splits <= num_units <= UNITS_P2
            packed = tl.max(tl.load(slots + sp, mask=sp < num_splits, other=-9223372036854775808,
                                    cache_modifier=".cg"), 0)
            tl.store(done_ptr + req * _DONE_STRIDE, 0)
    if finishing:
        token = unpack_index(packed)
        if (temp != 0.0) & rejected_draft:
            # A rejected draft whose residual has no mass (no column with p > q: p == q, where
            # exact arithmetic accepts; or a NaN that made the log-sum-exp undefined), or whose
            # one-hot residual is empty: a draw from p with the same noise instead.
            if (packed >> 32) == ordered_key(tl.full((), float("-inf"), tl.float32)):
                token = _draw_from_p(t_row, vocab_size, key, scale, FAST_LOG, BLOCK)
        emitted = tl.where(j < accepted, drafts, tl.where(j == accepted, token, -1))
        tl.store(out_tokens_ptr + req * out_tokens_stride_0 + j * out_tokens_stride_1, emitted, mask=j <= num_steps)
        tl.store(out_accepted_ptr + req * out_accepted_stride_0, accepted.to(tl.int32))


class RejectionResult(NamedTuple):
    """What :func:`rejection_sample` returns."""

    #: [Q, S + 1] int64: request ``r`` emits ``tokens[r, :num_accepted[r] + 1]``; the rest is
    #: :data:`PLACEHOLDER`.
    tokens: torch.Tensor
    #: [Q] int32: drafts accepted per request (tokens emitted: one more).
    num_accepted: torch.Tensor


class LaunchConfig(NamedTuple):
    """A launch's configuration (:func:`launch_config`)."""

    block: int
    num_warps: int
    #: Blocks per unit (the granularity of the exchanged log-sum-exps)
    unit_blocks: int
    #: Programs per request wanted (the launcher caps it by the units and, off CUDA, at 1)
    splits: int


def sm_count(device: torch.device) -> int:
    """Multiprocessors of a CUDA ``device``."""
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def launch_config(num_reqs: int, vocab_size: int, dtype: torch.dtype, device: torch.device) -> LaunchConfig:
    """The launch's :class:`LaunchConfig`; tests and benchmarks may replace it.

    On a GPU: blocks of 1,024 columns and 8 warps, four columns a thread (at eight, with 4 warps,
    the kernel took 72 registers in float32 and 96 in bfloat16 against 60-64 here: sm_90, triton
    3.9, offline; ``benchmarks/rejection.py --sass``), units of two blocks, and as many programs per
    request as fill about four per multiprocessor (a small batch is latency-bound: more programs,
    shorter chains), but chunks of at most 8,192 columns (float32) or 16,384 (16-bit), the widths
    of :mod:`guarded_kernels.resample`'s one launch, whose re-read of a chunk is mostly served from
    L2. From 64 to 256 requests, units of four blocks and chunks of at most 32,768 columns: swept
    on an H200 (sm_90, triton 3.6; graph replay, every draft rejected; V = 151,936 and 262,144,
    both dtypes) against the rules above, 8-23% faster at 64 requests, 4-11% at 256 (2% slower in
    float32 at V = 151,936), but 12-15% slower at 1 request. At most one program per
    multiprocessor and request (the exchange needs a request's programs resident at once). In the
    CPU interpreter one program per request walks the row in blocks of 256."""
    if device.type != "cuda":
        return LaunchConfig(256, 4, 2, 1)
    sms = sm_count(device)
    block, unit_blocks = 1024, 2
    columns = 8192 if dtype.itemsize >= 4 else 16384
    if 64 <= num_reqs <= 256:
        unit_blocks, columns = 4, 32768
    units = triton.cdiv(vocab_size, block * unit_blocks)
    splits = max(triton.cdiv(vocab_size, columns), triton.cdiv(4 * sms, max(num_reqs, 1)))
    return LaunchConfig(block, 8, unit_blocks, max(1, min(splits, units, sms)))


def max_registers(dtype: torch.dtype, device: torch.device) -> int | None:
    """A per-thread register cap for the launch (Triton's ``maxnreg``), or None; benchmarks may
    replace it. On a GPU 64, four 8-warp programs per multiprocessor: uncapped, ptxas gave some
    configurations 80 (three per multiprocessor) for a few registers of pressure in rare paths;
    capped there are no spills (``benchmarks/rejection.py --sass``: sm_90, triton 3.9)."""
    return 64 if device.type == "cuda" else None


def use_pdl(num_reqs: int, device: torch.device) -> bool:
    """Programmatic dependent launch (CUDA Programming Guide, "Programmatic Dependent Launch and
    Synchronization") on NVIDIA compute capability >= 9.0: the launch overlaps the end of the
    previous kernel in the stream, and the kernel waits for it (``griddepcontrol.wait``) before
    its first load and its first atomic. :func:`guarded_kernels.gumbel_sample` measured it level
    or faster below 64 rows (``benchmarks/sampling.py``), where the launch is most of a call;
    here it is on at every batch size (the wait costs nothing once the previous grid is done),
    which also keeps one compiled kernel per shape instead of two. Benchmarks may replace it."""
    if device.type != "cuda" or interpreting():
        return False
    return _pdl_capable(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _pdl_capable(index: int) -> bool:
    return torch.version.hip is None and torch.cuda.get_device_capability(index)[0] >= 9


class _Plan(NamedTuple):
    grid: tuple
    num_units: int
    units_per_program: int
    num_splits: int
    exchange: bool
    meta: dict
    launch: Launcher


@functools.lru_cache(maxsize=256)
def _plan(config_fn, pdl_fn, regs_fn, num_reqs: int, num_steps: int, vocab_size: int, dtype: torch.dtype,
          device: torch.device, has_draft: bool, fast_log: bool) -> _Plan:
    """The launch for a shape, cached; the policy functions are arguments (and so in the cache's
    key) because tests and benchmarks replace them."""
    block, warps, unit_blocks, splits = config_fn(num_reqs, vocab_size, dtype, device)
    elt_size = dtype.itemsize
    num_units = triton.cdiv(vocab_size, block * unit_blocks)
    if num_units > 4096:
        # The merge holds a row's units in one vector: wider units for a vocabulary above 8,388,608
        # columns (more blocks unrolled per unit: slower to compile, more registers; no model's
        # vocabulary is near it).
        unit_blocks = triton.cdiv(triton.cdiv(vocab_size, block), 4096)
        num_units = triton.cdiv(vocab_size, block * unit_blocks)
    if device.type != "cuda":
        # The interpreter runs programs one after another: a program waiting for another of its
        # request would wait forever.
        splits = 1
    per_program = triton.cdiv(num_units, max(1, min(splits, num_units)))
    splits = triton.cdiv(num_units, per_program)
    exchange = splits > 1
    meta = dict(
        HAS_DRAFT=has_draft,
        EXCHANGE=exchange,
        FAST_LOG=fast_log,
        BLOCK=block,
        UNIT_BLOCKS=unit_blocks,
        VEC=max(1, min(16 // elt_size, block // (32 * warps))),
        # Vector widths rounded up to a few buckets: fewer kernels to compile, for a few idle lanes.
        UNITS_P2=max(32, triton.next_power_of_2(num_units)),
        STEPS_P2=max(8, triton.next_power_of_2(num_steps + 1)),
        num_warps=warps,
    )
    if exchange and device.type == "cuda":
        meta["TICKETS"] = num_reqs * splits > sm_count(device)
    cap = regs_fn(dtype, device)
    if cap is not None and device.type == "cuda":
        meta["maxnreg"] = cap
    if pdl_fn(num_reqs, device):
        meta.update(PDL=1, launch_pdl=True)
    grid = (num_reqs * splits, 1) if exchange else (num_reqs, 1)
    options = {k: meta[k] for k in _LAUNCH_OPTIONS if k in meta}
    launch = Launcher(_rejection_kernel, {k: v for k, v in meta.items() if k not in _LAUNCH_OPTIONS}, options)
    return _Plan(grid, num_units, per_program, splits, exchange, meta, launch)


# Keys of a plan's `meta` that are launch options, not constexprs.
_LAUNCH_OPTIONS = ("num_warps", "maxnreg", "launch_pdl")
# Every runtime parameter is unspecialised (`_JIT_OPTIONS`): a compiled kernel serves any values
# and, where Triton can be told so, any pointer alignment; it still differs by the tensors' dtypes
# and by whether each integer fits in 32 bits.
_ALIGNMENT_FREE = "do_not_specialize_on_alignment" in _JIT_OPTIONS


_scratch: dict = {}
# Buffers replaced by larger ones stay alive: a CUDA graph captured with the old ones still
# addresses them on replay.
_retired: list = []


def _exchange_scratch(device: torch.device, num_reqs: int, num_units: int):
    """(stats, slots, done) for ``num_reqs`` requests of ``num_units`` units, cached per (device,
    stream): two launches in flight on one stream are ordered by it; on different streams they
    would share counters. ``done`` is at rest (0) between launches (each request's last program
    resets its counter, the last ticket the dispenser); ``stats`` and ``slots`` need no resting
    value (a launch writes every word it reads). Grown by a fresh allocation when too small; under
    CUDA-graph capture a first allocation is captured with its fill, so warm up before capturing."""
    key = (device, _stream_id(device))
    entry = _scratch.get(key)
    if entry is None or entry[3] < num_reqs or entry[4] < num_units:
        reqs = max(num_reqs, 256 if entry is None else entry[3])
        units = max(num_units, 0 if entry is None else entry[4])
        stats = torch.empty((reqs * 2 * units * 4,), dtype=torch.int32, device=device)
        # A request's winner slots: num_splits <= num_units of them.
        slots = torch.empty((reqs * units,), dtype=torch.int64, device=device)
        # One line more than requests: the ticket dispenser.
        done = torch.zeros(((reqs + 1) * _DONE_STRIDE.value,), dtype=torch.int32, device=device)
        if entry is not None:
            _retired.append(entry)
        entry = (stats, slots, done, reqs, units)
        _scratch[key] = entry
    return entry


@stride_guard(
    target_logits=Tensor("N V", dtype=_FLOATS),
    draft_logits=Tensor("R >=S >=Vd", dtype=_FLOATS),
    draft_tokens=Tensor("Q S", dtype=_INTS, inner_stride=None),
    cu_num_logits=Tensor("*", dtype=_INTS, inner_stride=None),
    idx_mapping=Tensor("Q", dtype=_INTS, inner_stride=None),
    temperature=Tensor("R", dtype=torch.float32, inner_stride=None),
    seed=Tensor("R", dtype=torch.int64, inner_stride=None),
    pos=Tensor("N", dtype=torch.int64, inner_stride=None),
    draft_vocab_size="Vd",
    out_tokens=Tensor("Q *", dtype=torch.int64, inner_stride=None, writes=True),
    out_num_accepted=Tensor("Q", dtype=torch.int32, inner_stride=None, writes=True),
)
@quiet_interpreter
def rejection_sample(
    target_logits: torch.Tensor,
    draft_logits: torch.Tensor | None,
    draft_tokens: torch.Tensor,
    cu_num_logits: torch.Tensor,
    idx_mapping: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    pos: torch.Tensor,
    *,
    draft_vocab_size: int | None = None,
    out_tokens: torch.Tensor | None = None,
    out_num_accepted: torch.Tensor | None = None,
) -> RejectionResult:
    """Verify each request's draft tokens against the target model and emit the accepted prefix plus
    one token: the replacement for the first rejected draft, or the bonus token.

    Args:
        target_logits: [N, V] float32 / bfloat16 / float16, any row stride, unit inner stride;
            request ``r`` owns rows ``cu_num_logits[r] .. cu_num_logits[r + 1] - 1``: one per draft
            step (row ``cu_num_logits[r] + i`` verifies draft ``i``), then its bonus row.
            Pre-temperature logits.
        draft_logits: [R, S', W] with ``S' >= S``, or None; ``draft_logits[idx_mapping[r], i, :V_d]``
            are the draft model's pre-temperature logits of step ``i`` of request ``r`` (the
            layout of :func:`guarded_kernels.gumbel_sample`'s ``logits_cache``), addressed through
            the tensor's own strides (``W`` may exceed ``V_d``). None: one-hot drafts (n-gram or
            other deterministic proposers), ``q_i`` a point mass on the draft token.
        draft_tokens: [Q, S] int32 / int64, the drafted token ids, any strides; request ``r`` has
            ``n_r = cu_num_logits[r + 1] - cu_num_logits[r] - 1 <= S`` drafts (``S`` columns at
            most are read). A negative id (a placeholder) or one outside ``[0, V)`` is rejected
            without a test and ends the request's verification; its token is drawn from ``p``.
        cu_num_logits: [Q + 1] int32 / int64, cumulative rows per request.
        idx_mapping: [Q] int, request -> request-state slot in ``[0, R)``.
        temperature: [R] float32 per slot, dimensionless, ``>= 0``; 0 selects greedy verification:
            a draft is accepted iff it equals ``torch.argmax`` of its target row (the lowest index
            on ties, the first NaN of a row that has one), and the emitted token is that argmax
            (of the bonus row when every draft is accepted). ``p`` and ``q`` are the softmaxes of
            the logits divided by it.
        seed: [R] int64 per slot.
        pos: [N] int64, each target row's position, in tokens: with the seed it keys the noise
            (:mod:`guarded_kernels.noise`, verification stream), so results do not depend on the
            batch, the launch grid or the vocabulary split. Rows of one request need distinct
            positions.
        draft_vocab_size: ``V_d <= min(V, W)``, default ``W``: ``q`` is zero beyond it.
        out_tokens: optional [Q, S + 1] int64 output (any strides, no overlapping elements), e.g.
            a buffer a CUDA graph replays into; allocated when None.
        out_num_accepted: optional [Q] int32 output; allocated when None.

    Returns:
        :class:`RejectionResult` ``(tokens, num_accepted)``: ``tokens`` [Q, S + 1] int64, whose row
        ``r`` holds the ``num_accepted[r]`` accepted drafts, then the replacement or bonus token
        (always in ``[0, V)``), then :data:`PLACEHOLDER` (-1); ``num_accepted`` [Q] int32 in
        ``[0, n_r]``. Request ``r`` emits ``num_accepted[r] + 1`` tokens.

    Algorithm:
        Step ``i`` accepts ``x_i`` iff ``u_i < p_i(x_i) / q_i(x_i)``, ``u_i`` uniform in ``(0, 1)``
        (32 bits), which is acceptance with probability ``min(1, p / q)``. At the first rejection
        the token is drawn from ``max(p_i - q_i, 0)`` normalised (one-hot drafts: ``p_i`` without
        ``x_i``; a placeholder draft: ``p_i``); after ``n`` acceptances from ``p_n``. Then every
        emitted token is distributed as the target's (Leviathan et al., ICML 2023, theorem 1 and
        appendix A.1; Chen et al., 2023, theorem 1): ``P(x) = min(p, q) + (1 - sum min(p, q)) *
        max(p - q, 0) / sum max(p - q, 0) = p(x)``, for any ``q``, also one drawn by
        :func:`guarded_kernels.gumbel_sample` with ``is_drafting=True``, whose noise stream is
        disjoint from the one verification uses. Draws are Gumbel-max (Gumbel, 1954; Maddison et al.,
        *A\\* Sampling*, 2014) with :mod:`guarded_kernels.noise`'s verification noise keyed by
        ``(seed[slot], pos[row], token)``: the bonus row draws exactly the token
        :func:`guarded_kernels.gumbel_sample` draws for that row. ``u_i`` is the same stream's hash
        of row ``cu_num_logits[r] + i`` at a token id no vocabulary has (2**32 - 1), distinct from
        every noise value of that row. Log-sum-exps are float32 over units of the vocabulary
        merged in a fixed order, so decisions and tokens are bit for bit the same for any launch
        split. A rejected row whose residual has no mass (``p == q``, where exact arithmetic would
        have accepted; or a NaN in either row, which makes its log-sum-exp undefined) draws from
        ``p``, the token :func:`guarded_kernels.gumbel_sample` draws for that row. Sampled rows
        treat NaN logits as probability 0; a row with no finite logit returns token 0.

    Precision:
        float32 throughout. ``log2 u_i`` is compared with ``log2 p - log2 q``, each log-sum-exp
        exact to float32 rounding (~1e-6 relative): an acceptance probability is off by about
        that much. The residual weight is ``p - q`` from two exponentials (~2e-6 / (1 - q/p)
        relative error; on a GPU a probability below 2**-126 may flush to zero), its key
        ``log2(p - q)`` plus the noise of :mod:`guarded_kernels.noise` (its 32-bit uniform resolves
        tokens up to ~20 nats below the best).

    Launch:
        One Triton launch, no host synchronisation; the outputs are allocated unless given. The
        launch's scratch (a few words per request) is allocated per (device, stream) on first use,
        so make one call on a stream before capturing a CUDA graph on it; calls on one stream are
        ordered by it, calls in flight on two streams have their own scratch.

    Raises:
        StrideGuardError: a layout the kernel cannot address, or inconsistent sizes.
        ValueError: ``cu_num_logits`` not [Q + 1]; ``V == 0`` or ``V >= 2**31``; ``draft_vocab_size``
            outside ``[1, min(V, W)]``; ``out_tokens`` not [Q, S + 1].
    """
    num_rows, vocab_size = target_logits.shape
    num_reqs, num_steps = draft_tokens.shape
    device = target_logits.device
    if cu_num_logits.dim() != 1 or cu_num_logits.shape[0] != num_reqs + 1:
        raise ValueError(
            f"rejection_sample: cu_num_logits must be [num_reqs + 1] = [{num_reqs + 1}], "
            f"got {tuple(cu_num_logits.shape)}"
        )
    if vocab_size == 0:
        raise ValueError("rejection_sample: target_logits has 0 columns; there is no token to draw")
    if vocab_size >= 2**31:
        raise ValueError(f"rejection_sample: V = {vocab_size} >= 2**31; token ids are 32-bit in the kernel")
    if out_tokens is None:
        out_tokens = torch.empty((num_reqs, num_steps + 1), dtype=torch.int64, device=device)
    elif out_tokens.shape[1] != num_steps + 1:
        raise ValueError(
            f"rejection_sample: out_tokens must be [Q, S + 1] = [{num_reqs}, {num_steps + 1}], "
            f"got {tuple(out_tokens.shape)}"
        )
    if out_num_accepted is None:
        out_num_accepted = torch.empty((num_reqs,), dtype=torch.int32, device=device)
    if num_reqs == 0:
        return RejectionResult(out_tokens, out_num_accepted)
    has_draft = draft_logits is not None
    if has_draft:
        width = draft_logits.shape[2]
        vd = width if draft_vocab_size is None else int(draft_vocab_size)
        if not 0 < vd <= min(width, vocab_size):
            raise ValueError(
                f"rejection_sample: draft_vocab_size must be in [1, min(W, V)] = [1, {min(width, vocab_size)}], "
                f"got {vd}"
            )
        draft = draft_logits
        d0, d1, _ = draft_logits.stride()
    else:
        vd, draft, d0, d1 = 0, target_logits, 0, 0
    plan = _plan(launch_config, use_pdl, max_registers, num_reqs, num_steps, vocab_size, target_logits.dtype, device,
                 has_draft, use_fast_log(device))
    if plan.exchange:
        stats, best, done, _, _ = _exchange_scratch(device, num_reqs, plan.num_units)
    else:
        stats = best = done = out_num_accepted  # never addressed without EXCHANGE
    # One stride() call per tensor (a tuple), not one per dimension: this is the eager call's path.
    t_s0 = target_logits.stride()[0]
    k_s0, k_s1 = draft_tokens.stride()
    o_s0, o_s1 = out_tokens.stride()
    c_s0, i_s0, tp_s0, sd_s0, p_s0, a_s0 = (cu_num_logits.stride()[0], idx_mapping.stride()[0],
                                            temperature.stride()[0], seed.stride()[0], pos.stride()[0],
                                            out_num_accepted.stride()[0])
    args = (target_logits, t_s0, draft, d0, d1, draft_tokens, k_s0, k_s1, cu_num_logits, c_s0, idx_mapping, i_s0,
            temperature, tp_s0, seed, sd_s0, pos, p_s0, out_tokens, o_s0, o_s1, out_num_accepted, a_s0, stats, best,
            done, num_reqs, num_steps, vocab_size, vd, plan.num_units, plan.units_per_program, plan.num_splits)
    # What a compiled kernel depends on beyond the plan (see _ALIGNMENT_FREE): the dtypes, and 32-bit
    # integers (the strides and extents are the only integers that could leave that range).
    ints = (t_s0, d0, d1, k_s0, k_s1, c_s0, i_s0, tp_s0, sd_s0, p_s0, o_s0, o_s1, a_s0, vocab_size)
    key = None
    if max(ints) < 2**31 and min(ints) >= -(2**31) and (_ALIGNMENT_FREE or not (
            target_logits.data_ptr() | draft.data_ptr() | draft_tokens.data_ptr() | cu_num_logits.data_ptr()
            | idx_mapping.data_ptr() | temperature.data_ptr() | seed.data_ptr() | pos.data_ptr()
            | out_tokens.data_ptr() | out_num_accepted.data_ptr() | stats.data_ptr() | best.data_ptr()
            | done.data_ptr()) & 15):
        key = (target_logits.dtype, draft.dtype, draft_tokens.dtype, cu_num_logits.dtype, idx_mapping.dtype)
    plan.launch(plan.grid, key, args)
    return RejectionResult(out_tokens, out_num_accepted)
