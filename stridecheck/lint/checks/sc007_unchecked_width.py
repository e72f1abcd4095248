"""SC007 unchecked-width: a kernel stores through a pointer under a mask bounded by a size taken, at
the launch, from a different tensor, and the launcher neither checks the written tensor's extent
against it, nor allocated the written tensor, nor is wrapped by ``@stride_guard``. Default tier
when the written tensor comes unchecked from an entry point of the package's users or is a view
made on the way (:mod:`stridecheck.lint.provenance`); preview otherwise. A mask bound
counts only when the index it bounds reaches the stored address (not a read index, not a slot
loaded at it) in a term that no bound by the written tensor's own extent holds. Reported at the
line where the launch begins, once per launch."""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.model import OriginKind, ParamKind
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
