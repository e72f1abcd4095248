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
before the previous kernel ends, but waits for it before its first load: ``SamplePlan.pdl``). Where each
program has its own slot
(:func:`row_slots`) only the counter needs resetting: each launch writes every slot it reads.
"""

from __future__ import annotations

INT64_MIN = -(2**63)

# Bytes between consecutive rows' words. Atomics on one cache line serialise in L2: with the
# rows' words adjacent, all programs of a few-row launch (T = 8: ~1,000 atomics) queued on one
# or two lines; one line per row lets the rows' merges proceed in parallel.
ROW_BYTES = 128

_cache: dict = {}
# Buffers replaced by a larger allocation stay alive: a CUDA graph captured with the old one
# still addresses it on replay.
_retired: list = []


def _stream_id(device) -> int:
    """The current stream of ``device`` as an integer (its raw handle; 0 off CUDA), without making
    the ``torch.cuda.Stream`` object that ``torch.cuda.current_stream`` builds on every call."""
    if device.type != "cuda":
        return 0
    import torch

    index = device.index if device.index is not None else torch.cuda.current_device()
    return torch._C._cuda_getCurrentRawStream(index)


def row_scratch(device, rows: int):
    """(best, best_stride, done, done_stride) for ``device``: row ``r`` of the merge owns
    ``best[r * best_stride]`` (int64, INT64_MIN at rest) and ``done[r * done_stride]`` (int32, 0 at
    rest), each on its own ``ROW_BYTES``-aligned span.

    Grows (a fresh allocation) when ``rows`` exceeds what is cached. Under CUDA-graph capture a
    first allocation is captured with its fill; later calls reuse the cached buffers.
    """
    import torch

    key = (device, _stream_id(device))
    entry = _cache.get(key)
    if entry is not None and entry[0].numel() >= rows * entry[1]:
        return entry
    best_stride = max(1, ROW_BYTES // 8)
    done_stride = max(1, ROW_BYTES // 4)
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

    key = ("slots", device, _stream_id(device))
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


def stats_scratch(device, numel: int):
    """float32 [>= numel] for ``device``: the partial (max, sum) pairs of a split log-sum-exp. Every
    launch writes each word it reads before reading it (the first launch, or the one launch
    before its barrier), so the buffer needs no resting value. Cached per (device, stream) like
    :func:`row_scratch`; grows when ``numel`` exceeds it."""
    import torch

    key = ("stats", device, _stream_id(device))
    entry = _cache.get(key)
    if entry is None or entry.numel() < numel:
        if entry is not None:
            _retired.append(entry)
        # Uninitialised, as row_slots: a fill would be a launch of its own.
        entry = torch.empty((max(numel, 1 << 16),), dtype=torch.float32, device=device)
        _cache[key] = entry
    return entry
