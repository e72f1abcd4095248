"""Hypothesis strategies for tensors of random physical layouts.

>>> from hypothesis import given
>>> from stridecheck.strategies import strided_tensors
>>> @given(strided_tensors(shape=(4, 7), dtype=torch.float16))
... def test_row_sum(x): ...

Needs ``hypothesis`` and ``torch`` (imported when a strategy is built, not at import).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["strided_tensors"]


def strided_tensors(
    shape: Any,
    dtype: Any = None,
    *,
    device: str = "cpu",
    unit_inner_stride: bool = True,
    max_pad: int = 3,
    max_step: int = 2,
    max_offset: int = 8,
    fill: str = "poison",
):
    """A strategy for valid tensors of ``shape`` and ``dtype`` in random physical layouts.

    Each example is a view into a fresh 1-D buffer, built by drawing:

    * a *memory order* of the dimensions (a permutation; the last dimension stays innermost, so
      ``stride(-1) == 1``, unless ``unit_inner_stride=False``),
    * per dimension a slice step in ``[1, max_step]`` (1 for the innermost dimension while
      ``unit_inner_stride``), padding in ``[0, max_pad]`` elements and a slice start inside it,
    * a storage offset in ``[0, max_offset]`` elements.

    So it covers contiguous tensors, row-padded buffers, slices of larger tensors, storage
    offsets and permuted (e.g. transposed-contiguous) tensors. Each draw records its layout with
    ``hypothesis.note`` (shape, dtype, strides, storage offset, memory order), so a falsifying
    example shows the strides that broke it, not only its values. Elements never overlap (no stride-0
    or aliasing dimensions): every example is a legal output tensor too. The values are drawn
    from a seeded ``torch.Generator`` (normal floats, integers in ``[-100, 100)`` but never the poison
    -1 — ``[0, 100)`` for unsigned — and fair booleans).

    Args:
        shape: a tuple of non-negative ints, or a strategy producing such tuples.
        dtype: a ``torch.dtype`` or a strategy producing one; default ``torch.float32``.
        device: where the tensors live (``"cpu"``, ``"cuda"``...).
        unit_inner_stride: keep ``stride(-1) == 1`` (what ``base + offs`` addressing assumes).
        max_pad, max_step, max_offset: bounds of the drawn padding, slice step and storage offset,
            in elements (non-negative; ``max_step >= 1``).
        fill: what the gaps hold: ``"poison"`` (NaN / -1 / uint max / True, as in
            :mod:`stridecheck.testing`) or ``"zeros"``.

    Raises:
        TypeError: ``shape`` or ``dtype`` of the wrong kind.
        ValueError: a negative size or bound, ``max_step < 1``, an unknown ``fill``.
    """
    import torch
    from hypothesis import note
    from hypothesis import strategies as st
    from hypothesis.strategies import SearchStrategy

    if isinstance(shape, SearchStrategy):
        shapes = shape
    else:
        try:
            fixed = tuple(int(s) for s in shape)
        except TypeError:
            raise TypeError(f"shape must be a tuple of ints or a strategy, got {shape!r}") from None
        if any(s < 0 for s in fixed):
            raise ValueError(f"shape {fixed} has a negative size")
        shapes = st.just(fixed)
    if dtype is None:
        dtype = torch.float32
    if isinstance(dtype, SearchStrategy):
        dtypes = dtype
    elif isinstance(dtype, torch.dtype):
        dtypes = st.just(dtype)
    else:
        raise TypeError(f"dtype must be a torch.dtype or a strategy, got {dtype!r}")
    if min(max_pad, max_offset) < 0 or max_step < 1:
        raise ValueError(
            f"bounds must be max_pad >= 0, max_offset >= 0, max_step >= 1; "
            f"got max_pad={max_pad}, max_step={max_step}, max_offset={max_offset}"
        )
    if fill not in ("poison", "zeros"):
        raise ValueError(f"fill must be 'poison' or 'zeros', got {fill!r}")

    @st.composite
    def build(draw):
        shape = tuple(draw(shapes))
        dt = draw(dtypes)
        nd = len(shape)
        if nd and unit_inner_stride:
            order = list(draw(st.permutations(range(nd - 1)))) + [nd - 1]
        else:
            order = list(draw(st.permutations(range(nd))))
        # Memory order, outermost first: extents of the buffer and the slice taken of each.
        steps, pads, starts = [], [], []
        for pos, d in enumerate(order):
            innermost = pos == nd - 1
            step = 1 if (innermost and unit_inner_stride) else draw(st.integers(1, max_step))
            pad = draw(st.integers(0, max_pad))
            steps.append(step)
            pads.append(pad)
            starts.append(draw(st.integers(0, pad)))
        offset = draw(st.integers(0, max_offset))
        seed = draw(st.integers(0, 2**31 - 1))

        extents = [shape[d] * steps[i] + pads[i] for i, d in enumerate(order)]
        numel = math.prod(extents)
        if fill == "poison":
            from stridecheck.testing.layouts import poisoned

            buffer = poisoned(offset + numel, dt, device)
        else:
            buffer = torch.zeros(offset + numel, dtype=dt, device=device)
        base = buffer[offset:].view(extents) if nd else buffer[offset:offset + 1].view(())
        index = tuple(
            slice(starts[i], starts[i] + shape[d] * steps[i], steps[i]) for i, d in enumerate(order)
        )
        in_memory_order = base[index]
        inverse = [order.index(d) for d in range(nd)]
        view = in_memory_order.permute(inverse) if nd else in_memory_order
        view.copy_(_values(shape, dt, seed).to(device))
        note(
            f"strided_tensors drew shape {shape} {dt}: strides {tuple(view.stride())}, storage offset "
            f"{view.storage_offset()} (memory order {tuple(order)}, a buffer of {buffer.numel()} elements)"
        )
        return view

    return build()


def _values(shape, dtype, seed):
    import torch

    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype.is_complex:
        return torch.randn(shape, generator=gen, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    low = 0 if torch.iinfo(dtype).min == 0 else -100
    values = torch.randint(low, 100, shape, generator=gen)
    # -1 is the signed integers' poison: keep it out of the values, so a stray read shows.
    return torch.where(values == -1, torch.full_like(values, -100), values).to(dtype)
