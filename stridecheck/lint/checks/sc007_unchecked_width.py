"""SC007 unchecked-width: a kernel stores through a pointer under a mask bounded by a size taken, at
the launch, from a different tensor, and the launcher neither checks the written tensor's extent
against it, nor allocated the written tensor, nor is wrapped by ``@stride_guard``. Reported at the
line where the launch begins, once per launch."""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.model import OriginKind, ParamKind


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
                if _fam(o) == _fam(written) or o.tensor == written.tensor or {o.tensor, _fam(o)} & set(written.vetted):
                    continue  # bounded by its own extent (or by a tensor it is another name of)
                if _checked(bl.launch.width_checks, written, o):
                    continue
                hit = (written, o, size, acc)
                break
            if hit:
                break
        if hit is None:
            continue
        written, o, size, acc = hit
        yield make_finding(
            "SC007", bl.module.path, bl.launch.span,
            kernel=bl.kernel.name, pointer=acc.pointer, tensor=written.text, size=size,
            source=o.text if o.text != size else (f"{o.tensor}.shape[{o.dim}]" if o.dim is not None else f"{o.tensor}.shape[...]"),
            other=o.tensor,
        )


def _checked(checks, written, size_origin) -> bool:
    names = {written.tensor, _fam(written)}
    return any(c.tensor in names for c in checks) or any(
        c.tensor == size_origin.tensor and written.tensor and written.tensor in c.against for c in checks
    )
