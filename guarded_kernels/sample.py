"""Gumbel-max sampling of one token per row, with an optional bit-exact logits cache.

The kernel walks each row's vocabulary in blocks, adds counter-based Gumbel noise
(:mod:`guarded_kernels.noise`) to ``logit / temperature`` and keeps a per-lane running maximum;
when several programs share a row (few rows, large vocabulary) they merge their winners in the
same launch through an atomic maximum on a packed (key, index) word (below 64 rows: through one
slot per program), and the last program to finish writes the token
(:mod:`guarded_kernels._workspace`). One launch per call; below 64 rows, on NVIDIA compute
capability >= 9.0, a programmatic dependent launch.

How a call is launched is a :class:`SamplePlan`, made by :func:`sample_plan` from the measured
rules below (each with the H200 measurement that chose it); tests and benchmarks pass their own.
:mod:`guarded_kernels.sample_reference` is the same draw in one page, without the tuning.

From 64 rows on a GPU, where a program walks at least 32 blocks, the loop skips the noise of every
block that cannot hold the program's maximum: each element's noise is bounded from its hash's
leading zeros (:func:`guarded_kernels.noise.noise_octave`), and a block whose largest
``scaled logit + bound`` stays below the best key so far is left out. The draws are bit for bit
those of the loop without the skip.
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
from guarded_kernels._workspace import row_scratch, row_slots
from guarded_kernels.noise import (
    DRAFT_STREAM,
    VERIFY_STREAM,
    block_key_bound,
    neg_log2_exponential,
    row_key,
    token_hash_finish,
    token_hash_of_product,
    token_hash_unfinished,
    token_product,
    unpack_index,
)
from stridecheck import Tensor, stride_guard

# Names this module exported before the shared helpers moved to guarded_kernels._common; kept
# while code outside this package may still import them from here.
_FLOATS, _INTS, _LOG2E = FLOATS, INTS, LOG2E
_greedy_update, _merge_key, _row_argmax, _row_winner, _wave_splits = (
    greedy_update, merge_key, row_argmax, row_winner, wave_splits)


@triton.jit
def _sample_block(
    x, source_row_ptr, cache_row_ptr, idx, idx_g, end, key, scale, best_val, best_idx,
    GREEDY: tl.constexpr, MASKED: tl.constexpr, HAS_CACHE: tl.constexpr, HAS_SOURCE: tl.constexpr,
    USE_FP64: tl.constexpr, FAST_LOG: tl.constexpr, LANE_MAX: tl.constexpr,
):
    """One loaded block ``x`` of a row (columns ``idx``, their ``token_product`` ``idx_g``): cache
    the raw values, add the noise, update the maximum."""
    _cache_block(x, source_row_ptr, cache_row_ptr, idx, end, MASKED=MASKED, HAS_CACHE=HAS_CACHE, HAS_SOURCE=HAS_SOURCE)
    if USE_FP64:
        xf = x.to(tl.float64)
    else:
        xf = x.to(tl.float32)
    if GREEDY:
        new_val, new_idx = greedy_update(xf, idx, best_val, best_idx)
    else:
        k = _sampled_key(xf, idx_g, key, scale, FAST_LOG=FAST_LOG, USE_FP64=USE_FP64)
        if not LANE_MAX:
            # NaN compares false: a NaN logit never wins a sampled draw.
            upd = k > best_val
            new_val = tl.where(upd, k, best_val)
            new_idx = tl.where(upd, idx, best_idx)
        else:
            # Only the lane maximum (one max instruction, which ignores NaN: a NaN logit never
            # wins); the winning column is found once per program by _lane_winner.
            new_val = tl.maximum(best_val, k)
            new_idx = best_idx
    return new_val, new_idx


@triton.jit
def _cache_block(x, source_row_ptr, cache_row_ptr, idx, end, MASKED: tl.constexpr, HAS_CACHE: tl.constexpr,
                 HAS_SOURCE: tl.constexpr):
    """With ``HAS_CACHE``, copy a block's raw input values (before any temperature, bit-exact) to
    the cache row: ``x`` as loaded, or the source row's values at ``idx``."""
    if HAS_CACHE:
        if HAS_SOURCE:
            if MASKED:
                tl.store(cache_row_ptr + idx, tl.load(source_row_ptr + idx, mask=idx < end), mask=idx < end)
            else:
                tl.store(cache_row_ptr + idx, tl.load(source_row_ptr + idx))
        else:
            if MASKED:
                tl.store(cache_row_ptr + idx, x, mask=idx < end)
            else:
                tl.store(cache_row_ptr + idx, x)


@triton.jit
def _sampled_key(xf, idx_g, key, scale, FAST_LOG: tl.constexpr, USE_FP64: tl.constexpr):
    """The base-2 Gumbel-max key of the columns whose ``token_product`` is ``idx_g``, with logits
    ``xf`` (the one expression the main loops and :func:`_lane_winner` evaluate, so that they
    agree bit for bit)."""
    return _key_of_hash(xf, token_hash_of_product(key, idx_g), scale, FAST_LOG=FAST_LOG, USE_FP64=USE_FP64)


@triton.jit
def _key_of_hash(xf, h, scale, FAST_LOG: tl.constexpr, USE_FP64: tl.constexpr):
    # The key from the token hash h: every sampled key of this module is this expression.
    return xf * scale + neg_log2_exponential(h, FAST_LOG, USE_FP64)


@triton.jit
def _lane_winner(logits_row_ptr, start, end, key, scale, best_val, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr,
                 GATHER: tl.constexpr):
    """(maximum, its column) of a program's sampled chunk from the per-lane maxima alone.

    The main loop keeps no column per lane: selecting one beside the maximum costs two more
    integer-pipe instructions per element, the pipe that bounds the loop. Lane ``l`` saw columns
    ``start + l + j * BLOCK``; the lowest lane holding the maximum is re-read (``GATHER`` columns
    at a time, once per program) and its keys recomputed by the same expression, and the first
    column with the largest of them is the winner. A chunk with no finite key (all NaN or
    ``-inf``) returns ``start``.
    """
    lanes = tl.arange(0, BLOCK)
    m = tl.max(best_val, 0)
    lane = tl.min(tl.where(best_val == m, lanes, BLOCK), 0)
    win = start + lane * 0  # an int32 scalar tensor holding start
    found = tl.full((), float("-inf"), tl.float32)
    if m > float("-inf"):
        j = tl.arange(0, GATHER)
        for j0 in range(0, end - start, GATHER * BLOCK):
            col = start + lane + j0 + j * BLOCK
            inside = col < end
            x = tl.load(logits_row_ptr + col, mask=inside, other=float("-inf")).to(tl.float32)
            kv = tl.where(inside, _sampled_key(x, token_product(col), key, scale, FAST_LOG=FAST_LOG, USE_FP64=False),
                          float("-inf"))
            km = tl.max(kv, 0)
            c = tl.min(tl.where(kv == km, col, 2147483647), 0)
            upd = km > found
            win = tl.where(upd, c, win)
            found = tl.where(upd, km, found)
    return m, win


@triton.jit
def _walk_chunk(
    logits_row_ptr, source_row_ptr, cache_row_ptr, start, end, key, scale_f, best_val, best_idx, x0, x1,
    GREEDY: tl.constexpr, HAS_CACHE: tl.constexpr, HAS_SOURCE: tl.constexpr, USE_FP64: tl.constexpr,
    FAST_LOG: tl.constexpr, BLOCK: tl.constexpr, LANE_MAX: tl.constexpr, EARLY: tl.constexpr,
    SKIP: tl.constexpr, STAGES: tl.constexpr,
):
    """Columns ``[start, end)`` of one row, BLOCK at a time: the per-lane running maximum. The first
    ``EARLY`` (0, 1 or 2) blocks arrive already loaded as ``x0`` / ``x1`` (masked to ``end``, ``-inf``
    beyond it: such lanes never update a maximum). ``SKIP`` (sampled ``LANE_MAX`` rows, float32
    keys) skips the noise of blocks that cannot hold the chunk's maximum."""
    lanes = tl.arange(0, BLOCK)
    if EARLY >= 1:
        best_val, best_idx = _sample_block(
            x0, source_row_ptr, cache_row_ptr, start + lanes, token_product(start + lanes), end, key, scale_f,
            best_val, best_idx, GREEDY=GREEDY, MASKED=True, HAS_CACHE=HAS_CACHE, HAS_SOURCE=HAS_SOURCE,
            USE_FP64=USE_FP64, FAST_LOG=FAST_LOG, LANE_MAX=LANE_MAX,
        )
    if EARLY >= 2:
        second = start + BLOCK + lanes
        best_val, best_idx = _sample_block(
            x1, source_row_ptr, cache_row_ptr, second, token_product(second), end, key, scale_f,
            best_val, best_idx, GREEDY=GREEDY, MASKED=True, HAS_CACHE=HAS_CACHE, HAS_SOURCE=HAS_SOURCE,
            USE_FP64=USE_FP64, FAST_LOG=FAST_LOG, LANE_MAX=LANE_MAX,
        )
    # The rest of the chunk after the preloaded blocks (empty when the chunk is that short: then
    # full_end = body > end and neither the loop nor the tail runs).
    if EARLY == 0:
        # Written without the maximum the other branch needs: this is the float32 long-chunk loop,
        # and its bound as written here compiles to the faster loop on triton 3.6.
        body = start
        full_end = start + ((end - start) // BLOCK) * BLOCK
    else:
        body = start + EARLY * BLOCK
        full_end = body + (tl.maximum(end - body, 0) // BLOCK) * BLOCK
    # Full blocks without a mask (so loads vectorise), then one masked tail block. The token
    # product is carried and stepped by BLOCK * 0x9E3779B1 (mod 2**32): one add per element.
    # Written as off * G + lanes * G, the compiler factors it back into (off + lanes) * G, an add
    # and a multiply.
    idx_g = token_product(body + lanes)
    if SKIP:
        # The exact block skip: a block whose every key is below the chunk's best so far cannot
        # change the lane maxima that decide the draw, so its noise is not evaluated. Per element
        # only the hash up to fmix32's last xorshift and the bound of block_key_bound (its leading
        # zeros, one multiply-add); one block maximum decides. The bound is never below a key as
        # computed, so a skipped block never held a key >= best_s: the lane maxima, and so the
        # drawn token, are bit for bit those of the loop without the skip. A NaN logit has a NaN
        # bound and a NaN key; the block maximum ignores it as the lane maximum does (on the GPU
        # and in the interpreter).
        best_s = tl.max(best_val, 0)
        for off in tl.range(body, full_end, BLOCK, num_stages=STAGES):
            x = tl.load(logits_row_ptr + off + lanes)
            _cache_block(x, source_row_ptr, cache_row_ptr, off + lanes, end, MASKED=False, HAS_CACHE=HAS_CACHE,
                         HAS_SOURCE=HAS_SOURCE)
            xf = x.to(tl.float32)
            h = token_hash_unfinished(key, idx_g)
            if block_key_bound(xf, scale_f, h, FAST_LOG) >= best_s:
                best_val = tl.maximum(best_val, _key_of_hash(xf, token_hash_finish(h), scale_f, FAST_LOG=FAST_LOG,
                                                             USE_FP64=False))
                best_s = tl.max(best_val, 0)
            idx_g += (BLOCK * 0x9E3779B1) % 4294967296
    else:
        for off in tl.range(body, full_end, BLOCK, num_stages=STAGES):
            best_val, best_idx = _sample_block(
                tl.load(logits_row_ptr + off + lanes), source_row_ptr, cache_row_ptr, off + lanes, idx_g, end,
                key, scale_f, best_val, best_idx, GREEDY=GREEDY, MASKED=False, HAS_CACHE=HAS_CACHE,
                HAS_SOURCE=HAS_SOURCE, USE_FP64=USE_FP64, FAST_LOG=FAST_LOG, LANE_MAX=LANE_MAX,
            )
            idx_g += (BLOCK * 0x9E3779B1) % 4294967296
    if full_end < end:
        tail = full_end + lanes
        x = tl.load(logits_row_ptr + tail, mask=tail < end, other=float("-inf"))
        best_val, best_idx = _sample_block(
            x, source_row_ptr, cache_row_ptr, tail, token_product(tail), end, key, scale_f, best_val, best_idx,
            GREEDY=GREEDY, MASKED=True, HAS_CACHE=HAS_CACHE, HAS_SOURCE=HAS_SOURCE, USE_FP64=USE_FP64,
            FAST_LOG=FAST_LOG, LANE_MAX=LANE_MAX,
        )
    return best_val, best_idx


@triton.jit
def _gumbel_sample_kernel(
    # [T, V] float32 / bfloat16 / float16, unit inner stride
    logits_ptr,
    logits_stride_0,
    # [T] int32 / int64
    idx_mapping_ptr,
    idx_mapping_stride_0,
    # [R] float32
    temperature_ptr,
    temperature_stride_0,
    # [R] int64
    seed_ptr,
    seed_stride_0,
    # [T] int64
    pos_ptr,
    pos_stride_0,
    # [R, S, W] W >= V, unit inner stride (None without HAS_CACHE)
    cache_ptr,
    cache_stride_0,
    cache_stride_1,
    # [T] int (cache_col_stride_0 == 0 for one column for the whole call; None without HAS_CACHE)
    cache_col_ptr,
    cache_col_stride_0,
    # [T, V] unit inner stride (None without HAS_SOURCE)
    source_ptr,
    source_stride_0,
    # [>= T] int64 / int32 self-resetting scratch (None without SPLIT); with MERGE_SLOTS best_ptr
    # is [>= T, >= num_splits] int64, row stride best_stride_0
    best_ptr,
    best_stride_0,
    done_ptr,
    done_stride_0,
    # [T] int64
    out_ptr,
    out_stride_0,
    vocab_size,
    chunk_size,
    num_splits,
    APPLY_TEMPERATURE: tl.constexpr,
    STREAM: tl.constexpr,
    HAS_CACHE: tl.constexpr,
    HAS_SOURCE: tl.constexpr,
    USE_FP64: tl.constexpr,
    FAST_LOG: tl.constexpr,
    SPLIT: tl.constexpr,
    # Sampled rows keep only lane maxima in the loop (never with USE_FP64)
    LANE_MAX: tl.constexpr,
    # Leading blocks of the chunk (0, 1 or 2) loaded before the idx_mapping -> seed chain
    EARLY: tl.constexpr,
    BLOCK: tl.constexpr,
    # Split rows merge through per-program slots (best_ptr: [>= T, >= num_splits] int64) instead of
    # one atomic maximum per row; SLOTS: a power of two >= num_splits
    MERGE_SLOTS: tl.constexpr = False,
    SLOTS: tl.constexpr = 1,
    # Programmatic dependent launch: 1 waits for the previous grid before any load, 2 also lets
    # the next grid launch at once
    PDL: tl.constexpr = 0,
    # The exact block skip of sampled LANE_MAX rows
    SKIP: tl.constexpr = False,
    # Software pipelining of the sampled main loop's loads (tl.range num_stages; 1: none)
    STAGES: tl.constexpr = 1,
):
    if PDL >= 1:
        # Every load below may read what the previous kernel in the stream wrote (the logits, the
        # merge scratch that the previous call's last program reset): nothing before the wait.
        tl.extra.cuda.gdc_wait()
    if PDL >= 2:
        tl.extra.cuda.gdc_launch_dependents()
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    if EARLY >= 1:
        # A column inside one row: below V < 2**31 (the launcher checks), so int32 cannot wrap;
        # keeping token ids 32-bit saves 64-bit integer work on every element.
        start = split * chunk_size  # stridecheck: ignore[SC006]
        end = tl.minimum(start + chunk_size, vocab_size)
        lanes = tl.arange(0, BLOCK)
        logits_row_ptr = logits_ptr + row * logits_stride_0
        # The row's address does not depend on idx_mapping: the first blocks' loads go out before
        # the dependent idx_mapping -> temperature / seed loads, so their latencies overlap instead
        # of adding up. A padding row loads them for nothing.
        x0 = tl.load(logits_row_ptr + start + lanes, mask=start + lanes < end, other=float("-inf"))
        x1 = x0
        if EARLY >= 2:
            x1 = tl.load(logits_row_ptr + start + BLOCK + lanes, mask=start + BLOCK + lanes < end,
                         other=float("-inf"))
        pos = tl.load(pos_ptr + row * pos_stride_0)
    slot = tl.load(idx_mapping_ptr + row * idx_mapping_stride_0).to(tl.int64)
    if slot < 0:
        # Padding row: an in-range token, nothing cached, no part in the cross-program merge.
        if split == 0:
            tl.store(out_ptr + row * out_stride_0, 0)
    else:
        temp = tl.load(temperature_ptr + slot * temperature_stride_0).to(tl.float32)
        seed = tl.load(seed_ptr + slot * seed_stride_0)
        if EARLY == 0:
            # Float32 long chunks load nothing early: peeling a block out of the loop made
            # triton 3.6's float32 loop 10-16% slower on an H200.
            pos = tl.load(pos_ptr + row * pos_stride_0)
        key = row_key(seed, pos, STREAM)
        greedy = temp == 0.0
        if APPLY_TEMPERATURE:
            # One division per program; per element only a multiply-add.
            scale = LOG2E / tl.where(greedy, 1.0, temp)
        else:
            scale = temp * 0.0 + LOG2E
        if USE_FP64:
            if APPLY_TEMPERATURE:
                # The division in float64 too: a float32 log2(e) / T would round every key by 2**-24.
                scale_f = 1.4426950408889634 / tl.where(greedy, 1.0, temp).to(tl.float64)
            else:
                scale_f = temp.to(tl.float64) * 0.0 + 1.4426950408889634
        else:
            scale_f = scale
        if EARLY == 0:
            start = split * chunk_size  # stridecheck: ignore[SC006]
            end = tl.minimum(start + chunk_size, vocab_size)
            lanes = tl.arange(0, BLOCK)
            x0 = lanes  # unused: no preloaded block
            x1 = lanes
        if USE_FP64:
            best_val = tl.full((BLOCK,), float("-inf"), tl.float64)
        else:
            best_val = tl.full((BLOCK,), float("-inf"), tl.float32)
        best_idx = start + lanes
        cache_row_ptr = cache_ptr
        if HAS_CACHE:
            col = tl.load(cache_col_ptr + row * cache_col_stride_0).to(tl.int64)
            cache_row_ptr = cache_ptr + slot * cache_stride_0 + col * cache_stride_1
        if EARLY == 0:
            logits_row_ptr = logits_ptr + row * logits_stride_0
        source_row_ptr = source_ptr
        if HAS_SOURCE:
            source_row_ptr = source_ptr + row * source_stride_0
        # Greedy rows walk their own copy of the loop (GREEDY constexpr): a runtime branch inside
        # the sampled loop raised its registers (bf16: 64 -> 75, one program per SM instead of two).
        if greedy:
            best_val, best_idx = _walk_chunk(
                logits_row_ptr, source_row_ptr, cache_row_ptr, start, end, key, scale_f, best_val, best_idx, x0, x1,
                GREEDY=True, HAS_CACHE=HAS_CACHE, HAS_SOURCE=HAS_SOURCE, USE_FP64=USE_FP64, FAST_LOG=FAST_LOG,
                BLOCK=BLOCK, LANE_MAX=False, EARLY=EARLY, SKIP=False, STAGES=1,
            )
            m, win, nan_won = row_winner(best_val, best_idx)
        else:
            best_val, best_idx = _walk_chunk(
                logits_row_ptr, source_row_ptr, cache_row_ptr, start, end, key, scale_f, best_val, best_idx, x0, x1,
                GREEDY=False, HAS_CACHE=HAS_CACHE, HAS_SOURCE=HAS_SOURCE, USE_FP64=USE_FP64, FAST_LOG=FAST_LOG,
                BLOCK=BLOCK, LANE_MAX=LANE_MAX, EARLY=EARLY, SKIP=SKIP, STAGES=STAGES,
            )
            if not LANE_MAX:
                m, win, nan_won = row_winner(best_val, best_idx)
            else:
                m, win = _lane_winner(logits_row_ptr, start, end, key, scale_f, best_val, FAST_LOG=FAST_LOG,
                                      BLOCK=BLOCK, GATHER=64)
                nan_won = win < 0  # False: a sampled row has no NaN winner
        if SPLIT:
            # Only the counter orders: its release (acq_rel) publishes this program's maximum before
            # the count, and the last program's acquire makes every maximum visible to its read.
            # The other three need no fence of their own (each acq_rel atomic costs a MEMBAR.GPU
            # before and an L1 invalidate after it).
            if MERGE_SLOTS:
                # Each program's packed word in its own slot, a plain store (no same-address
                # atomics); the last program reads the row's slots at once and reduces them.
                # Slots need no reset: every launch writes each slot it reads.
                tl.store(best_ptr + row * best_stride_0 + split, merge_key(m.to(tl.float32), win, nan_won))
                finished = tl.atomic_add(done_ptr + row * done_stride_0, 1, sem="acq_rel")
                if finished == num_splits - 1:
                    s = tl.arange(0, SLOTS)
                    keys = tl.load(best_ptr + row * best_stride_0 + s, mask=s < num_splits,
                                   other=-9223372036854775808, cache_modifier=".cg")
                    tl.store(done_ptr + row * done_stride_0, 0)
                    tl.store(out_ptr + row * out_stride_0, unpack_index(tl.max(keys, 0)))
            else:
                tl.atomic_max(best_ptr + row * best_stride_0, merge_key(m.to(tl.float32), win, nan_won),
                              sem="relaxed")
                finished = tl.atomic_add(done_ptr + row * done_stride_0, 1, sem="acq_rel")
                if finished == num_splits - 1:
                    # Last program of the row: read and reset the merge word and the counter.
                    packed = tl.atomic_xchg(best_ptr + row * best_stride_0, -9223372036854775808, sem="relaxed")
                    tl.atomic_xchg(done_ptr + row * done_stride_0, 0, sem="relaxed")
                    tl.store(out_ptr + row * out_stride_0, unpack_index(packed))
        else:
            tl.store(out_ptr + row * out_stride_0, win.to(tl.int64))


INTERPRETED = not isinstance(_gumbel_sample_kernel, triton.runtime.jit.JITFunction)

# The block skip's launch: 1,024 columns and 4 warps a program, eight programs per
# multiprocessor, the loads pipelined 4 blocks deep, where a program walks at least 32 blocks.
SKIP_BLOCK, SKIP_WARPS, SKIP_PER_SM, SKIP_MIN_BLOCKS, SKIP_STAGES = 1024, 4, 8, 32, 4


@dataclasses.dataclass(frozen=True)
class SamplePlan:
    """How :func:`gumbel_sample` launches for one vocabulary size; made by :func:`sample_plan`.

    Every field is a launch parameter or a constexpr of ``_gumbel_sample_kernel``; none changes
    the drawn tokens (the noise is keyed by token, not by program), only the time.
    """

    vocab_size: int
    block: int  # columns a program loads at once (BLOCK)
    num_warps: int
    chunk: int  # columns per program, a multiple of block
    num_splits: int  # programs per row
    lane_max: bool  # sampled rows keep lane maxima only; the winning column found once per program
    early: int  # leading blocks (0, 1, 2) loaded before the idx_mapping -> seed loads
    skip: bool  # the exact block skip
    stages: int  # pipeline depth of the sampled main loop's loads (1: none)
    merge_slots: bool  # split rows merge through per-program slots rather than one atomic word
    pdl: int  # programmatic dependent launch: 0 off, 1 wait, 2 wait and release the next grid
    fast_log: bool  # the hardware's lg2.approx (GPU only)
    use_fp64: bool


def _few_row_grid(num_rows: int, vocab_size: int, sms: int) -> tuple[int, int, int]:
    """(BLOCK, num_warps, programs per row) below 64 rows on a GPU of ``sms`` multiprocessors.

    2,048 / 8 warps filling four programs per SM, unless 1,024 / 4 warps filling eight balances
    the work clearly better. The 2,048 / 8 grid can leave some multiprocessors one program more
    than the rest (T = 8, V = 151,936: 304 programs on 132 SMs, 40 of them run three), and the
    busiest one sets the launch's length; 1,024 / 4 cuts the work finer (there 600 programs, at
    most five of 2,048 columns: 10,240 against 12,288). It is taken from two rows on where both
    grids' programs walk at most two blocks, its busiest SM walks >= 15% fewer columns, and the
    2,048 / 8 grid's busiest SM walks at least three blocks.

    The thresholds are measured (H200, three interleaved passes against 2,048 / 8 over 26 shapes):
    the finer grid won in both dtypes at T = 8 / V = 151,936 (fp32 -9.7%, bf16 -11.7%),
    T = 4 / 151,936 (-4.7 / -6.3%) and T = 5 / 262,144 (-7.9 / -12.1%), all with 5/6 of the
    columns; with 7/8 of them, a busiest SM of two blocks or less, at T = 1 (+10 to +15%) or where
    the columns are even it did not pay."""
    coarse = (2048, 8, fill_splits(num_rows, vocab_size, 2048, 4 * sms, 512))
    if num_rows < 2:
        return coarse
    fine = (1024, 4, fill_splits(num_rows, vocab_size, 1024, 8 * sms, 512))
    c_cols, c_chunk = _busiest_sm_columns(num_rows, vocab_size, coarse[0], coarse[2], sms)
    f_cols, f_chunk = _busiest_sm_columns(num_rows, vocab_size, fine[0], fine[2], sms)
    straight = c_chunk <= 2 * coarse[0] and f_chunk <= 2 * fine[0]
    if straight and 20 * f_cols <= 17 * c_cols and c_cols >= 3 * coarse[0]:
        return fine
    return coarse


def _busiest_sm_columns(num_rows: int, vocab_size: int, block: int, splits: int, sms: int) -> tuple[int, int]:
    """(columns the busiest multiprocessor walks, columns per program) of a launch of ``splits``
    programs a row laid out by :func:`chunk_layout`, the programs dealt evenly over ``sms``."""
    chunk, per_row = chunk_layout(vocab_size, splits, block)
    return -(-num_rows * per_row // sms) * chunk, chunk


def _grid(num_rows: int, vocab_size: int, gpu: Gpu | None, use_fp64: bool) -> tuple[int, int, int]:
    """(BLOCK, num_warps, programs per row asked) by the measured rules."""
    if gpu is None:
        # The CPU interpreter: small programs, several per row, so every path runs in tests.
        return 256, 4, fill_splits(num_rows, vocab_size, 256, 16, 512)
    if use_fp64:
        return 1024, 8, 1
    if num_rows < 64:
        return _few_row_grid(num_rows, vocab_size, gpu.sms)
    # From 64 rows the block skip's own launch where its programs walk >= 32 blocks (the skip
    # fires less in a short chunk: its best key is younger). Measured on an H200 against the
    # 4,096 / 16 launch without the skip (random-normal logits x 2, temperature 0.9): 38 to 256
    # blocks a program -6.4% to -15%, 16 blocks -3.3% (float32) / +1.8% (bf16), 10 blocks -1.0% /
    # +4.0%. 2,048 / 8 gained less from 256 rows and lost more at 64; 4,096 / 16 with the skip
    # (71-79 registers, one program per SM) lost up to 33% unpipelined, -8% to +29% with 3 stages.
    splits = wave_splits(num_rows, triton.cdiv(vocab_size, SKIP_BLOCK), SKIP_PER_SM * gpu.sms)
    if chunk_layout(vocab_size, splits, SKIP_BLOCK)[0] >= SKIP_MIN_BLOCKS * SKIP_BLOCK:
        return SKIP_BLOCK, SKIP_WARPS, splits
    # 4,096 / 16 warps: best for both dtypes at large T in a sweep of block and warps; two
    # 512-thread programs fit on a multiprocessor (<= 64 registers).
    return 4096, 16, wave_splits(num_rows, triton.cdiv(vocab_size, 4096), 2 * gpu.sms)


def _early_blocks(chunk: int, block: int, dtype: torch.dtype) -> int:
    """Leading blocks loaded at the kernel's start, before the dependent idx_mapping ->
    temperature / seed loads, so the latencies overlap. A chunk of one or two blocks (T = 1, 8) is
    preloaded whole. Longer chunks preload one block of 16-bit logits (two raise the registers past
    the 64 that two 512-thread programs per multiprocessor allow) and none of float32 logits: a
    peeled block made triton 3.6's float32 loop 10-16% slower on an H200."""
    if chunk <= block:
        # A second preloaded block would be all masked lanes, hashed and compared for nothing.
        return 1
    if chunk <= 2 * block:
        return 2
    return 1 if dtype.itemsize <= 2 else 0


_FIELDS = {f.name for f in dataclasses.fields(SamplePlan)} - {"vocab_size", "use_fp64", "chunk"}


def sample_plan(num_rows: int, vocab_size: int, dtype: torch.dtype, device, *, use_fp64: bool = False,
                **overrides) -> SamplePlan:
    """The launch plan of a :func:`gumbel_sample` call on ``[num_rows, vocab_size]`` logits of
    ``dtype`` on ``device`` (a ``torch.device`` or name; a :class:`guarded_kernels.Gpu` plans
    for a GPU that is not here), by the rules measured on an H200.

    ``overrides`` set fields of :class:`SamplePlan` by name (tests and benchmarks): ``block``,
    ``num_warps`` and ``num_splits`` (programs asked per row; the chunk layout may launch fewer)
    set the grid (``use_fp64`` always runs one program per row), and the knobs that depend on it (``lane_max``, ``early``, ``skip``, ``stages``,
    ``merge_slots``, ``pdl``, ``fast_log``) follow the rules for that grid unless given too.
    Raises ValueError for an unknown field or a combination the kernel does not support.
    """
    unknown = set(overrides) - _FIELDS
    if unknown:
        raise ValueError(f"sample_plan: unknown fields {sorted(unknown)}; known: {sorted(_FIELDS)}")
    if not isinstance(device, Gpu):
        device = torch.device(device)
    gpu = gpu_of(device, INTERPRETED)
    block, warps, splits = _grid(num_rows, vocab_size, gpu, use_fp64)
    block = overrides.pop("block", block)
    warps = overrides.pop("num_warps", warps)
    splits = overrides.pop("num_splits", splits)
    if use_fp64:
        # One program per row whatever was asked: the cross-program merge packs a float32 key,
        # which would round the float64 maximum.
        splits = 1
    chunk, splits = chunk_layout(vocab_size, splits, block)
    # Lane maxima save two integer-pipe instructions per element and cost one dependent re-read
    # per program: they pay where a program walks several blocks.
    lane_max = overrides.pop("lane_max", not use_fp64 and chunk >= 4 * block)
    skip = overrides.pop("skip", gpu is not None and lane_max and block == SKIP_BLOCK
                         and chunk >= SKIP_MIN_BLOCKS * block)
    # The skip's block maximum and branch stop a program's warps at every block: it needs the loads
    # pipelined (the loop without the skip measured -2.5% to +8.1% with 3 stages: 1 there).
    stages = overrides.pop("stages", SKIP_STAGES if skip and gpu is not None else 1)
    # Below 64 rows, with programmatic dependent launch, slots measured level or faster on an H200
    # (within 0.15 us); from 64 rows the atomic word.
    merge_slots = overrides.pop("merge_slots", splits > 1 and num_rows < 64)
    # PDL below 64 rows, where the launch is most of a call; the 1,024 / 4-warp few-row grid takes
    # 1: with 2 it lost that grid's whole gain (T = 8, V = 151,936: fp32 6.35 against 5.79 us).
    pdl_default = 0 if gpu is None or not gpu.pdl or num_rows >= 64 else (1 if warps < 8 else 2)
    plan = SamplePlan(
        vocab_size=vocab_size, block=block, num_warps=warps, chunk=chunk, num_splits=splits, lane_max=lane_max,
        early=overrides.pop("early", _early_blocks(chunk, block, dtype)), skip=skip, stages=stages,
        merge_slots=merge_slots and splits > 1, pdl=overrides.pop("pdl", pdl_default),
        fast_log=overrides.pop("fast_log", gpu is not None), use_fp64=use_fp64,
    )
    if plan.use_fp64 and (plan.lane_max or plan.skip):
        raise ValueError("sample_plan: use_fp64 keeps the column per lane (no lane_max, no skip)")
    if plan.skip and not plan.lane_max:
        raise ValueError("sample_plan: the block skip runs on lane maxima (lane_max=True)")
    if gpu is None and (plan.pdl or plan.fast_log):
        raise ValueError("sample_plan: pdl and fast_log need a GPU (not the CPU interpreter)")
    if plan.block & (plan.block - 1) or plan.early not in (0, 1, 2) or plan.pdl not in (0, 1, 2):
        raise ValueError(f"sample_plan: block must be a power of two, early 0-2, pdl 0-2: {plan}")
    return plan


@functools.lru_cache(maxsize=4096)
def _default_plan(num_rows: int, vocab_size: int, dtype: torch.dtype, device: torch.device, use_fp64: bool):
    return sample_plan(num_rows, vocab_size, dtype, device, use_fp64=use_fp64)


@functools.lru_cache(maxsize=4096)
def _launcher(plan: SamplePlan, apply_temperature: bool, is_drafting: bool, has_cache: bool,
              has_source: bool) -> Launcher:
    constexprs = dict(
        APPLY_TEMPERATURE=apply_temperature, STREAM=DRAFT_STREAM if is_drafting else VERIFY_STREAM,
        HAS_CACHE=has_cache, HAS_SOURCE=has_source, USE_FP64=plan.use_fp64, FAST_LOG=plan.fast_log,
        SPLIT=plan.num_splits > 1, LANE_MAX=plan.lane_max, EARLY=plan.early, BLOCK=plan.block,
        MERGE_SLOTS=plan.merge_slots, SLOTS=triton.next_power_of_2(plan.num_splits) if plan.merge_slots else 1,
        PDL=plan.pdl, SKIP=plan.skip, STAGES=plan.stages,
    )
    options = dict(num_warps=plan.num_warps)
    if plan.pdl:
        options["launch_pdl"] = True
    return Launcher(_gumbel_sample_kernel, constexprs, options)


def _check_index_tensor(name: str, t: torch.Tensor) -> None:
    if t.dtype not in INTS:
        raise TypeError(f"gumbel_sample: {name} must be int32 or int64, got {t.dtype}")


@stride_guard(
    logits=Tensor("T V", dtype=FLOATS),
    idx_mapping=Tensor("T", dtype=INTS, inner_stride=None),
    temperature=Tensor("R", dtype=torch.float32, inner_stride=None),
    seed=Tensor("R", dtype=torch.int64, inner_stride=None),
    pos=Tensor("T", dtype=torch.int64, inner_stride=None),
    logits_cache=Tensor("R S >=V", dtype=FLOATS, writes=True),
    logits_cache_source=Tensor("T V", dtype=FLOATS),
)
@quiet_interpreter
def gumbel_sample(
    logits: torch.Tensor,
    idx_mapping: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    pos: torch.Tensor,
    *,
    apply_temperature: bool = True,
    is_drafting: bool = False,
    logits_cache: torch.Tensor | None = None,
    logits_cache_col: torch.Tensor | None = None,
    logits_cache_source: torch.Tensor | None = None,
    use_fp64: bool = False,
    plan: SamplePlan | None = None,
) -> torch.Tensor:
    """Draw one token per row by Gumbel-max: ``argmax_i(logits[t, i] / T + G_i)``, ``G_i`` i.i.d.
    standard Gumbel (Gumbel, 1954; Maddison et al., *A* Sampling*, 2014), so token ``i`` is drawn
    with probability ``softmax(logits[t] / T)_i``. The noise is counter-based, keyed by
    (seed, pos, token id) and the stream (:mod:`guarded_kernels.noise` documents the construction
    and the uniform's 32-bit resolution in the tail).

    Args:
        logits: [T, V] float32 / bfloat16 / float16; any row stride, unit inner stride.
        idx_mapping: [T] int32 / int64, row -> request-state index; a negative value marks a
            padding row (token 0 returned, nothing cached).
        temperature: [R] float32 per request state, dimensionless; 0.0 selects greedy decoding,
            exactly ``logits.argmax(-1)``: the lowest index on ties, and, as ``torch.argmax``,
            the first NaN of a row that has one (NaN ranks above ``+inf``). Sampled rows
            (temperature > 0) treat a NaN logit as probability 0: a row with some NaN draws from
            the softmax of its other entries (the token the same row with ``-inf`` there draws);
            an all-NaN or all ``-inf`` sampled row returns 0.
        seed: [R] int64 per request state.
        pos: [T] int64, the token's position (in tokens); with ``seed`` it keys the noise
            (:mod:`guarded_kernels.noise`), so results do not depend on the batch, the grid or the
            block size.
        apply_temperature: divide by ``temperature`` (else the logits are used as they are;
            ``temperature == 0`` still selects greedy).
        is_drafting: draw from the draft noise stream, disjoint from the verification stream.
        logits_cache: [R, S, W] with ``W >= V``, unit inner stride, no overlapping elements: row
            ``t`` writes ``logits_cache[idx_mapping[t], col_t, :V]``, the input logits
            (pre-temperature), bit-exact; columns ``>= V`` and other steps are untouched. Its dtype
            must hold the source's values exactly: the same dtype, or float32.
        logits_cache_col: 0-d int tensor (one step column for the call) or [T] int tensor (one per
            row); required with ``logits_cache``.
        logits_cache_source: [T, V] optional; cached instead of ``logits``.
        use_fp64: float64 ``log2(e) / T``, noise and reduction (one program per row; not tuned
            for speed).
        plan: how to launch (:func:`sample_plan`); None: the measured rules for this shape.

    Returns:
        [T] int64 token ids, always in ``[0, V)``. Sampled rows in float32 resolve keys to
        float32 rounding: where a program walks several blocks the winning column is re-derived
        from its lane's maximum (see :func:`_lane_winner`), so two keys equal to the last bit
        (about one draw in a million at V = 200,000) go to the lowest lane, not always the lowest
        column; ``use_fp64`` keeps exact float64 keys and the lowest column.

    Raises:
        StrideGuardError: a layout the kernel cannot address (see the decorator's contract).
        TypeError / ValueError: wrong dtypes, a missing cache column, a lossy cache dtype, a plan
            made for another vocabulary size.
        RuntimeError: CPU tensors without Triton's interpreter (``TRITON_INTERPRET=1``).
    """
    if idx_mapping.dtype not in INTS:
        _check_index_tensor("idx_mapping", idx_mapping)
    num_rows, vocab_size = logits.shape
    device = logits.device
    if device.type == "cpu":
        check_device("gumbel_sample", logits, INTERPRETED)
    out = torch.empty((num_rows,), dtype=torch.int64, device=device)
    if num_rows == 0:
        return out
    if vocab_size == 0:
        raise ValueError("gumbel_sample: logits has 0 columns; there is no token to draw")
    if vocab_size >= 2**31:
        raise ValueError(f"gumbel_sample: V = {vocab_size} >= 2**31; token ids are 32-bit in the kernel")
    if plan is None:
        plan = _default_plan(num_rows, vocab_size, logits.dtype, device, use_fp64)
    elif plan.vocab_size != vocab_size or plan.use_fp64 != use_fp64:
        raise ValueError(
            f"gumbel_sample: the plan is for V = {plan.vocab_size}, use_fp64 = {plan.use_fp64}; "
            f"the call has V = {vocab_size}, use_fp64 = {use_fp64}"
        )
    has_cache = logits_cache is not None
    has_source = logits_cache_source is not None
    if has_cache or has_source:
        cache_args, cache_key = _cache_arguments(num_rows, logits, logits_cache, logits_cache_col,
                                                 logits_cache_source)
    else:
        cache_args, cache_key = (None, None, None, None, None, None, None), ()
    splits = plan.num_splits
    if splits > 1:
        best, best_s0, done, done_s0 = row_scratch(device, num_rows)
        if plan.merge_slots:
            best, best_s0 = row_slots(device, num_rows, splits)
    else:
        best, best_s0, done, done_s0 = None, None, None, None
    args = (logits, logits.stride(0), idx_mapping, idx_mapping.stride(0), temperature, temperature.stride(0),
            seed, seed.stride(0), pos, pos.stride(0), *cache_args, best, best_s0, done, done_s0, out, 1,
            vocab_size, plan.chunk, splits)
    # What Triton specialises the compiled kernel on beyond the plan: dtypes, the integers, and
    # 16-byte alignment, required of every pointer for the kept kernel (an unaligned one takes
    # Triton's own path).
    aligned = not ((logits.data_ptr() | idx_mapping.data_ptr() | temperature.data_ptr() | seed.data_ptr()
                    | pos.data_ptr()) & 15)
    key = (logits.dtype, idx_mapping.dtype, temperature.dtype, seed.dtype, pos.dtype, args[1], args[3], args[5],
           args[7], args[9], best_s0, done_s0, cache_key) if aligned and cache_key is not None else None
    _launcher(plan, apply_temperature, is_drafting, has_cache, has_source)((num_rows, splits), key, args)
    return out


def _cache_arguments(num_rows, logits, cache, col, source):
    """(the seven cache arguments of the kernel, their part of the launch key or None) after the
    cache's checks."""
    if source is not None and cache is None:
        raise ValueError("gumbel_sample: logits_cache_source given without logits_cache")
    if col is None:
        raise ValueError("gumbel_sample: logits_cache needs logits_cache_col (0-d or [T])")
    _check_index_tensor("logits_cache_col", col)
    if col.dim() == 0:
        col_stride = 0
    elif col.dim() == 1 and col.shape[0] == num_rows:
        col_stride = col.stride(0)
    else:
        raise ValueError(
            f"gumbel_sample: logits_cache_col must be 0-d or [T] = [{num_rows}], got shape {tuple(col.shape)}"
        )
    src_dtype = (source if source is not None else logits).dtype
    if cache.dtype not in (src_dtype, torch.float32):
        raise ValueError(
            f"gumbel_sample: logits_cache is {cache.dtype} but the cached values are "
            f"{src_dtype}; use {src_dtype} or float32 so that the copy is exact"
        )
    src, src_s0 = (source, source.stride(0)) if source is not None else (None, None)
    args = (cache, cache.stride(0), cache.stride(1), col, col_stride, src, src_s0)
    ptrs = cache.data_ptr() | col.data_ptr() | (source.data_ptr() if source is not None else 0)
    key = None if ptrs & 15 else (cache.dtype, col.dtype, src_dtype, args[1], args[2], col_stride, src_s0)
    return args, key
