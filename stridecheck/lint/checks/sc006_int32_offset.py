"""SC006 int32-offset: a product that can pass 2**31 - 1 for the tensors a kernel is launched with,
computed in 32-bit arithmetic.

Triton computes ``tl.program_id``, ``tl.arange`` and loads of int32 tensors in 32 bits, and an
integer kernel argument below 2**31 is specialised to int32, so ``row * row_stride`` wraps once it
passes 2**31 - 1 (row 524,288 of a 4,096-wide tensor) and the kernel reads or writes far from
where it should. A finding needs all of:

* the index ranges over a dimension with no small bound: a value loaded from memory (a gathered
  row, a KV-cache block or slot, an expert's row), or a program id over rows (the grid axis or the
  mask bound that the launch ties to the outermost dimension of a tensor or to its element count;
  with no launch in view, a program id that steps the first term of its address);
* it multiplies a stride or a size parameter (a ``tl.constexpr`` one too);
* no factor is 64-bit: ``.to(tl.int64)`` / ``.cast(tl.int64)``, a ``tl.int64`` annotation, an
  index loaded from a tensor the launcher shows is int64, and block-pointer or tensor-descriptor
  offsets (64-bit by construction) are silent.

Products bounded by one row, head or tile never are findings: a column or within-row index
(``offs[None, :] * stride_n``), a head within a batch element, a program id over a grid axis the
launch bounds by a literal. One finding per (kernel, pointer, index); the other lines that repeat
the product are its related locations.
"""

from __future__ import annotations

from collections import defaultdict

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._kernel_side import address_accesses, judged_kernels
from stridecheck.lint.model import IndexSource, OriginKind, StepKind
from stridecheck.lint.provenance import runs_in_training

CODE = "SC006"
ROWS, INNER, UNKNOWN = "rows", "inner", "unknown"


def _shape_extent(o) -> str:
    """What a size argument is: the outermost extent of a tensor (or its element count), an
    inner one, or unknown."""
    if o is None:
        return UNKNOWN
    if o.kind is OriginKind.NUMEL:
        return ROWS
    if o.kind is OriginKind.SHAPE and o.dim is not None:
        if o.dim == 0 or (o.ndim is not None and o.dim == -o.ndim):
            return ROWS
        return INNER
    if o.kind is OriginKind.PRODUCT:
        return ROWS if any(_shape_extent(f) == ROWS for f in o.factors) else UNKNOWN
    if o.kind is OriginKind.LITERAL:
        return INNER
    return UNKNOWN


def _grid_extent(o) -> str:
    if o is None:
        return UNKNOWN
    if o.kind is OriginKind.LITERAL:
        return INNER  # a grid axis bounded by a small constant
    got = _shape_extent(o)
    if got != UNKNOWN:
        return got
    text = o.text.replace(" ", "")
    if "cdiv(" in text or "//" in text:
        return ROWS if any(k in text for k in (".shape[0]", ".size(0)", ".numel()", "num_tokens", "n_rows",
                                                "M,", "M)", "(M")) else UNKNOWN
    return UNKNOWN


def _index_extent(term, position: int, access, launches) -> str:
    """Whether a term's index ranges over rows (an unbounded outer dimension) or inside one."""
    src = term.index.sources
    if IndexSource.LOADED in src:
        return ROWS
    if IndexSource.PROGRAM_ID not in src:
        return INNER
    i = next((k for k, t in enumerate(access.terms) if t is term), -1)
    bounds = set(term.index.bounds) | set(access.covering_bounds(i))
    votes = set()
    for bl in launches:
        for b in bounds:
            votes.add(_shape_extent(bl.bound.get(b)))
        for axis in term.index.pid_axes:
            if 0 <= axis < len(bl.launch.grid):
                votes.add(_grid_extent(bl.launch.grid[axis]))
    votes.discard(UNKNOWN)
    # A program id steps rows when it steps the first dimension its address names (`x_ptr + row *
    # stride`, `A + offs_m[:, None] * stride_am + ...`) and no launch ties it to an inner extent.
    # A launch that ties it to a tensor's first extent is not enough alone: a feature-major
    # `x[dim, tokens]` addressed `x + tok * stride_tok + feat * stride_dim` steps its features second.
    if position != 0 or INNER in votes:
        return INNER
    if ROWS in votes or IndexSource.ARANGE in src:
        return ROWS
    return ROWS if 0 in term.index.pid_axes else INNER


def _int64_source(term, launches) -> bool:
    """The index is loaded from a tensor every launch shows to be int64."""
    ptrs = term.index.loaded_from
    if not ptrs or not launches:
        return False
    for bl in launches:
        for p in ptrs:
            o = bl.bound.get(p)
            if o is None or o.dtype != "int64":
                return False
    return True


def _boundary_tables(kernel) -> set[str]:
    """Pointers read at ``i`` and ``i + 1`` (``cu_seqlens``, ``query_start_loc``): cumulative
    offsets whose values are token rows of a whole packed batch."""
    seen: dict[str, set] = defaultdict(set)
    for a in kernel.accesses:
        if a.op != "load" or a.pointer is None:
            continue
        texts = tuple(sorted(t.text for t in a.terms))
        seen[a.pointer].add(texts)
    out = set()
    for p, forms in seen.items():
        for f in forms:
            if tuple(sorted(f + ("1",))) in forms:
                out.add(p)
                break
    return out


def _wide_evidence(kernel, pointer: str, term, boundaries: set[str]) -> str | None:
    """Why the rows this product steps can number enough to wrap, when the kernel shows it:
    the index is a token offset of a packed batch (loaded from a cumulative-offsets table), the
    kernel walks each row in a loop of column tiles (rows of any width: a vocabulary, a general
    op's last dimension), or the tensor has a tiled sequence axis under the stepped one
    (batch x sequence)."""
    if set(term.index.loaded_from) & boundaries:
        return "its index is a token offset read from a cumulative-offsets table: the rows of a whole packed batch"
    for a in kernel.accesses:
        if a.pointer != pointer:
            continue
        strides = {q for q in term.step.params if (k := kernel.param(q)) is not None and k.kind.value == "stride"}
        if term in a.terms and strides and any(set(t.index.loaded_from) & boundaries and strides & set(t.step.params)
                                               for t in a.terms if t is not term):
            return "it steps the rows of a packed batch that a cumulative-offsets table indexes"
        for t in a.terms:
            src = t.index.sources
            if t is not term and t.step.kind is StepKind.UNIT and IndexSource.LOOP in src and IndexSource.ARANGE in src:
                return "the kernel walks each row in a loop of column tiles, so a row can be as wide as a vocabulary"
        stepped = [t for t in a.terms if t is not term and t.step.kind in (StepKind.STRIDE, StepKind.SIZE)]
        tiled = [t for t in stepped if IndexSource.ARANGE in t.index.sources or IndexSource.LOOP in t.index.sources
                 or len(t.step.params) > 1]
        if len(stepped) >= 2 and tiled and term.index.sources & {IndexSource.PROGRAM_ID}:
            return "the tensor has a tiled sequence axis under the one it steps: batch x sequence elements"
    return None


def _example(step: str) -> str:
    return f"e.g. at row 524,288 when `{step}` is 4,096"


def _indexed_within_rows(kernel) -> set[str]:
    """Pointers some address of which also indexes inside a row (a unit-step or second stepped
    term beside the row's): tensors of two or more dimensions. A pointer only ever addressed by
    one row index is a vector (a per-row scale, a length, a slot table): its row index times its
    stride stays below its element count, which a row count bounds."""
    out = set()
    for access in address_accesses(kernel):
        if len(access.terms) >= 2:
            out.add(access.pointer)
    return out


def check(tree, options):
    for model, kernel in judged_kernels(tree):
        launches = tree.launches_of(model, kernel)
        groups = defaultdict(list)
        wide = _indexed_within_rows(kernel)
        for access in address_accesses(kernel):
            if access.pointer not in wide:
                continue
            if access.via_block or access.byte_record:
                continue
            position = 0
            for term in access.terms:
                if term.step.kind not in (StepKind.STRIDE, StepKind.SIZE):
                    continue
                here, position = position, position + 1
                if term.is_int64 or term.index.is_int64 or any(f.int64 for f in term.factors):
                    continue
                if _index_extent(term, here, access, launches) != ROWS:
                    continue
                if _int64_source(term, launches):
                    continue
                groups[(access.pointer, term.index.text)].append(term)
        training = None
        boundaries = _boundary_tables(kernel)
        for (pointer, _), terms in groups.items():
            first = min(terms, key=lambda t: (t.span.line, t.span.column))
            origin = "a loaded value" if IndexSource.LOADED in first.index.sources else "a program id"
            related = tuple(sorted({t.span for t in terms if t.span != first.span}, key=lambda s: (s.line, s.column)))
            why = _wide_evidence(kernel, pointer, first, boundaries)
            if why is None:
                if training is None:
                    training = bool(launches) and any(runs_in_training(tree, bl) for bl in launches)
                if training:
                    why = "the kernel runs in training (an autograd Function launches it), where a batch holds hundreds of thousands of tokens"
            yield make_finding(
                CODE, model.path, first.span, related=[(model.path, s) for s in related],
                group=f"{kernel.name}:{pointer}:{first.index.text}",
                product=first.text, pointer=pointer, step=first.step.text, origin=origin,
                example=_example(first.step.text),
                evidence=f" ({why})" if why else "",
            )
