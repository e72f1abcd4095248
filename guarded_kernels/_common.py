"""What :mod:`guarded_kernels.sample` and :mod:`guarded_kernels.resample` share: the running
maximum with ``torch.argmax``'s order, the packed word of the cross-program merge, the layout of
a row over programs, and the check that a launch can run where its tensors are."""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from guarded_kernels.noise import pack_key_index

FLOATS = (torch.float32, torch.bfloat16, torch.float16)
INTS = (torch.int32, torch.int64)
LOG2E = tl.constexpr(1.4426950408889634)


def check_device(function: str, tensor: torch.Tensor, interpreted: bool) -> None:
    """Refuse a launch Triton cannot run: CPU tensors need Triton's interpreter, which is chosen
    when the kernels are defined (``TRITON_INTERPRET=1`` before ``guarded_kernels`` is imported)."""
    if tensor.device.type == "cpu" and not interpreted:
        raise RuntimeError(
            f"{function}: the tensors are on the CPU, and Triton compiles kernels for a GPU. Move them "
            "to a CUDA (or ROCm) device, or run the kernels on the CPU through Triton's interpreter "
            "(slow; for tests): set TRITON_INTERPRET=1 in the environment before guarded_kernels "
            "(or triton) is first imported."
        )


@triton.jit
def row_argmax(best_val, best_idx):
    """(maximum, lowest index among the lanes holding it) of a block of per-lane maxima: the lanes
    hold interleaved token ids, so the first lane with the maximum is not the lowest token id."""
    m = tl.max(best_val, 0)
    win = tl.min(tl.where(best_val == m, best_idx, 2147483647), 0)
    return m, win


@triton.jit
def greedy_update(x, idx, best_val, best_idx):
    """Running maximum with ``torch.argmax``'s order: NaN above everything (the first NaN wins),
    then the lowest index on ties. A NaN is kept as ``+inf`` with its index tagged by the sign bit
    (``idx - 2**31``, below every untagged index, in the same order), so the lane maximum and the
    lowest-index tie rule of :func:`row_winner` pick the first NaN; a later ``+inf`` cannot
    displace it (``inf > inf`` is false) and a NaN displaces a held ``+inf``. Only greedy rows take
    this path."""
    nan = x != x
    upd = (x > best_val) | (nan & (best_idx >= 0))
    return tl.where(upd, tl.where(nan, float("inf"), x), best_val), tl.where(upd, tl.where(nan, idx | -2147483648, idx), best_idx)


@triton.jit
def row_winner(best_val, best_idx):
    """(maximum, lowest winning token id, whether a greedy NaN won) of a program's lanes."""
    m, win = row_argmax(best_val, best_idx)
    return m, win & 2147483647, win < 0


@triton.jit
def merge_key(m, win, nan_won):
    """The packed (key, index) word of the cross-program merge; a greedy NaN winner gets a key
    above every number's (the bits of a positive quiet NaN, above ``+inf``'s)."""
    return tl.where(nan_won, (2143289344 << 32) | (4294967295 - win.to(tl.int64)), pack_key_index(m, win))


def chunk_layout(vocab_size: int, splits: int, block: int) -> tuple[int, int]:
    """(columns per program, programs per row) of a row of ``vocab_size`` columns asked to be
    split ``splits`` ways: chunks a whole number of ``block`` columns, so the programs actually
    launched can be fewer than asked."""
    chunk = triton.cdiv(triton.cdiv(vocab_size, splits), block) * block
    return chunk, triton.cdiv(vocab_size, chunk)


def fill_splits(num_rows: int, vocab_size: int, block: int, programs: int, cap: int) -> int:
    """Programs per row that fill ``programs`` program slots: at most one per block and ``cap``."""
    return max(1, min(-(-programs // max(num_rows, 1)), triton.cdiv(vocab_size, block), cap))


@functools.lru_cache(maxsize=1024)
def wave_splits(num_rows: int, num_blocks: int, slots: int) -> int:
    """Programs per row minimising (waves of programs) x (blocks per program + 1): the time of
    the launch when every program slot walks its blocks at the same pace, with about one block's
    time per program for its start and merge. Ties go to fewer programs (fewer merges). At
    T = 256, V = 151,936 on an H200 it picks 1 (one wave of 38-block programs) where filling four
    programs per multiprocessor picked 3 (2.9 waves of 13 blocks): 59.7 against 63.5 us."""
    best, best_cost = 1, None
    for s in range(1, min(num_blocks, 64) + 1):
        per_program = -(-num_blocks // s)
        programs = num_rows * -(-num_blocks // per_program)
        cost = -(-programs // slots) * (per_program + 1)
        if best_cost is None or cost < best_cost:
            best, best_cost = s, cost
    return best


class Gpu(NamedTuple):
    """What a launch plan needs to know of a GPU: its multiprocessor count, and whether it has
    programmatic dependent launch (NVIDIA compute capability 9.0 or later)."""

    sms: int
    pdl: bool


@functools.lru_cache(maxsize=None)
def _gpu_of_index(index: int) -> Gpu:
    props = torch.cuda.get_device_properties(index)
    return Gpu(props.multi_processor_count, torch.version.hip is None and props.major >= 9)


def gpu_of(device, interpreted: bool) -> Gpu | None:
    """The :class:`Gpu` a launch on ``device`` (a ``torch.device``, or a :class:`Gpu` to plan for
    one without it) runs on, or None for the CPU interpreter."""
    if isinstance(device, Gpu):
        return device
    if device.type != "cuda" or interpreted:
        return None
    return _gpu_of_index(device.index if device.index is not None else torch.cuda.current_device())
