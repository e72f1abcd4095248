"""SC006 int32-offset: a program id or a loaded value times a stride or size, in 32-bit arithmetic.

Triton computes ``tl.program_id`` and integer loads of int32 tensors in 32 bits, and an integer
kernel argument below 2**31 is specialised to int32, so ``row * row_stride`` wraps once it passes
2**31 - 1 (e.g. row 524,288 of a 4,096-wide tensor). Fires on a term whose step is a stride or a
size parameter and whose index comes from a program id or a load, when no factor of the product
was promoted with ``.to(tl.int64)``. Tiling by a constexpr block size (``pid * BLOCK``) has no
stride or size step and is never reported.
"""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._kernel_side import address_accesses, judged_kernels
from stridecheck.lint.model import IndexSource, StepKind

CODE = "SC006"
_WIDE_SOURCES = frozenset({IndexSource.PROGRAM_ID, IndexSource.LOADED})


def check(tree, options):
    seen = set()
    for model, kernel in judged_kernels(tree):
        for access in address_accesses(kernel):
            for term in access.terms:
                if term.step.kind not in (StepKind.STRIDE, StepKind.SIZE):
                    continue
                if term.is_int64 or term.index.is_int64:
                    continue
                if not (term.index.sources & _WIDE_SOURCES):
                    continue
                key = (model.path, term.span)
                if key in seen:
                    continue
                seen.add(key)
                origin = "a program id" if IndexSource.PROGRAM_ID in term.index.sources else "a loaded value"
                yield make_finding(
                    CODE, model.path, term.span,
                    product=term.text, pointer=access.pointer, step=term.step.text, origin=origin,
                )
