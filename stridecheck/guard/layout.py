"""Does an address reach a tensor's elements the way the tensor's own strides do?

The question behind every check of a derived contract. An access addresses
``base + i_1 * v_1 + ... + i_k * v_k`` (the *items*: each index times the launch value of its
step); a tensor holds its elements at ``j_1 * stride_1 + ... + j_n * stride_n``. The kernel's
items need not be grouped as the tensor's dims are:

* **merged dims** — dims that are packed together (``stride[d] == shape[d+1] * stride[d+1]``)
  form a *run*: ``extent`` elements ``base`` apart. A run may be read as one dim (a ``[B*M, N]``
  buffer read as rows) or cut anywhere its dims' boundaries allow;
* **split dims** — an item stepping ``m * base`` inside a run cuts it there, as long as the cut
  agrees with the run's own dim boundaries (each divides the other): group-norm's backward reads
  a contiguous ``[B, G, (C/G)*H]`` tensor with ``[B, C, H]`` strides, cutting the last dim at
  ``H``;
* **size-1 dims** hold index 0 only; an item may sit on one with any step (a batch of one row);
* **a step past a dim** (a multiple of its stride at least its extent, on a dim packed with no
  other: ``group * channels_per_group`` over the weight of one group's channels) lets its index be
  0 only; it is read so when every run is stepped by some other item (else the run nobody steps
  is the dim it was meant for);
* **a zero step** on a tensor with fewer dims than items is a broadcast (a weight row shared
  by every row).

A *reading* assigns every item to a run (at a cut ``m``), a size-1 dim or a broadcast, such
that the cuts in each run nest (each divides the next outer one). The access is valid when some
reading exists that also passes two checks on what the items walk: a store masked by ``offs <
n`` must fit the piece its unit index walks, and a dim that no item steps, right outside the
unit index's run, cannot be reached at all (so the unit index would have to walk into it, and it
is not packed with it).

When no reading exists, the refusal comes from the *canonical* reading (items on the tensor's
own dims: the unit index on the last one, steps by value, the rest in written order) and names
a concrete index whose address differs (``x[1, 0]`` is at offset 40, the kernel addresses 30),
or a width that is too small. A canonical reading that fits is a valid reading, so whenever the
search finds none the canonical one shows where it breaks.
"""

from __future__ import annotations

from dataclasses import dataclass

# A reading search visits at most this many partial assignments; past it the access is not
# judged (an address with many items over a tensor of many runs: the guard prefers to check less).
_SEARCH_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Run:
    """Dims packed together, outermost first: ``extent`` elements, ``base`` apart."""

    extent: int
    base: int
    dims: tuple[int, ...]
    cuts: tuple[int, ...]  # inner extents (in units of base) at its dims' boundaries


@dataclass(slots=True)
class Item:
    """One stepping term of an address at a launch: its value and what is known of its index."""

    value: int
    text: str  # the term as written, e.g. "row * x_stride"
    index: str  # its index, e.g. "row"
    step: str  # its step as written, "" for a unit step
    kind: str  # the model's step kind: "unit", "stride", "size", "literal"
    vector: bool = False  # the index holds a tl.arange (it walks many elements at once)
    extent: int | None = None  # the index stays below this (a store's mask, a descriptor's shape)
    bound: str | None = None  # where ``extent`` comes from, for messages ("n_cols", "desc.shape[1]")
    tiled: bool = False  # a tile of another item's dim (`pid * BLOCK_M * stride_m` beside `offs_m * stride_m`)
    merged: tuple[Item, ...] = ()  # other items of the same value (one dim walked by several indices)


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a reading fails, with the concrete witness the message names."""

    kind: str  # "step" | "unit" | "packed" | "width"
    item: Item | None
    dim: int | None  # the tensor dim of the witness
    index: tuple[int, ...] | None  # the witness index into the tensor
    at: int | None  # where the tensor holds it
    addressed: int | None  # where the kernel addresses it
    detail: tuple = ()


def runs_of(shape, strides) -> tuple[list[Run], list[int]]:
    """The runs of a layout in dim order, and its size-1 dims."""
    runs: list[Run] = []
    ones: list[int] = []
    for d, (n, s) in enumerate(zip(shape, strides)):
        if n == 1:
            ones.append(d)
            continue
        if runs and runs[-1].base == n * s and n > 1:
            r = runs[-1]
            runs[-1] = Run(r.extent * n, s, r.dims + (d,), tuple(c * n for c in r.cuts) + (n,))
        else:
            runs.append(Run(n, s, (d,), ()))
    return runs, ones


def _fits(m: int, run: Run) -> bool:
    return all(c % m == 0 or m % c == 0 for c in run.cuts)


def _candidates(item: Item, runs: list[Run], ones: int, last_is_one: bool, bcast: bool) -> list[tuple]:
    v = item.value
    out: list[tuple] = []
    for i, r in enumerate(runs):
        if r.base == 0:
            if v == 0:
                out.append(("run", i, 1))
            continue
        if v % r.base == 0:
            m = v // r.base
            if 1 <= m < r.extent and _fits(m, r):
                out.append(("run", i, m))
            elif m >= r.extent and len(r.dims) == 1:
                out.append(("edge", i))
    unit = v == 1 and item.vector
    if ones and (not unit or last_is_one):
        out.append(("one",))
    if v == 0 and bcast:
        out.append(("bcast",))
    return out


def merge_items(items: list[Item], every: bool = False) -> list[Item]:
    """A tile item and an item of the same value walk one dim together (``pid * BLOCK_M *
    stride_m + offs_m * stride_m``, ``pid * BLOCK + offs``): one item. Other items of equal
    value are two dims and need two places, unless ``every`` (then the reading must step every
    run: ``group * channels_per_group + channel`` with one channel per group)."""
    out: list[Item] = []
    for it in items:
        same = next((o for o in out if o.value == it.value and (every or o.tiled or it.tiled)), None)
        if same is None:
            out.append(Item(it.value, it.text, it.index, it.step, it.kind, it.vector, it.extent, it.bound, it.tiled))
        else:
            same.vector = same.vector or it.vector
            if same.tiled and not it.tiled:  # name the element walk, not the tile
                same.text, same.index, same.step, same.kind, same.tiled = it.text, it.index, it.step, it.kind, False
            same.extent = same.bound = None  # two indices on one dim: their joint extent is unknown
            same.merged = same.merged + (it,)
    return out


def _pieces(run: Run, cuts: list[int]) -> dict[int, int]:
    """cut -> size of the piece a cut claims (the outermost may be partial: rounded up)."""
    order = sorted(cuts, reverse=True)
    sizes = {}
    outer = None
    for m in order:
        sizes[m] = -(-run.extent // m) if outer is None else outer // m
        outer = m
    return sizes


def check_reading(items, reading, runs, ones_dims, shape, strides, packable, cover=False) -> Problem | None:
    """The checks on what a reading's items walk (see the module docstring); None if it passes.
    ``cover``: every run must be stepped by some item."""
    by_run: dict[int, list[int]] = {}
    for k, place in enumerate(reading):
        if place[0] == "run":
            by_run.setdefault(place[1], []).append(place[2])
    if (cover or any(place[0] == "edge" for place in reading)) and len(by_run) < len(runs):
        return Problem("edge", None, None, None, None, None)
    sizes = {i: _pieces(runs[i], ms) for i, ms in by_run.items()}
    unit_run = None
    for it, place in zip(items, reading):
        if it.value == 1 and it.vector and place[0] == "run":
            unit_run = place[1]
        if it.extent is None:
            continue
        cap = sizes[place[1]][place[2]] if place[0] == "run" else (1 if place[0] in ("one", "edge") else None)
        if cap is not None and it.extent > cap:
            return _width_problem(it, place, runs, cap, shape, strides)
    if packable and unit_run is not None and by_run.get(unit_run) == [1]:
        # The unit index walks its whole run. The dim just outside it, if no item steps it, can
        # only be reached by walking on: it would have to be packed with the run, and it is not
        # (else it would belong to the run).
        r = runs[unit_run]
        outside = [d for d in range(r.dims[0]) if shape[d] > 1]
        if outside:
            d = outside[-1]
            owner = next(i for i, q in enumerate(runs) if d in q.dims)
            if 1 not in by_run.get(owner, []):
                unit = next(it for it in items if it.value == 1 and it.vector)
                idx = tuple(1 if k == d else 0 for k in range(len(shape)))
                return Problem("packed", unit, d, idx, strides[d], r.extent, (r.dims, r.extent))
    return None


def _width_problem(it: Item, place, runs, cap: int, shape, strides) -> Problem:
    if place[0] == "run":
        r = runs[place[1]]
        m = place[2]
        addressed = cap * m * r.base
        # The dims the piece spans: from the run's innermost outwards while they fit in it.
        inner, size = [], 1
        for d in reversed(r.dims):
            if size * shape[d] > cap * m:
                break
            size *= shape[d]
            inner.insert(0, d)
        return Problem("width", it, r.dims[-1], None, None, addressed, (tuple(inner) or (r.dims[-1],), cap))
    return Problem("width", it, None, None, None, None, ((), cap))


def find_reading(items: list[Item], shape, strides, packable: bool, cover: bool = False):
    """A reading of ``items`` over the layout that passes :func:`check_reading`, or None.

    Returns ``(reading, runs)``; ``reading`` is ``True`` when the search gave up (not judged)."""
    runs, ones = runs_of(shape, strides)
    nontrivial = len(shape) - len(ones)
    last_is_one = bool(shape) and shape[-1] == 1
    cands = [_candidates(it, runs, len(ones), last_is_one, len(items) > nontrivial) for it in items]
    order = sorted(range(len(items)), key=lambda i: len(cands[i]))
    reading: list = [None] * len(items)
    chosen: dict[int, list[int]] = {}
    used_ones = [0]
    visits = [0]

    def place(k: int) -> bool | None:
        visits[0] += 1
        if visits[0] > _SEARCH_LIMIT:
            return None
        if k == len(order):
            return check_reading(items, reading, runs, ones, shape, strides, packable, cover) is None
        i = order[k]
        for c in cands[i]:
            if c[0] == "run":
                ms = chosen.setdefault(c[1], [])
                m = c[2]
                if any(x == m or (x % m and m % x) for x in ms):
                    continue
                ms.append(m)
                reading[i] = c
                got = place(k + 1)
                ms.pop()
            elif c[0] == "one":
                if used_ones[0] >= len(ones):
                    continue
                used_ones[0] += 1
                reading[i] = c
                got = place(k + 1)
                used_ones[0] -= 1
            else:
                reading[i] = c
                got = place(k + 1)
            if got is None:
                return None
            if got:
                return True
        return False

    found = place(0)
    if found is None:
        return True, runs
    return (list(reading) if found else None), runs


def canonical(items: list[Item], shape, strides):
    """The canonical reading: ``(dims, problem)`` where ``dims[k]`` is the tensor dim item ``k``
    is read on (None: broadcast or none left) and ``problem`` the first step that differs."""
    nd = len(shape)
    big = [d for d in range(nd) if shape[d] > 1]
    ones = [d for d in range(nd) if shape[d] == 1]
    dims: list[int | None] = [None] * len(items)
    taken: set[int] = set()
    for k, it in enumerate(items):
        if it.value == 1 and it.vector:
            unit = big[-1] if big else (ones[-1] if ones else None)
            if unit is not None:
                dims[k] = unit
                taken.add(unit)
    for k, it in enumerate(items):
        if dims[k] is not None:
            continue
        d = next((d for d in big if d not in taken and strides[d] == it.value), None)
        if d is None:
            d = next((d for d in ones if d not in taken and strides[d] == it.value), None)
        if d is not None:
            dims[k] = d
            taken.add(d)
    for k, it in enumerate(items):
        if dims[k] is not None or it.vector:
            continue
        d = next((d for d in ones if d not in taken), None)
        if d is not None:
            dims[k] = d
            taken.add(d)
    left = [d for d in big if d not in taken]
    for k, it in enumerate(items):
        if dims[k] is None and left and not (it.value == 0 and len(items) > len(big)):
            dims[k] = left.pop(0)
            taken.add(dims[k])
    for k, it in enumerate(items):
        d = dims[k]
        if d is None or strides[d] == it.value or shape[d] <= 1:
            continue
        idx = tuple(1 if j == d else 0 for j in range(nd))
        kind = "unit" if it.value == 1 and it.vector else "step"
        return dims, Problem(kind, it, d, idx, strides[d], it.value)
    for k, it in enumerate(items):
        if dims[k] is None and not (it.value == 0 and len(items) > len(big)):
            return dims, Problem("step", it, None, None, None, it.value)
    return dims, None


def induced_reading(items, dims, runs, ones_dims):
    """The run reading the canonical one amounts to (when every item sits on a dim of its stride)."""
    reading = []
    for it, d in zip(items, dims):
        if d is None:
            reading.append(("bcast",))
        elif d in ones_dims:
            reading.append(("one",))
        else:
            i = next(i for i, r in enumerate(runs) if d in r.dims)
            r = runs[i]
            reading.append(("run", i, it.value // r.base if r.base else 1))
    return reading


def judge(items: list[Item], shape, strides, packable: bool) -> Problem | None:
    """None when the items have a valid reading over the layout (or cannot be judged); else the
    problem of the canonical reading, with its witness."""
    raw = items
    items = merge_items(raw)
    if not items:
        return None
    reading, runs = find_reading(items, shape, strides, packable)
    if reading is not None:
        return None
    joined = merge_items(raw, every=True)
    if len(joined) < len(items) and find_reading(joined, shape, strides, packable, cover=True)[0] is not None:
        return None
    dims, problem = canonical(items, shape, strides)
    if problem is not None:
        return problem
    ones = [d for d in range(len(shape)) if shape[d] == 1]
    return check_reading(items, induced_reading(items, dims, runs, ones), runs, ones, shape, strides, packable)


def element_at(offset: int, shape, strides) -> tuple[int, ...] | None:
    """The index of the element at ``offset`` (in elements from element 0), if one is there."""
    order = sorted((d for d in range(len(shape)) if shape[d] > 1 and strides[d] > 0), key=lambda d: -strides[d])
    idx = [0] * len(shape)
    rest = offset
    for d in order:
        j = min(max(rest // strides[d], 0), shape[d] - 1)
        idx[d] = j
        rest -= j * strides[d]
    return tuple(idx) if rest == 0 else None


def describe_offset(name: str, offset: int, shape, strides) -> str:
    """``offset`` in words: the element there, or that none is."""
    if any(n == 0 for n in shape):
        return "no element: it is empty"
    idx = element_at(offset, shape, strides)
    if idx is not None:
        return f"that is {name}[{', '.join(map(str, idx))}]"
    top = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    if offset > top or offset < low:
        return f"past {name}'s elements"
    return f"no element of {name}: a gap between its elements"


def overlap_witness(shape, strides) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """Two indices of one element (``(a, b, offset)``), when the greedy search finds them.

    A stride-0 dim, or a dim whose stride is reached by the dims inside it (``[4, 4]`` strides
    ``[2, 1]``: ``[1, 0]`` and ``[0, 2]``)."""
    nd = len(shape)
    for d in range(nd):
        if shape[d] > 1 and strides[d] == 0:
            b = tuple(1 if k == d else 0 for k in range(nd))
            return (0,) * nd, b, 0
    for d in range(nd):
        if shape[d] <= 1:
            continue
        others = [k for k in range(nd) if k != d]
        sub_shape = [shape[k] for k in others]
        sub_strides = [strides[k] for k in others]
        idx = element_at(strides[d], sub_shape, sub_strides)
        if idx is not None:
            a = [0] * nd
            for k, j in zip(others, idx):
                a[k] = j
            b = tuple(1 if k == d else 0 for k in range(nd))
            if tuple(a) != b:
                return tuple(a), b, strides[d]
    return None
