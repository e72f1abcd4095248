"""Gumbel-max sampling of one token per row, with an optional bit-exact logits cache.

The kernel walks each row's vocabulary in blocks, adds counter-based Gumbel noise
(:mod:`guarded_kernels.noise`) to ``logit / temperature`` and keeps a per-lane running maximum;
when several programs share a row (few rows, large vocabulary) they merge their winners in the
same launch through an atomic maximum on a packed (key, index) word (below 64 rows: through one
slot per program), and the last program to finish writes the token
(:mod:`guarded_kernels._workspace`). One launch per call; below 64 rows, on NVIDIA compute
capability >= 9.0, a programmatic dependent launch (:func:`use_pdl`).

From 64 rows on a GPU, where a program walks at least 32 blocks (:func:`_skip_grid`), the loop
skips the noise of every block that cannot hold the program's maximum: each element's noise is
bounded from its hash's leading zeros (:func:`guarded_kernels.noise.noise_octave`), and a block
whose largest ``scaled logit + bound`` stays below the best key so far is left out. The draws
are bit for bit those of the loop without the skip (benchmarks/NOTES.md, version 22).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from guarded_kernels._workspace import row_scratch, row_slots, sm_count
from guarded_kernels.noise import (
    DRAFT_STREAM,
    VERIFY_STREAM,
    block_key_bound,
    interpreting,
    neg_log2_exponential,
    pack_key_index,
    row_key,
    token_hash_finish,
    token_hash_of_product,
    token_hash_unfinished,
    token_product,
    unpack_index,
    use_fast_log,
)
from stridecheck import Tensor, stride_guard

_FLOATS = (torch.float32, torch.bfloat16, torch.float16)
_INTS = (torch.int32, torch.int64)
_LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _row_argmax(best_val, best_idx):
    # Lowest index among the lanes holding the maximum: the lanes hold interleaved token ids,
    # so the first lane with the maximum is not necessarily the lowest token id.
    m = tl.max(best_val, 0)
    win = tl.min(tl.where(best_val == m, best_idx, 2147483647), 0)
    return m, win


@triton.jit
def _greedy_update(x, idx, best_val, best_idx):
    """Running maximum with ``torch.argmax``'s order: NaN above everything (the first NaN wins),
    then the lowest index on ties. A NaN is kept as ``+inf`` with its index tagged by the sign bit
    (``idx - 2**31``, below every untagged index, in the same order), so the lane maximum and the
    lowest-index tie rule of :func:`_row_winner` pick the first NaN; a later ``+inf`` cannot
    displace it (``inf > inf`` is false) and a NaN displaces a held ``+inf``. Only greedy rows take
    this path: the sampled loop is unchanged."""
    nan = x != x
    upd = (x > best_val) | (nan & (best_idx >= 0))
    return tl.where(upd, tl.where(nan, float("inf"), x), best_val), tl.where(upd, tl.where(nan, idx | -2147483648, idx), best_idx)


@triton.jit
def _row_winner(best_val, best_idx):
    """(maximum, lowest winning token id, whether a greedy NaN won) of a program's lanes."""
    m, win = _row_argmax(best_val, best_idx)
    return m, win & 2147483647, win < 0


@triton.jit
def _merge_key(m, win, nan_won):
    """The packed (key, index) word of the cross-program merge; a greedy NaN winner gets a key
    above every number's (the bits of a positive quiet NaN, above ``+inf``'s)."""
    return tl.where(nan_won, (2143289344 << 32) | (4294967295 - win.to(tl.int64)), pack_key_index(m, win))


@triton.jit
def _sample_block(
    x,
    source_row_ptr,
    cache_row_ptr,
    idx,
    idx_g,
    end,
    key,
    scale,
    best_val,
    best_idx,
    GREEDY: tl.constexpr,
    MASKED: tl.constexpr,
    HAS_CACHE: tl.constexpr,
    HAS_SOURCE: tl.constexpr,
    USE_FP64: tl.constexpr,
    FAST_LOG: tl.constexpr,
    LANE_MAX: tl.constexpr,
):
    """One loaded block ``x`` of a row (columns ``idx``, their ``token_product`` ``idx_g``): cache
    the raw values, add the noise, update the maximum."""
    _cache_block(x, source_row_ptr, cache_row_ptr, idx, end, MASKED, HAS_CACHE, HAS_SOURCE)
    if USE_FP64:
        xf = x.to(tl.float64)
    else:
        xf = x.to(tl.float32)
    if GREEDY:
        new_val, new_idx = _greedy_update(xf, idx, best_val, best_idx)
    else:
        k = _sampled_key(xf, idx_g, key, scale, FAST_LOG, USE_FP64)
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
    return _key_of_hash(xf, token_hash_of_product(key, idx_g), scale, FAST_LOG, USE_FP64)


@triton.jit
def _key_of_hash(xf, h, scale, FAST_LOG: tl.constexpr, USE_FP64: tl.constexpr):
    # The key from the token hash h: every sampled key of this module is this expression.
    return xf * scale + neg_log2_exponential(h, FAST_LOG, USE_FP64)


@triton.jit
def _lane_winner(logits_row_ptr, start, end, key, scale, best_val, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr,
                 GATHER: tl.constexpr):
    """(maximum, its column) of a program's sampled chunk from the per-lane maxima alone.

    The main loop keeps no column per lane: selecting one beside the maximum costs two more
    integer-pipe instructions per element, the pipe that bounds the loop (benchmarks/NOTES.md,
    version 9). Lane ``l`` saw columns ``start + l + j * BLOCK``; the lowest lane holding the
    maximum is re-read (``GATHER`` columns at a time, once per program) and its keys recomputed
    by the same expression, and the first column with the largest of them is the winner. A chunk
    with no finite key (all NaN or ``-inf``) returns ``start``, as the tracked loop did.
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
            kv = tl.where(inside, _sampled_key(x, token_product(col), key, scale, FAST_LOG, False), float("-inf"))
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
    FAST_LOG: tl.constexpr, PREFETCH: tl.constexpr, BLOCK: tl.constexpr, LANE_MAX: tl.constexpr,
    EARLY: tl.constexpr, SKIP: tl.constexpr = False, STAGES: tl.constexpr = 1,
):
    """Columns ``[start, end)`` of one row, BLOCK at a time: the per-lane running maximum. The first
    ``EARLY`` (0, 1 or 2) blocks arrive already loaded as ``x0`` / ``x1`` (masked to ``end``, ``-inf``
    beyond it: such lanes never update a maximum). ``SKIP`` (sampled ``LANE_MAX`` rows, float32 keys,
    without ``PREFETCH``) skips the noise of blocks that cannot hold the chunk's maximum."""
    lanes = tl.arange(0, BLOCK)
    if EARLY >= 1:
        best_val, best_idx = _sample_block(
            x0, source_row_ptr, cache_row_ptr, start + lanes, token_product(start + lanes), end, key, scale_f,
            best_val, best_idx, GREEDY, True, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG, LANE_MAX,
        )
    if EARLY >= 2:
        second = start + BLOCK + lanes
        best_val, best_idx = _sample_block(
            x1, source_row_ptr, cache_row_ptr, second, token_product(second), end, key, scale_f,
            best_val, best_idx, GREEDY, True, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG, LANE_MAX,
        )
    # The rest of the chunk after the preloaded blocks (empty when the chunk is that short: then
    # full_end = body > end and neither the loop nor the tail runs).
    if EARLY == 0:
        # Version 11's bound, written as it was: its loop is the one kept for float32 long chunks.
        body = start
        full_end = start + ((end - start) // BLOCK) * BLOCK
    else:
        body = start + EARLY * BLOCK
        full_end = body + (tl.maximum(end - body, 0) // BLOCK) * BLOCK
    # Full blocks without a mask (so loads vectorise), then one masked tail block. With
    # PREFETCH the next block is loaded before this one is computed, so its memory latency
    # overlaps the noise arithmetic (at the end the last block is loaded again: in bounds,
    # never used). It pays for 16-bit logits; for float32 the extra registers (75 instead of
    # 57) halve the programs per SM and it costs more than it saves (benchmarks/NOTES.md).
    if PREFETCH:
        if full_end > body:
            x_next = tl.load(logits_row_ptr + body + lanes)
            for off in range(body, full_end, BLOCK):
                x = x_next
                x_next = tl.load(logits_row_ptr + tl.minimum(off + BLOCK, full_end - BLOCK) + lanes)
                best_val, best_idx = _sample_block(
                    x, source_row_ptr, cache_row_ptr, off + lanes, token_product(off + lanes), end, key, scale_f,
                    best_val, best_idx, GREEDY, False, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG, LANE_MAX,
                )
    else:
        # The token product is carried and stepped by BLOCK * 0x9E3779B1 (mod 2**32): one add per
        # element. Written as off * G + lanes * G, the compiler factors it back into
        # (off + lanes) * G, an add and a multiply (benchmarks/NOTES.md, version 11).
        idx_g = token_product(body + lanes)
        if SKIP:
            # The exact block skip (benchmarks/NOTES.md, version 22): a block whose every key is
            # below the chunk's best so far cannot change the lane maxima that decide the draw, so
            # its noise is not evaluated. Per element only the hash up to fmix32's last xorshift
            # and the bound of block_key_bound (its leading zeros, one multiply-add); one block
            # maximum decides. The bound is never below a key as computed, so a skipped block never
            # held a key >= best_s: the lane maxima, and so the drawn token, are bit for bit those
            # of the loop without the skip. A NaN logit has a NaN bound and a NaN key; the block
            # maximum ignores it as the lane maximum does (on the GPU and in the interpreter).
            best_s = tl.max(best_val, 0)
            for off in tl.range(body, full_end, BLOCK, num_stages=STAGES):
                x = tl.load(logits_row_ptr + off + lanes)
                _cache_block(x, source_row_ptr, cache_row_ptr, off + lanes, end, False, HAS_CACHE, HAS_SOURCE)
                xf = x.to(tl.float32)
                h = token_hash_unfinished(key, idx_g)
                if block_key_bound(xf, scale_f, h, FAST_LOG) >= best_s:
                    best_val = tl.maximum(best_val, _key_of_hash(xf, token_hash_finish(h), scale_f, FAST_LOG, False))
                    best_s = tl.max(best_val, 0)
                idx_g += (BLOCK * 0x9E3779B1) % 4294967296
        else:
            for off in tl.range(body, full_end, BLOCK, num_stages=STAGES):
                best_val, best_idx = _sample_block(
                    tl.load(logits_row_ptr + off + lanes), source_row_ptr, cache_row_ptr, off + lanes, idx_g, end,
                    key, scale_f, best_val, best_idx, GREEDY, False, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG,
                    LANE_MAX,
                )
                idx_g += (BLOCK * 0x9E3779B1) % 4294967296
    if full_end < end:
        tail = full_end + lanes
        x = tl.load(logits_row_ptr + tail, mask=tail < end, other=float("-inf"))
        best_val, best_idx = _sample_block(
            x, source_row_ptr, cache_row_ptr, tail, token_product(tail), end, key, scale_f, best_val, best_idx,
            GREEDY, True, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG, LANE_MAX,
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
    # [R, S, W] W >= V, unit inner stride (only read when HAS_CACHE)
    cache_ptr,
    cache_stride_0,
    cache_stride_1,
    # [T] int (cache_col_stride_0 == 0 for one column for the whole call)
    cache_col_ptr,
    cache_col_stride_0,
    # [T, V] unit inner stride (only read when HAS_SOURCE)
    source_ptr,
    source_stride_0,
    # [>= T] int64 / int32 self-resetting scratch (only used when SPLIT); with MERGE_SLOTS best_ptr
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
    PREFETCH: tl.constexpr,
    # Sampled rows keep only lane maxima in the loop (never with USE_FP64)
    LANE_MAX: tl.constexpr,
    # Leading blocks of the chunk (0, 1 or 2) loaded before the idx_mapping -> seed chain
    EARLY: tl.constexpr,
    BLOCK: tl.constexpr,
    # Split rows merge through per-program slots (best_ptr: [>= T, >= num_splits] int64) instead of
    # one atomic maximum per row; SLOTS: a power of two >= num_splits (see merge_slots)
    MERGE_SLOTS: tl.constexpr = False,
    SLOTS: tl.constexpr = 1,
    # Programmatic dependent launch (see use_pdl): 1 waits for the previous grid before any
    # load, 2 also lets the next grid launch at once
    PDL: tl.constexpr = 0,
    # The exact block skip of sampled LANE_MAX rows (see block_skip)
    SKIP: tl.constexpr = False,
    # Software pipelining of the sampled main loop's loads (tl.range num_stages; 1: none; see
    # loop_stages)
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
        # of adding up (benchmarks/NOTES.md, version 12). A padding row loads them for nothing.
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
            # Float32 long chunks: version 11's order, unchanged (benchmarks/NOTES.md, version 13:
            # peeling a block out of the loop made triton 3.6's float32 loop 10-16% slower).
            pos = tl.load(pos_ptr + row * pos_stride_0)
        key = row_key(seed, pos, STREAM)
        greedy = temp == 0.0
        if APPLY_TEMPERATURE:
            # One division per program; per element only a multiply-add.
            scale = _LOG2E / tl.where(greedy, 1.0, temp)
        else:
            scale = temp * 0.0 + _LOG2E
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
        source_row_ptr = source_ptr + row * source_stride_0
        # Greedy rows walk their own copy of the loop (GREEDY constexpr): a runtime branch inside
        # the sampled loop raised its registers (bf16: 64 -> 75, one program per SM instead of two).
        if greedy:
            best_val, best_idx = _walk_chunk(
                logits_row_ptr, source_row_ptr, cache_row_ptr, start, end, key, scale_f, best_val, best_idx, x0, x1,
                True, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG, PREFETCH, BLOCK, False, EARLY,
            )
            m, win, nan_won = _row_winner(best_val, best_idx)
        else:
            best_val, best_idx = _walk_chunk(
                logits_row_ptr, source_row_ptr, cache_row_ptr, start, end, key, scale_f, best_val, best_idx, x0, x1,
                False, HAS_CACHE, HAS_SOURCE, USE_FP64, FAST_LOG, PREFETCH, BLOCK, LANE_MAX, EARLY, SKIP, STAGES,
            )
            if not LANE_MAX:
                m, win, nan_won = _row_winner(best_val, best_idx)
            else:
                m, win = _lane_winner(logits_row_ptr, start, end, key, scale_f, best_val, FAST_LOG, BLOCK, 64)
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
                tl.store(best_ptr + row * best_stride_0 + split, _merge_key(m.to(tl.float32), win, nan_won))
                finished = tl.atomic_add(done_ptr + row * done_stride_0, 1, sem="acq_rel")
                if finished == num_splits - 1:
                    s = tl.arange(0, SLOTS)
                    keys = tl.load(best_ptr + row * best_stride_0 + s, mask=s < num_splits,
                                   other=-9223372036854775808, cache_modifier=".cg")
                    tl.store(done_ptr + row * done_stride_0, 0)
                    tl.store(out_ptr + row * out_stride_0, unpack_index(tl.max(keys, 0)))
            else:
                tl.atomic_max(best_ptr + row * best_stride_0, _merge_key(m.to(tl.float32), win, nan_won),
                              sem="relaxed")
                finished = tl.atomic_add(done_ptr + row * done_stride_0, 1, sem="acq_rel")
                if finished == num_splits - 1:
                    # Last program of the row: read and reset the merge word and the counter.
                    packed = tl.atomic_xchg(best_ptr + row * best_stride_0, -9223372036854775808, sem="relaxed")
                    tl.atomic_xchg(done_ptr + row * done_stride_0, 0, sem="relaxed")
                    tl.store(out_ptr + row * out_stride_0, unpack_index(packed))
        else:
            tl.store(out_ptr + row * out_stride_0, win.to(tl.int64))


def launch_config(num_rows: int, vocab_size: int, dtype: torch.dtype, device: torch.device, use_fp64: bool):
    """(BLOCK, num_warps, num_splits) for a launch; tests and benchmarks may replace it."""
    if device.type != "cuda":
        block, warps = 256, 4
    elif use_fp64:
        block, warps = 1024, 8
    else:
        # Swept on an H200 (benchmarks/NOTES.md): 4096 / 16 warps best for both dtypes at large T;
        # with few rows, smaller programs spread one row over more multiprocessors.
        block, warps = (4096, 16) if num_rows >= 64 else (2048, 8)
    if use_fp64:
        return block, warps, 1
    if block == 4096:
        skip_grid = _skip_grid(num_rows, vocab_size, sm_count(device))
        if skip_grid is not None:
            return skip_grid
        # Two 512-thread programs fit on a multiprocessor (<= 64 registers).
        return block, warps, _wave_splits(num_rows, triton.cdiv(vocab_size, block), 2 * sm_count(device))
    if device.type != "cuda":
        return block, warps, _fill_splits(num_rows, vocab_size, block, 4 * sm_count(device))
    return _few_row_grid(num_rows, vocab_size, sm_count(device))


@functools.lru_cache(maxsize=1024)
def _few_row_grid(num_rows: int, vocab_size: int, sms: int) -> tuple[int, int, int]:
    """(BLOCK, num_warps, num_splits) below 64 rows on a GPU of ``sms`` multiprocessors.

    2,048 / 8 warps filling four programs per SM, unless 1,024 / 4 warps filling eight balances
    the work clearly better. The 2,048 / 8 grid can leave some multiprocessors one program more
    than the rest (T = 8, V = 151,936: 304 programs on 132 SMs, 40 of them run three), and the
    busiest one sets the launch's length; 1,024 / 4 cuts the work finer (there 600 programs, at
    most five of 2,048 columns: 10,240 against 12,288). It is taken from two rows on where both
    grids' programs walk at most two blocks (the straight-line kernel), its busiest SM walks
    >= 15% fewer columns, and the 2,048 / 8 grid's busiest SM walks at least three blocks; it is
    launched with PDL 1 (:func:`use_pdl`).

    The thresholds are measured, not derived (H200, runs 24a and 24b of benchmarks/NOTES.md, three
    interleaved passes against 2,048 / 8): the rule takes the three rows of 26 measured where the
    finer grid won in both dtypes, T = 8 / V = 151,936 (fp32 -9.7%, 5.79 us; bf16 -11.7%, 4.92 us),
    T = 4 / 151,936 (-4.7 / -6.3%), T = 5 / 262,144 (-7.9 / -12.1%), all with 5/6 of the columns;
    with 7/8 of them (T = 6 / 151,936: +6.5 / +3.3%; T = 7 / 262,144, T = 11 and 12 / 151,936:
    -4.3 to +0.9%) or a busiest SM of two blocks or less (T = 2 / 151,936: +1.2 / +3.0%; V = 32,000
    at T = 2-4, 11, 12: -1.6 to +5.1%) it did not pay, nor at T = 1 (+10 to +15%) or where the
    columns are even (T = 8 / 262,144: level to +7%)."""
    coarse = (2048, 8, _fill_splits(num_rows, vocab_size, 2048, 4 * sms))
    if num_rows < 2:
        return coarse
    fine = (1024, 4, _fill_splits(num_rows, vocab_size, 1024, 8 * sms))
    c_cols, c_chunk = _busiest_sm_columns(num_rows, vocab_size, coarse[0], coarse[2], sms)
    f_cols, f_chunk = _busiest_sm_columns(num_rows, vocab_size, fine[0], fine[2], sms)
    straight = c_chunk <= 2 * coarse[0] and f_chunk <= 2 * fine[0]
    if straight and 20 * f_cols <= 17 * c_cols and c_cols >= 3 * coarse[0]:
        return fine
    return coarse


def _fill_splits(num_rows: int, vocab_size: int, block: int, programs: int) -> int:
    # Programs per row that fill ``programs`` slots, at most one per block and 512 (the slots'
    # width) a row.
    return max(1, min(-(-programs // max(num_rows, 1)), triton.cdiv(vocab_size, block), 512))


def chunk_layout(vocab_size: int, splits: int, block: int) -> tuple[int, int]:
    """(columns per program, programs per row) of a row of ``vocab_size`` columns asked to be
    split ``splits`` ways: chunks a whole number of ``block`` columns, so the programs actually
    launched can be fewer than asked. The launchers of this module and of
    :mod:`guarded_kernels.resample` lay rows out this way."""
    chunk = triton.cdiv(triton.cdiv(vocab_size, splits), block) * block
    return chunk, triton.cdiv(vocab_size, chunk)


def _busiest_sm_columns(num_rows: int, vocab_size: int, block: int, splits: int, sms: int) -> tuple[int, int]:
    """(columns the busiest multiprocessor walks, columns per program) of a launch of ``splits``
    programs a row as the launcher lays it out (:func:`chunk_layout`), with the programs dealt
    evenly over ``sms`` multiprocessors."""
    chunk, per_row = chunk_layout(vocab_size, splits, block)
    return -(-num_rows * per_row // sms) * chunk, chunk


@functools.lru_cache(maxsize=1024)
def _wave_splits(num_rows: int, num_blocks: int, slots: int) -> int:
    """Programs per row minimising (waves of programs) x (blocks per program + 1): the time of
    the launch when every program slot walks its blocks at the same pace, with about one block's
    time per program for its start and merge. Ties go to fewer programs (fewer merges). At
    T = 256, V = 151,936 it picks 1 (one wave of 38-block programs) where filling 4 programs per
    SM picked 3 (2.9 waves of 13 blocks): 59.7 against 63.5 us in run 6."""
    best, best_cost = 1, None
    for s in range(1, min(num_blocks, 64) + 1):
        per_program = -(-num_blocks // s)
        programs = num_rows * -(-num_blocks // per_program)
        cost = -(-programs // slots) * (per_program + 1)
        if best_cost is None or cost < best_cost:
            best, best_cost = s, cost
    return best


def loop_prefetch(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether the sampling loop loads the next block ahead. It paid for 16-bit logits in versions
    4-6; since version 7's loop it costs (bf16 T = 1024, V = 262,144: 332 us with, 306 us
    without, run 7 of benchmarks/NOTES.md), so it is off; benchmarks may replace it."""
    return False


def lane_max(chunk: int, block: int, use_fp64: bool) -> bool:
    """Whether sampled rows keep only lane maxima in the loop and find the winning column once per
    program (:func:`_lane_winner`): it saves two integer-pipe instructions per element and costs
    one dependent re-read per program, so it pays when a program walks several blocks. Not with
    ``use_fp64`` (that path keeps the column per lane). Benchmarks may replace it."""
    return not use_fp64 and chunk >= 4 * block


# The block skip's launch (benchmarks/NOTES.md, version 22, runs 32-34): 1,024 columns and 4
# warps a program, eight programs per multiprocessor, the loads pipelined 4 blocks deep, where a
# program walks at least 32 blocks.
SKIP_BLOCK, SKIP_WARPS, SKIP_PER_SM, SKIP_MIN_BLOCKS, SKIP_STAGES = 1024, 4, 8, 32, 4


@functools.lru_cache(maxsize=1024)
def _skip_grid(num_rows: int, vocab_size: int, sms: int) -> tuple[int, int, int] | None:
    """(BLOCK, num_warps, num_splits) of the block skip's launch for ``num_rows`` >= 64 rows, or
    None where its programs would walk fewer than ``SKIP_MIN_BLOCKS`` blocks (the skip fires
    less in a short chunk: its best key is younger). Programs per row by :func:`_wave_splits`
    over ``SKIP_PER_SM`` programs per multiprocessor.

    Measured on an H200 against the 4,096 / 16 launch without the skip (run 34 of
    benchmarks/NOTES.md, three passes, random-normal logits x 2 at temperature 0.9): 38 to 256
    blocks a program -6.4% to -15% (bf16 T = 256, V = 151,936 -6.4%; float32 -11 to -12% from
    T = 256), 16 blocks -3.3% (float32) / +1.8% (bf16), 10 blocks -1.0% / +4.0%. 2,048 / 8 (four
    programs) gained less from 256 rows (-0.8% to -13.9%) and lost more at 64; 4,096 / 16 with
    the skip (71-79 registers, one program per SM, its barrier per block exposing every load)
    lost up to 33% unpipelined (run 32) and measured -8% to +29% with 3 stages (run 33)."""
    splits = _wave_splits(num_rows, triton.cdiv(vocab_size, SKIP_BLOCK), SKIP_PER_SM * sms)
    chunk, _ = chunk_layout(vocab_size, splits, SKIP_BLOCK)
    if chunk < SKIP_MIN_BLOCKS * SKIP_BLOCK:
        return None
    return SKIP_BLOCK, SKIP_WARPS, splits


def block_skip(chunk: int, block: int, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether the main loop of sampled rows skips the noise of blocks that cannot hold the chunk's
    maximum (the exact block skip: ``_walk_chunk``'s ``SKIP``; the draws are bit for bit the same
    either way): on the skip's own launch (:func:`_skip_grid`), on a GPU. The launcher asks only
    where the loop keeps lane maxima (:func:`lane_max`), runs without prefetch
    (:func:`loop_prefetch`) and keys are float32. Benchmarks and tests may replace it."""
    return device.type == "cuda" and block == SKIP_BLOCK and chunk >= SKIP_MIN_BLOCKS * block


def loop_stages(dtype: torch.dtype, device: torch.device, skip: bool) -> int:
    """``num_stages`` of the sampled main loop's ``tl.range`` on a GPU (1: no pipelining; from 2
    Triton loads blocks ahead asynchronously into shared memory): ``SKIP_STAGES`` for the skip,
    whose block maximum and branch stop a program's warps at every block (without it the skip
    lost up to 33% in run 32); 1 otherwise (the loop without the skip measured -2.5% to +8.1%
    with 3, run 33). Benchmarks may replace it."""
    return SKIP_STAGES if skip else 1


def early_blocks(chunk: int, block: int, dtype: torch.dtype) -> int:
    """How many leading blocks of a program's chunk (0, 1 or 2) are loaded at the kernel's start,
    before the ``idx_mapping -> temperature / seed`` loads that depend on each other (the row's
    address does not need them), so the latencies overlap. A chunk of one or two blocks (T = 1 and
    8) is preloaded whole. Longer chunks (T >= 64) preload one block of 16-bit logits (two
    raise the kernel's registers to the 64 that two 512-thread programs per multiprocessor allow)
    and none of float32 / float64 logits: peeling a block out of the loop made triton 3.6's float32
    loop 10-16% slower on an H200 (benchmarks/NOTES.md, versions 12 and 13). Benchmarks may
    replace it."""
    if chunk <= block:
        # A one-block chunk (T = 1): a second preloaded block would be all masked lanes, hashed
        # and compared for nothing.
        return 1
    if chunk <= 2 * block:
        return 2
    return 1 if dtype.itemsize <= 2 else 0


def merge_slots(num_rows: int, splits: int, device: torch.device) -> bool:
    """Whether the programs of a split row merge through per-program slots (a plain store each,
    then the counter; the last program loads the row's slots and reduces them) rather than an
    atomic maximum on one word per row. Below 64 rows, with programmatic dependent launch, it
    measured level or faster on an H200 (within 0.15 us; benchmarks/NOTES.md, version 15); the
    kernels for more rows are unchanged. The slot count is a constexpr (the next power of two of
    the programs per row), so few-row launches compile one kernel per such width they meet.
    Benchmarks may replace it."""
    return num_rows < 64


def use_pdl(num_rows: int, device: torch.device, num_warps: int = 8) -> int:
    """Programmatic dependent launch (CUDA Programming Guide, "Programmatic Dependent Launch and
    Synchronization") for a launch of ``num_rows`` rows: 0 off; 1 the kernel waits for the previous
    grid in the stream (``griddepcontrol.wait``) before its first load and is launched with the
    programmatic-serialization attribute, so its launch overlaps the end of the previous kernel;
    2 also signals at once (``griddepcontrol.launch_dependents``) that the next grid may launch:
    a next kernel launched the same way still waits for this one to finish before it reads
    anything, a plain one is not affected. (A kernel of someone else's launched with the
    programmatic-serialization attribute right after this one must itself wait before reading
    what this one writes: that attribute is a promise its launcher makes.) Used below 64 rows, where the launch is most of a
    call (benchmarks/NOTES.md, version 15); the kernels for more rows are unchanged. A launch of
    ``num_warps`` < 8 (the 1,024 / 4-warp few-row grid of :func:`launch_config`) takes 1: with 2
    it lost that grid's whole gain (H200, T = 8, V = 151,936: fp32 6.35 against 5.79 us, bf16 5.53
    against 4.97 us; benchmarks/NOTES.md, run 24a). NVIDIA compute capability >= 9.0 only, never in
    the CPU interpreter. Benchmarks may replace it."""
    if num_rows >= 64:
        return 0
    return 1 if num_warps < 8 else 2


@functools.lru_cache(maxsize=None)
def _pdl_capable(index: int) -> bool:
    # griddepcontrol needs an NVIDIA GPU of compute capability 9.0 or later.
    return torch.version.hip is None and torch.cuda.get_device_capability(index)[0] >= 9


def max_registers(dtype: torch.dtype, device: torch.device) -> int | None:
    """A per-thread register cap for the launch (``maxnreg``), or None; benchmarks may replace it."""
    return None


def _register_cap(dtype: torch.dtype, device: torch.device) -> dict:
    cap = max_registers(dtype, device)
    return {} if cap is None or device.type != "cuda" else {"maxnreg": cap}


def _check_index_tensor(name: str, t: torch.Tensor) -> None:
    if t.dtype not in _INTS:
        raise TypeError(f"gumbel_sample: {name} must be int32 or int64, got {t.dtype}")


@stride_guard(
    logits=Tensor("T V", dtype=_FLOATS),
    idx_mapping=Tensor("T", dtype=_INTS, inner_stride=None),
    temperature=Tensor("R", dtype=torch.float32, inner_stride=None),
    seed=Tensor("R", dtype=torch.int64, inner_stride=None),
    pos=Tensor("T", dtype=torch.int64, inner_stride=None),
    logits_cache=Tensor("R S >=V", dtype=_FLOATS, writes=True),
    logits_cache_source=Tensor("T V", dtype=_FLOATS),
)
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
        use_fp64: float64 ``log2(e) / T``, noise and reduction (one program per row, whatever
            ``launch_config`` says; not tuned for speed).

    Returns:
        [T] int64 token ids, always in ``[0, V)``. Sampled rows in float32 resolve keys to
        float32 rounding: where a program walks several blocks the winning column is re-derived
        from its lane's maximum (see :func:`_lane_winner`), so two keys equal to the last bit
        (about one draw in a million at V = 200,000) go to the lowest lane, not always the lowest
        column; ``use_fp64`` keeps exact float64 keys and the lowest column.

    Raises:
        StrideGuardError: a layout the kernel cannot address (see the decorator's contract).
        TypeError / ValueError: wrong dtypes, a missing cache column, a lossy cache dtype.
    """
    _check_index_tensor("idx_mapping", idx_mapping)
    num_rows, vocab_size = logits.shape
    device = logits.device
    out = torch.empty((num_rows,), dtype=torch.int64, device=device)
    if num_rows == 0:
        return out
    if vocab_size == 0:
        raise ValueError("gumbel_sample: logits has 0 columns; there is no token to draw")
    if vocab_size >= 2**31:
        raise ValueError(f"gumbel_sample: V = {vocab_size} >= 2**31; token ids are 32-bit in the kernel")
    has_cache = logits_cache is not None
    has_source = logits_cache_source is not None
    if has_source and not has_cache:
        raise ValueError("gumbel_sample: logits_cache_source given without logits_cache")
    if has_cache:
        if logits_cache_col is None:
            raise ValueError("gumbel_sample: logits_cache needs logits_cache_col (0-d or [T])")
        _check_index_tensor("logits_cache_col", logits_cache_col)
        if logits_cache_col.dim() == 0:
            col_stride = 0
        elif logits_cache_col.dim() == 1 and logits_cache_col.shape[0] == num_rows:
            col_stride = logits_cache_col.stride(0)
        else:
            raise ValueError(
                f"gumbel_sample: logits_cache_col must be 0-d or [T] = [{num_rows}], "
                f"got shape {tuple(logits_cache_col.shape)}"
            )
        src_dtype = (logits_cache_source if has_source else logits).dtype
        if logits_cache.dtype not in (src_dtype, torch.float32):
            raise ValueError(
                f"gumbel_sample: logits_cache is {logits_cache.dtype} but the cached values are "
                f"{src_dtype}; use {src_dtype} or float32 so that the copy is exact"
            )
        cache, cache_s0, cache_s1 = logits_cache, logits_cache.stride(0), logits_cache.stride(1)
        col_t = logits_cache_col
    else:
        cache, cache_s0, cache_s1, col_t, col_stride = logits, 0, 0, idx_mapping, 0
    source, source_s0 = (logits_cache_source, logits_cache_source.stride(0)) if has_source else (logits, 0)

    block, warps, splits = launch_config(num_rows, vocab_size, logits.dtype, device, use_fp64)
    if use_fp64:
        # One program per row whatever the configuration: the cross-program merge packs a float32
        # key, which would round the float64 maximum.
        splits = 1
    chunk, splits = chunk_layout(vocab_size, splits, block)
    slots = splits > 1 and merge_slots(num_rows, splits, device)
    if splits > 1:
        best, best_s0, done, done_s0 = row_scratch(device, num_rows)
        if slots:
            best, best_s0 = row_slots(device, num_rows, splits)
    else:
        best, best_s0, done, done_s0 = out, 0, out, 0
    pdl = use_pdl(num_rows, device, warps) if device.type == "cuda" and not interpreting() else 0
    if pdl and not _pdl_capable(device.index if device.index is not None else torch.cuda.current_device()):
        pdl = 0
    extra = dict(MERGE_SLOTS=True, SLOTS=triton.next_power_of_2(splits)) if slots else {}
    keep_lane_max = lane_max(chunk, block, use_fp64)  # never with use_fp64
    prefetch = loop_prefetch(logits.dtype, device)
    skip = keep_lane_max and not prefetch and block_skip(chunk, block, logits.dtype, device)
    if pdl:
        extra.update(PDL=pdl, launch_pdl=True)
    _gumbel_sample_kernel[(num_rows, splits)](
        logits,
        logits.stride(0),
        idx_mapping,
        idx_mapping.stride(0),
        temperature,
        temperature.stride(0),
        seed,
        seed.stride(0),
        pos,
        pos.stride(0),
        cache,
        cache_s0,
        cache_s1,
        col_t,
        col_stride,
        source,
        source_s0,
        best,
        best_s0,
        done,
        done_s0,
        out,
        out.stride(0),
        vocab_size,
        chunk,
        splits,
        APPLY_TEMPERATURE=apply_temperature,
        STREAM=DRAFT_STREAM if is_drafting else VERIFY_STREAM,
        HAS_CACHE=has_cache,
        HAS_SOURCE=has_source,
        USE_FP64=use_fp64,
        FAST_LOG=use_fast_log(device),
        SPLIT=splits > 1,
        PREFETCH=prefetch,
        LANE_MAX=keep_lane_max,
        SKIP=skip,
        STAGES=loop_stages(logits.dtype, device, skip) if device.type == "cuda" else 1,
        EARLY=early_blocks(chunk, block, logits.dtype),
        BLOCK=block,
        num_warps=warps,
        **_register_cap(logits.dtype, device),
        **extra,
    )
    return out
