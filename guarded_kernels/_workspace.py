"""Self-resetting per-row scratch for the one-launch cross-program reductions.

Each row reduced by several programs needs a packed (key, index) maximum and a count of the
programs that have finished. The last program of a row reads the maximum, writes the token and
resets both words, so the buffers are clean again when the launch ends and no fill launch is
needed before the next call (a fill is a launch of its own, and a T = 1 call should be one).

The buffers are cached per (device, stream): two launches in flight on different streams never
share them. Two calls in flight on the *same* stream are ordered by the stream, so they can share.
"""

from __future__ import annotations

INT64_MIN = -(2**63)

_cache: dict = {}


def row_scratch(device, rows: int):
    """(best [rows] int64 filled with INT64_MIN, done [rows] int32 zeros) for ``device``.

    Grows (a fresh allocation) when ``rows`` exceeds what is cached. Under CUDA-graph capture a
    first allocation is captured with its fill; later calls reuse the cached buffers.
    """
    import torch

    stream_id = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (str(device), stream_id)
    entry = _cache.get(key)
    if entry is None or entry[0].numel() < rows:
        size = max(rows, 1024)
        best = torch.full((size,), INT64_MIN, dtype=torch.int64, device=device)
        done = torch.zeros((size,), dtype=torch.int32, device=device)
        entry = (best, done)
        _cache[key] = entry
    return entry


def sm_count(device) -> int:
    """Multiprocessors of ``device``; a small fixed number for the CPU interpreter."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4
