"""SC007 unchecked-width: a kernel stores through a pointer under a mask bounded by a size taken, at
the launch, from a different tensor, and the launcher neither checks the written tensor's extent
against it, nor allocated the written tensor, nor is wrapped by ``@stride_guard``. Default tier
when the written tensor comes unchecked from an entry point of the package's users or is a view
made on the way (:mod:`stridecheck.lint.provenance`); preview otherwise. A mask bound
counts only when the index it bounds reaches the stored address (not a read index, not a slot
loaded at it) in a term that no bound by the written tensor's own extent holds. Reported at the
line where the launch begins, once per launch.

Also a store at a column loaded from another tensor (an id table: `row * stride + tl.load(ids +
j)`), which no mask or comparison bounds: the written tensor is as wide as the largest id only by
a contract nothing checks. Tiered as above, the id table standing for the bound's tensor."""

from __future__ import annotations

import re

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.model import IndexSource, OriginKind, ParamKind, StepKind
from stridecheck.lint.provenance import width_of


def _fam(o):
    return o.family or o.tensor


def check(tree, options):
    for bl in tree.bound_launches():
        if bl.launch.guarded:
            continue
        hit = None
        for acc in bl.kernel.accesses:
            if not acc.writes or acc.pointer is None:
                continue
            written = bl.bound.get(acc.pointer)
            if written is None or written.kind is not OriginKind.TENSOR or not written.tensor or written.fresh:
                continue
            if "*" in written.vetted:
                continue  # allocated or checked on every path
            for size in acc.mask_bounds:
                p = bl.kernel.param(size)
                if p is None or p.kind is ParamKind.POINTER:
                    continue
                o = bl.bound.get(size)
                if o is None or o.kind is not OriginKind.SHAPE or not o.tensor:
                    continue
                if _own(o, written):
                    continue  # bounded by its own extent (or by a tensor it is another name of)
                if _checked(bl.launch.width_checks, written, o):
                    continue
                if not _bounds_written_address(bl, acc, size, written):
                    continue
                hit = (written, o, size, acc)
                break
            if hit:
                break
        if hit is None:
            yield from _loaded_column(tree, bl)
            continue
        written, o, size, acc = hit
        # Where the written tensor comes from decides the tier: handed in unchecked by an entry
        # point of the package's users, or allocated by a caller from other extents, is the
        # default's; allocated by every caller from the bound's tensor, or of an origin the
        # analysis does not follow (a helper's return, callers out of sight), preview.
        layout = width_of(written, o, bl, tree)
        yield make_finding(
            "SC007", bl.module.path, bl.launch.span, group=f"{bl.launch.launcher}:{bl.kernel.name}:{acc.pointer}",
            preview=not layout.default_tier, evidence=f" ({layout.why})" if layout.why else "",
            kernel=bl.kernel.name, pointer=acc.pointer, tensor=written.text, size=size,
            source=o.text if o.text != size else (f"{o.tensor}.shape[{o.dim}]" if o.dim is not None else f"{o.tensor}.shape[...]"),
            other=o.tensor,
        )


_LOAD_CALL = re.compile(r"^[\w.]*load\(")


def _loaded_column(tree, bl):
    """A store whose innermost (unit-step) term is a value loaded from another pointer, beside a
    row stepped by a stride, with no bound on it in the mask or the index (`ids < n_vocab`): the
    column is an id from a table, and only a contract keeps it inside the row. Silent where the
    launcher compares the table with anything (`assert ids.max() < v`, a shape check)."""
    for acc in bl.kernel.accesses:
        if not acc.writes or acc.pointer is None or acc.via_block or acc.mask_bound_reach is None:
            continue
        written = bl.bound.get(acc.pointer)
        if written is None or written.kind is not OriginKind.TENSOR or not written.tensor:
            continue
        if not any(t.step.kind is StepKind.STRIDE and IndexSource.LOADED not in t.index.sources for t in acc.terms):
            continue
        for i, t in enumerate(acc.terms):
            idx = t.index
            if t.step.kind is not StepKind.UNIT or idx.sources != {IndexSource.LOADED} or idx.bounds \
                    or acc.covering_bounds(i) or len(idx.loaded_from) != 1 or idx.loaded_from[0] == acc.pointer:
                continue
            if not _LOAD_CALL.match(idx.text) or _closing(idx.text) != len(idx.text) - 1:
                continue  # the loaded value is combined with something (`% n`, `>> 5`, a clamp)
            table = bl.bound.get(idx.loaded_from[0])
            if table is None or table.kind is not OriginKind.TENSOR or not table.tensor or _fam(table) == _fam(written):
                continue
            names = {table.tensor, _fam(table)}
            if any(c.tensor in names or any(n in c.against for n in names) for c in bl.launch.width_checks):
                continue
            layout = width_of(written, table, bl, tree)
            yield make_finding(
                "SC007", bl.module.path, bl.launch.span, template="loaded_column",
                group=f"{bl.launch.launcher}:{bl.kernel.name}:{acc.pointer}:loaded",
                preview=not layout.default_tier, evidence=f" ({layout.why})" if layout.why else "",
                kernel=bl.kernel.name, pointer=acc.pointer, tensor=written.text, table=table.text,
                column=t.text if len(t.text) <= 60 else t.text[:57] + "...",
            )
            return


def _closing(text: str) -> int:
    """Where the parenthesis opened first in ``text`` closes (-1: never)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _own(o, written) -> bool:
    return _fam(o) == _fam(written) or o.tensor == written.tensor or bool({o.tensor, _fam(o)} & set(written.vetted))


def _bounds_written_address(bl, acc, size, written) -> bool:
    """Whether the index that ``size`` bounds reaches the stored address, in a term that no bound
    by the written tensor's own extent already holds in (`pos < pool_width`). A bound on a read
    index, or on one whose value reaches the address only through a load (a slot), does not."""
    reached = acc.reached_terms(size)
    if reached is None:
        return True
    for t in reached:
        if t < 0:
            return True
        own = False
        for q in acc.covering_bounds(t):
            oq = bl.bound.get(q)
            p = bl.kernel.param(q)
            if p is not None and p.kind is not ParamKind.POINTER and oq is not None \
                    and oq.kind is OriginKind.SHAPE and oq.tensor and _own(oq, written):
                own = True
                break
        if not own:
            return True
    return False


def _checked(checks, written, size_origin) -> bool:
    names = {written.tensor, _fam(written)}
    return any(c.tensor in names for c in checks) or any(
        c.tensor == size_origin.tensor and written.tensor and written.tensor in c.against for c in checks
    )
