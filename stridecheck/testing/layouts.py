"""Physical layouts for the same logical tensor, in poisoned, guarded buffers.

Used by :mod:`stridecheck.testing.invariant` and :mod:`stridecheck.testing.strategies`; imports
torch at import time, so those modules' functions import it lazily.

Every re-materialised tensor lives in a fresh 1-D *buffer*::

    [ guard zone | region (the view's elements and the gaps between them) | guard zone ]

The buffer is filled with a poison value before the logical values are copied into the view,
so every element the view does not cover (the gaps: row padding, skipped outer slices, the
storage-offset prefix and both guard zones) holds poison. After the call, any byte of the gap
that differs from the snapshot taken before it is a stray write.

Poison (see :func:`poison_value`):

* floating and complex dtypes: NaN (so a stray *read* also shows, as NaN in the result);
* signed integers: ``-1``, which no valid index takes. A kernel that reads an index from a gap
  (an index tensor whose stride it ignores) then steps one row *before* the tensor it indexes,
  into that buffer's guard zone, where the stray write or read is seen; an extreme value (the
  dtype's minimum) would step to a wild address and kill the process — a segfault under the
  interpreter, an illegal address that ruins the CUDA context on a GPU;
* unsigned integers: the dtype's maximum (255 for uint8);
* bool: ``True``.

A gap element written with the very bits it held is not seen as written: typically a
read-modify-write of a float gap (``NaN + x`` keeps the poison NaN's bits). Its effect on the
logical values still shows in the comparison with the baseline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# Row padding, in elements, of the padded layouts: odd, so that a padded row is never a whole
# number of 16-byte vectors and an aligned-only code path cannot hide a wrong stride.
ROW_PAD = 3
# Elements before the view's first element in the storage_offset layout; odd for the same reason.
STORAGE_OFFSET = 3
# Guard-zone length, in elements, before and after each region: at least this many, and at
# least one whole tensor's worth (capped), so that a write one row or one tensor out of bounds
# lands in poison rather than in another allocation.
MIN_GUARD = 64
MAX_GUARD = 1 << 16

#: Layouts whose last dimension keeps stride 1 (or has size 1): what a Triton kernel addressing
#: ``base + offs`` may assume, so every correct kernel must give the same answers on them.
UNIT_INNER_LAYOUTS = ("padded_last", "padded_outer", "storage_offset", "size_one_strides")
#: Layouts whose last dimension's stride is not 1. A kernel need not support them, but for an
#: argument it only reads it must then refuse them (or copy), never read them as if dense.
NON_UNIT_INNER_LAYOUTS = ("transposed", "strided")
#: What :func:`stridecheck.testing.assert_layout_invariant` tries by default.
DEFAULT_LAYOUTS = UNIT_INNER_LAYOUTS + NON_UNIT_INNER_LAYOUTS
#: Tried on request, or where a ``@stride_guard`` contract allows them: stride-0 (expanded) inputs.
EXTRA_LAYOUTS = ("expanded",)
ALL_LAYOUTS = DEFAULT_LAYOUTS + EXTRA_LAYOUTS

LAYOUT_DOCS = {
    "contiguous": "row-major, no gaps (the baseline)",
    "padded_last": f"last dimension padded by {ROW_PAD} poisoned elements (a row-padded buffer)",
    "padded_outer": "a view into a buffer larger along every dimension (each outer dimension one "
    f"slice longer, rows 2 * n + {ROW_PAD} wide for n columns, the view starting one slice in "
    "along each dimension)",
    "storage_offset": f"row-major, starting {STORAGE_OFFSET} elements into its buffer",
    "size_one_strides": "row-major, except that every dimension of size 1 has stride 0: the same "
    "addresses as the contiguous layout (PyTorch leaves the stride of a size-1 dimension "
    "arbitrary, and is_contiguous() ignores it), so only a kernel that reads a stride it never "
    "needs gives other answers",
    "transposed": "a transposed copy permuted back: dimensions stored in reverse order, so the "
    "last dimension's stride is not 1",
    "strided": "every other element of a buffer twice as large along every dimension (a [::2] "
    "slice of each), so every stride, the last one too, is twice the contiguous one",
    "expanded": "stride 0 along every dimension of size 1 or whose values do not vary along it "
    "(an expanded view); read-only inputs only",
}


def poison_value(dtype: torch.dtype) -> float | int | bool:
    """The value gaps of a buffer of ``dtype`` are filled with (NaN, -1, uint max, True)."""
    if dtype.is_floating_point or dtype.is_complex:
        return math.nan
    if dtype == torch.bool:
        return True
    info = torch.iinfo(dtype)
    return -1 if info.min < 0 else info.max


def poisoned(numel: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """A 1-D tensor of ``numel`` poison elements."""
    value = poison_value(dtype)
    try:
        return torch.full((numel,), value, dtype=dtype, device=device)
    except (RuntimeError, TypeError):
        # Some narrow dtypes (float8 variants) have no fill kernel on some devices.
        return torch.full((numel,), value, dtype=torch.float32, device=device).to(dtype)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def constant_dims(t: torch.Tensor) -> tuple[int, ...]:
    """Dimensions of ``t`` along which its values do not change (size-1 dimensions included)."""
    dims = []
    for d, size in enumerate(t.shape):
        if size == 1:
            dims.append(d)
        elif size > 1 and t.numel() > 0:
            first = t.narrow(d, 0, 1)
            same = t == first
            if t.is_floating_point() or t.is_complex():
                same = same | (torch.isnan(t) & torch.isnan(first))
            if bool(same.all()):
                dims.append(d)
    return tuple(dims)


@dataclass(frozen=True)
class Placement:
    """Where a layout puts a tensor of a given shape inside its region (all in elements)."""

    strides: tuple[int, ...]
    offset: int  # of the view's first element from the region's start
    region: int  # elements from the region's start to one past the last element reachable


def placement(layout: str, shape: tuple[int, ...], stride0_dims: tuple[int, ...] = ()) -> Placement | None:
    """The strides and offset ``layout`` gives a tensor of ``shape``; None where it does not apply.

    A layout does not apply where it would equal the contiguous one (``padded_last`` and
    ``padded_outer`` on fewer than 2 dimensions; ``size_one_strides`` on a tensor with no
    dimension of size 1; ``transposed`` on a tensor with at most one dimension larger than 1;
    ``strided`` on one with none; ``expanded`` with no constant dimension).

    Raises:
        ValueError: an unknown layout name.
    """
    nd = len(shape)
    if layout == "contiguous":
        strides, offset = contiguous_strides(shape), 0
    elif layout == "storage_offset":
        strides, offset = contiguous_strides(shape), STORAGE_OFFSET
    elif layout == "size_one_strides":
        # Stride 0: a kernel that steps by such a stride then reads one slice for all, which any
        # varying data shows, and it can never step outside the buffer (a large stride could).
        if 1 not in shape:
            return None
        strides = tuple(0 if size == 1 else st for size, st in zip(shape, contiguous_strides(shape)))
        offset = 0
    elif layout == "padded_last":
        if nd < 2:
            return None
        strides, offset = contiguous_strides(shape[:-1] + (shape[-1] + ROW_PAD,)), 0
    elif layout == "padded_outer":
        if nd < 2:
            return None
        # Rows more than twice as wide as the view's (odd, as ROW_PAD): a kernel that steps rows
        # by a size then reads mostly poison and the wrong rows, which even a reduction as
        # forgiving as a max notices; a small pad would shift it by a few elements only.
        extents = tuple(s + 1 for s in shape[:-1]) + (2 * shape[-1] + ROW_PAD,)
        strides = contiguous_strides(extents)
        offset = sum(strides)  # start one slice in along every dimension
    elif layout == "transposed":
        if sum(1 for s in shape if s > 1) < 2:
            return None
        reversed_strides = contiguous_strides(tuple(reversed(shape)))
        strides, offset = tuple(reversed(reversed_strides)), 0
    elif layout == "strided":
        if not any(size > 1 for size in shape):
            return None
        strides, offset = tuple(2 * st for st in contiguous_strides(tuple(2 * s for s in shape))), 0
    elif layout == "expanded":
        if not stride0_dims:
            return None
        # Dense over the one slice kept of each stride-0 dimension.
        base = contiguous_strides(tuple(1 if d in stride0_dims else s for d, s in enumerate(shape)))
        strides = tuple(0 if d in stride0_dims else s for d, s in enumerate(base))
        offset = 0
    else:
        raise ValueError(f"unknown layout {layout!r}; known layouts: {', '.join(('contiguous',) + ALL_LAYOUTS)}")
    if any(s == 0 for s in shape):
        last = offset
    else:
        last = offset + sum((size - 1) * st for size, st in zip(shape, strides))
    return Placement(strides=tuple(strides), offset=offset, region=last + 1)


@dataclass
class Materialised:
    """A tensor re-materialised in a poisoned, guarded buffer.

    ``view`` holds the logical values; ``gap`` is True at every buffer element ``view`` does not
    cover; ``snapshot`` is the buffer right after filling, for :meth:`gap_writes`.
    """

    layout: str
    buffer: torch.Tensor
    view: torch.Tensor
    start: int  # the view's storage offset in ``buffer``
    gap: torch.Tensor
    snapshot: torch.Tensor

    def gap_writes(self, limit: int = 16) -> tuple[int, list[tuple[int, object, object]]]:
        """Gap elements whose bytes changed since the snapshot.

        Returns ``(how many, the first `limit` of them as (buffer index, before, after))``.
        """
        item = self.buffer.element_size()
        now = self.buffer.view(torch.uint8).reshape(-1, item)
        was = self.snapshot.view(torch.uint8).reshape(-1, item)
        changed = (now != was).any(dim=1) & self.gap
        count = int(changed.sum())
        if not count:
            return 0, []
        idx = torch.nonzero(changed).flatten()[:limit].tolist()
        return count, [(i, _scalar(self.snapshot[i]), _scalar(self.buffer[i])) for i in idx]

    def describe_position(self, index: int) -> str:
        """Where buffer element ``index`` lies relative to the view, in words."""
        rel = index - self.start
        if rel < 0:
            return f"{-rel} element(s) before the view's first element"
        last = self.start + (
            sum((s - 1) * st for s, st in zip(self.view.shape, self.view.stride())) if self.view.numel() else 0
        )
        if index > last:
            return f"{index - last} element(s) after the view's last element"
        return f"in a gap inside the view, {rel} element(s) from its first element"


def _scalar(t: torch.Tensor) -> object:
    try:
        return t.item()
    except (RuntimeError, TypeError):
        return t.float().item()


def guard_length(numel: int) -> int:
    return max(MIN_GUARD, min(numel, MAX_GUARD))


def materialise(t: torch.Tensor, layout: str, stride0_dims: tuple[int, ...] = ()) -> Materialised | None:
    """Copy ``t``'s values into a fresh poisoned buffer, laid out as ``layout``.

    Args:
        t: any tensor (any shape, dtype, device); it is only read.
        layout: a name from :data:`ALL_LAYOUTS` or ``"contiguous"``.
        stride0_dims: for ``"expanded"``, the dimensions to give stride 0 (their values must be
            constant along them, see :func:`constant_dims`).

    Returns:
        The :class:`Materialised` tensor, or None where ``layout`` does not apply to ``t``.
    """
    shape = tuple(t.shape)
    place = placement(layout, shape, stride0_dims)
    if place is None:
        return None
    guard = guard_length(t.numel())
    start = guard + place.offset
    total = guard + place.region + guard
    src = t.detach()
    buffer = poisoned(total, t.dtype, t.device)
    if layout == "expanded":
        # Copy one slice along each stride-0 dimension: writing the whole expanded view would
        # write several elements to one address.
        for d in stride0_dims:
            src = src.narrow(d, 0, 1)
        torch.as_strided(buffer, src.shape, place.strides, start).copy_(src)
    else:
        torch.as_strided(buffer, shape, place.strides, start).copy_(src)
    view = torch.as_strided(buffer, shape, place.strides, start)
    gap = torch.ones(total, dtype=torch.bool, device=t.device)
    # One byte per element: mark the view's elements (one slice along stride-0 dimensions, so
    # that no two written elements share an address).
    torch.as_strided(gap, src.shape, place.strides, start).fill_(False)
    return Materialised(layout=layout, buffer=buffer, view=view, start=start, gap=gap, snapshot=buffer.clone())
