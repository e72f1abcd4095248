"""Self-resetting per-row scratch for the one-launch cross-program reductions.

Each row reduced by several programs needs a packed (key, index) maximum and a count of the
programs that have finished. The last program of a row reads the maximum, writes the token and
resets both words, so the buffers are clean again when the launch ends and no fill launch is
needed before the next call (a fill is a launch of its own, and a T = 1 call should be one).

The buffers are cached per (device, stream): two launches in flight on different streams never
share them. A CUDA graph addresses the buffers of the stream it was captured on; graphs captured
on one stream (``torch.cuda.graph``'s default capture stream is one per process) share them, so
they must not be replayed concurrently on different streams. Two calls in flight on the *same*
stream are ordered by the stream, so they can share (a programmatic dependent launch may start
before the previous kernel ends, but waits for it before its first load: ``sample.use_pdl``). Where each program has its own slot
(:func:`row_slots`) only the counter needs resetting: each launch writes every slot it reads.
"""

from __future__ import annotations

INT64_MIN = -(2**63)

# Bytes between consecutive rows' words. Atomics on one cache line serialise in L2: with the
# rows' words adjacent, all programs of a few-row launch (T = 8: ~1,000 atomics) queued on one
# or two lines; one line per row lets the rows' merges proceed in parallel (benchmarks/NOTES.md,
# version 7). Benchmarks set it to 8 / 4 bytes (adjacent words) to measure the difference.
ROW_BYTES = 128

_cache: dict = {}
# Buffers replaced by a larger allocation stay alive: a CUDA graph captured with the old one
# still addresses it on replay.
_retired: list = []


def row_scratch(device, rows: int):
    """(best, best_stride, done, done_stride) for ``device``: row ``r`` of the merge owns
    ``best[r * best_stride]`` (int64, INT64_MIN at rest) and ``done[r * done_stride]`` (int32, 0 at
    rest), each on its own ``ROW_BYTES``-aligned span.

    Grows (a fresh allocation) when ``rows`` exceeds what is cached. Under CUDA-graph capture a
    first allocation is captured with its fill; later calls reuse the cached buffers.
    """
    import torch

    best_stride = max(1, ROW_BYTES // 8)
    done_stride = max(1, ROW_BYTES // 4)
    stream_id = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (str(device), stream_id, ROW_BYTES)
    entry = _cache.get(key)
    if entry is None or entry[0].numel() < rows * best_stride:
        size = max(rows, 1024)
        best = torch.full((size * best_stride,), INT64_MIN, dtype=torch.int64, device=device)
        done = torch.zeros((size * done_stride,), dtype=torch.int32, device=device)
        if entry is not None:
            _retired.append(entry)
        entry = (best, best_stride, done, done_stride)
        _cache[key] = entry
    return entry


def row_slots(device, rows: int, splits: int):
    """(slots, slots_stride) for ``device``: int64, row ``r`` of the merge owns the ``splits`` words
    ``slots[r * slots_stride + s]``, one per program of the row. Every launch writes each slot it
    reads before reading it, so the words need no resting value and no reset. Cached per
    (device, stream) like :func:`row_scratch`; grows when ``rows`` or ``splits`` exceed it."""
    import torch

    stream_id = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = ("slots", str(device), stream_id)
    entry = _cache.get(key)
    if entry is None or entry[1] < splits or entry[0].numel() < rows * entry[1]:
        # On CUDA 64 rows of 512 slots (the launchers' cap on programs per row) at first: the
        # launches that merge through slots (fewer than 64 rows) never need more.
        width = max(splits, entry[1] if entry is not None else 0, 512 if device.type == "cuda" else 16)
        size = max(rows, 64 if device.type == "cuda" else 8)
        if entry is not None:
            _retired.append(entry)
        # Uninitialised on purpose: no resting value is needed, and a fill would be one more
        # launch, which CUDA-graph capture of a first call would record and replay every time.
        entry = (torch.empty((size * width,), dtype=torch.int64, device=device), width)
        _cache[key] = entry
    return entry


def sm_count(device) -> int:
    """Multiprocessors of ``device``; a small fixed number for the CPU interpreter."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4
