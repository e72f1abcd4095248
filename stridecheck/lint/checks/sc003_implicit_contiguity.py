"""SC003 implicit-contiguity: a pointer stepped by a size and by no stride parameter, launched with a
tensor that is not provably contiguous.

Silent when every resolved launch passes a provably contiguous tensor (``ArgOrigin.contiguous``, or
``contiguous_in_module``: what the module's callers, a contiguity decorator or the autograd
``forward`` guarantee). Default tier: a launch passes a strided view the launcher makes itself
(``padded[:, :vocab]``, ``x.t()``). Lower tier (``preview=True``, severity info, "assumes packed
inner dimensions"): a launch passes a tensor of unknown layout (a caller's argument), or no
launch is resolved. Measured on the corpus, the unknown-layout form was mostly made contiguous
further up (another module, a deeper caller), so it is not an error-level finding.
"""

from __future__ import annotations

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._launch_common import helper_names, tensor_word
from stridecheck.lint.model import OriginKind, ParamKind, StepKind
from stridecheck.lint.stride_pairs import stride_named


def _size_steps(kernel, pointer, stride_names=()):
    """Terms (and descriptor strides) of ``pointer`` stepped by a size; None if any term is a stride."""
    found = []
    for acc in kernel.accesses:
        if acc.pointer != pointer or acc.byte_record:
            continue
        for term in acc.terms:
            if term.step.kind is StepKind.STRIDE:
                return None
            if term.step.kind is StepKind.SIZE and not any(stride_named(p, stride_names) for p in term.step.params):
                found.append((term.span, term.text, term.step.text))
        if acc.descriptor_strides:
            strides = list(acc.descriptor_strides)
            for i, text in enumerate(strides):
                p = kernel.param(text)
                if p is not None and p.kind is ParamKind.STRIDE:
                    return None
            for i, text in enumerate(strides):
                p = kernel.param(text)
                if p is not None and p.kind is ParamKind.SIZE:
                    found.append((acc.span, f"strides=[{', '.join(strides)}]", text))
                elif p is None and i < len(strides) - 1 and any(
                    (q := kernel.param(w)) is not None and q.kind is ParamKind.SIZE
                    for w in text.replace("*", " ").split()
                ):
                    found.append((acc.span, f"strides=[{', '.join(strides)}]", text))
    return found


def check(tree, options):
    helpers = helper_names(tree.models)
    reported = set()
    for model, kernel in tree.kernels():
        if (model.path, kernel.name) in helpers:
            continue
        launches = tree.launches_of(model, kernel)
        for p in kernel.params:
            if p.kind is not ParamKind.POINTER:
                continue
            steps = _size_steps(kernel, p.name, options.extra_stride_names)
            if not steps:
                continue
            passed = [bl.bound.get(p.name) for bl in launches]
            passed = [o for o in passed if o is not None]
            if passed:
                loose = [o for o in passed if o.kind in (OriginKind.TENSOR, OriginKind.OTHER)
                         and not (o.contiguous or o.contiguous_in_module) and o.text != "None"]
                if not loose:
                    continue
                views = [o for o in loose if o.strided_view]
                # Default tier: the launcher itself makes a strided view (`padded[:, :vocab]`, `x.t()`)
                # and hands it over. A tensor of unknown layout (a caller's argument nobody checks)
                # is the lower tier: on real code most of those are made contiguous further up.
                preview = not views
                tensor = (views or loose)[0].text
            else:
                if launches:
                    continue  # launched, but this argument could not be placed (*args): unknown
                preview, tensor = True, tensor_word(p.name)
            for span, product, size in steps:
                key = (model.path, span)
                if key in reported:
                    continue
                reported.add(key)
                yield make_finding(
                    "SC003", model.path, span, preview=preview,
                    product=product, pointer=p.name, size=size, tensor=tensor,
                    detail=(f"a launch passes `{tensor}`, a strided view" if not preview
                            else f"assumes packed inner dimensions (a launch passes `{tensor}`, whose layout "
                            "nothing in the launcher establishes)" if passed
                            else "assumes packed inner dimensions"),
                )
