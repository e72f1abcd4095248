"""SC003 implicit-contiguity: a pointer stepped by a size and by no stride parameter, launched with a
tensor that is not provably contiguous.

Silent when every resolved launch passes a provably contiguous tensor (``ArgOrigin.contiguous``, or
``contiguous_in_module``: what the module's callers, a contiguity decorator or the autograd
``forward`` guarantee). Default tier: a launch passes a strided view the launcher makes itself
(``padded[:, :vocab]``, ``x.t()``). Lower tier (``preview=True``, severity info, "assumes packed
inner dimensions"): a launch passes a tensor of unknown layout (a caller's argument), or no
launch is resolved. Measured on the corpus, the unknown-layout form was mostly made contiguous
further up (another module, a deeper caller), so it is not an error-level finding. Flat scratch
of the kernel's own (stored before it is loaded, see ``_own_scratch``) is preview too unless a
strided view reaches it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._kernel_side import stride_owner
from stridecheck.lint.checks._launch_common import helper_names, tensor_word
from stridecheck.lint.model import IndexSource, OriginKind, ParamKind, StepKind, product_key, value_key
from stridecheck.lint.provenance import LIVE, PACKED, combine, kernel_layout, layout_of
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
            if term.index.text == "1":
                continue  # `ptr + N`: an offset by a size, not a dimension stepped by one
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


def _steps_are_strides(kernel, bl, pointer: str, steps) -> bool:
    """Each size that steps ``pointer`` is, at launch ``bl``, the value of a stride of the tensor
    the pointer receives, as a check or allocation of the launcher fixes it (``ArgOrigin.known_strides``)."""
    o = bl.bound.get(pointer)
    if o is None or o.kind is not OriginKind.TENSOR or not o.known_strides:
        return False
    # Any dimension but the innermost, which the kernel's unit step takes for 1.
    same = _equal_extents(bl.launch.width_checks)
    known = {product_key([k], same) for d, k in o.known_strides if d != -1}
    for _, _, size in steps:
        keys = []
        for q in size.replace("*", " ").split():
            a = bl.bound.get(q)
            k = value_key(a) if a is not None else (q if q.isdigit() else None)
            if k is None:
                return False
            keys.append(k)
        if product_key(keys, same) not in known:
            return False
    return True


def _unit_vector(bl, pointer: str) -> bool:
    """At launch ``bl`` the tensor ``pointer`` receives has a unit stride in its first dimension by
    a check of the launcher (``assert t.stride(0) == 1``), or in its last one where the launcher
    shows it 1-D. Called for a pointer the kernel steps by sizes only, never by a stride: the
    kernel reads it as one flat run of elements, and a vector whose only stride is 1 is packed.
    (A 2-D tensor with ``stride(0) == 1`` is walked along its first dimension: each step by a
    size stays a position in that unit-stride dimension.)"""
    o = bl.bound.get(pointer)
    if o is None or o.kind is not OriginKind.TENSOR:
        return False
    return 0 in o.unit_strides or (o.ndim == 1 and -1 in o.unit_strides)


def _packed_where_used(kernel, bl, pointer: str) -> bool:
    """Every access of ``pointer`` sits under a kernel branch (``if BETA != 0.0:``) whose holding,
    at launch ``bl``, means the launcher made the tensor contiguous (``assert ref.is_contiguous()
    if beta != 0.0 else True``, ``BETA=beta``): wherever the kernel touches it, it is packed."""
    o = bl.bound.get(pointer)
    if o is None or o.kind is not OriginKind.TENSOR or not o.contiguous_when:
        return False
    accesses = [a for a in kernel.accesses if a.pointer == pointer]
    return bool(accesses) and all(
        any(o.contiguous_under(c, bl.bound.get(c.param)) for c in a.conditions) for a in accesses)


_EXTENT = re.compile(r"([A-Za-z_]\w*)\s*(?:\.size\(\s*(\d+)\s*\)|\.shape\[\s*(\d+)\s*\])")


def _equal_extents(checks) -> dict[str, str]:
    """Extents a dominating check shows equal (`assert a.size(1) == b.shape[2]`), each mapped to
    one representative value key of its class."""
    parent: dict[str, str] = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for c in checks:
        m = _EXTENT.fullmatch(c.against.strip()) if c.dim is not None and c.dim >= 0 else None
        if m is None:
            continue
        a, b = find(f"shape:{c.tensor}:{c.dim}"), find(f"shape:{m.group(1)}:{m.group(2) or m.group(3)}")
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {x: find(x) for x in parent}


def _own_scratch(tree, kernel, pointer: str, launches) -> bool:
    """Whether the kernel keeps ``pointer`` as scratch of its own: it stores to it before it loads
    from it (every store above every load, no atomic), every access addresses it the same flat way
    (the same size steps: what a program stores at ``pid * BLOCK + i`` another reads back at
    ``cta * BLOCK + i``), no stride of it is passed, and no other launch of the launcher hands the
    tensor on (to a kernel that may read it with strides). Its flat offsets then agree with each
    other whatever its strides: the packing the steps assume is not what the data is read by.
    (A caller out of view may still read the tensor after the launch, and a strided view of a
    wider tensor would be overrun: the finding stays, in the preview tier.)"""
    accs = [a for a in kernel.accesses if a.pointer == pointer and not a.byte_record]
    stores = [a for a in accs if a.op == "store"]
    loads = [a for a in accs if a.op == "load"]
    if not stores or not loads or len(stores) + len(loads) != len(accs):
        return False
    if max((a.span.line, a.span.column) for a in stores) >= min((a.span.line, a.span.column) for a in loads):
        return False
    scheme = {tuple(sorted(t.step.text for t in a.terms if t.step.kind is not StepKind.UNIT)) for a in accs}
    if len(scheme) != 1 or not next(iter(scheme)):
        return False
    if any(q.kind is ParamKind.STRIDE and stride_owner(q.name, kernel) == pointer for q in kernel.params):
        return False
    if not launches:
        return False
    for bl in launches:
        o = bl.bound.get(pointer)
        if o is None or o.kind is not OriginKind.TENSOR or not o.tensor:
            return False
        if any(a.kind is OriginKind.STRIDE and a.tensor == o.tensor for a in bl.bound.values()):
            return False
        for other in tree.bound_launches():
            if other is bl or other.module is not bl.module or other.launch.launcher != bl.launch.launcher:
                continue
            if any(a.kind is OriginKind.TENSOR and a.tensor == o.tensor for a in other.bound.values()):
                return False
    return True


def _advice(kernel, pointer: str, tensor: str, written: bool, layout) -> str:
    """Safe advice: `.contiguous()` returns a copy, so never for a tensor the kernel writes (the
    writes would go to the copy) nor for one already contiguous."""
    if written:
        return (f"pass and use `{tensor}`'s strides, or check its layout before the launch "
                f"(`assert {tensor}.is_contiguous()`, or `@stride_guard`); a copy would take the kernel's writes")
    return (f"pass and use `{tensor}`'s strides, or make it contiguous in the launcher "
            f"(`{tensor} = {tensor}.contiguous()`) or check it (`@stride_guard`)")


def _implicit_unit_stride(model, kernel, pointer: str, launches, reported):
    """The innermost index walks elements with an implicit stride of 1 (`a_ptr + t * stride_t + h`)
    while a launch passes a view whose innermost stride is not 1 (`b, a = ba.view(t, h, 2).unbind(-1)`,
    `x.t()`, `x[..., 0]`): the kernel reads every other element's neighbour. Only where the
    launch side shows the view (live): an inner stride of 1 is what almost every caller passes."""
    # A view whose strides the launcher fixes with a 1 in some dimension (`torch.empty(g, m).t()`:
    # (1, m)) has a dimension the unit step walks rightly: which one the kernel walks, the launch
    # does not show.
    views = [o for bl in launches if (o := bl.bound.get(pointer)) is not None and o.inner_strided
             and not any(v == "1" for _, v in o.known_strides)]
    if not views:
        return
    # Reported at the access (the walking index is often named far from it: `h = tl.arange(...)`).
    found = sorted({(a.span, t.text) for a in kernel.accesses if a.pointer == pointer and not a.byte_record
                    and not a.via_block for t in a.terms
                    if t.step.kind is StepKind.UNIT and IndexSource.ARANGE in t.index.sources},
                   key=lambda x: (x[0].line, x[0].column))
    if not found:
        return
    span, text = found[0]
    if (model.path, span, pointer) in reported:
        return
    reported.update((model.path, sp, pointer) for sp, _ in found)
    o = views[0]
    yield make_finding(
        "SC003", model.path, span, group=f"{kernel.name}:{pointer}:unit", template="implicit_unit",
        related=[(model.path, sp) for sp, _ in found[1:] if sp != span],
        product=text, pointer=pointer, size="1", tensor=o.text,
        detail=f"a launch passes `{o.text}`, a view whose innermost stride is not 1",
        advice=f"pass and use `{o.text}`'s innermost stride, or pass a contiguous tensor "
               f"(`{o.text}.contiguous()` where the kernel only reads it)",
    )


_FLAT_SOURCES = frozenset({IndexSource.PROGRAM_ID, IndexSource.ARANGE, IndexSource.LOOP, IndexSource.SCALAR_ARG,
                           IndexSource.CONSTEXPR})


def _flat_write(tree, model, kernel, pointer: str, launches, reported):
    """A flat kernel (every address of ``pointer`` one run of elements: ``ptr + offs``, no size
    or stride step) that stores into a tensor whose layout the launches leave to a caller: an
    ``out=`` the caller supplies, or a strided view the launcher passes. The run is the tensor's
    elements only while they are packed (``big[::2]`` as ``out`` is written into the gaps and past
    its end). Default tier only, where the analysis shows the layout arriving unchecked from a
    public entry point or a strided view reaching the launch: flat kernels over tensors of unknown
    layout are mostly fed contiguous tensors further up, and their reads are not judged here."""
    if not launches:
        return
    accesses = [a for a in kernel.accesses if a.pointer == pointer and not a.byte_record and not a.via_block]
    stores = [a for a in accesses if a.writes]
    # A run of positions: program ids, aranges, loop counters, scalars; an offset with a term built
    # from loaded values (strides read from a tensor, a scattered index) is not a flat walk.
    flat = sorted({(a.span, t.text) for a in stores for t in a.terms
                   if t.step.kind is StepKind.UNIT and IndexSource.ARANGE in t.index.sources
                   and all(u.step.kind is StepKind.UNIT and u.index.sources <= _FLAT_SOURCES for u in a.terms)},
                  key=lambda x: (x[0].line, x[0].column))
    if not flat or (model.path, flat[0][0], pointer) in reported:
        return
    if any(_packed_where_used(kernel, bl, pointer) for bl in launches):
        return
    if all(_unit_vector(bl, pointer) for bl in launches):
        return
    # A path on which the tensor is the launcher's parameter unchanged (`if out is None: out =
    # torch.empty_like(x)`) brings whatever the callers pass.
    # `torch.empty_like(t)` is dense whatever `t` is (t's strides where t is dense, else packed):
    # its flat run is its elements.
    layouts = []
    for bl in launches:
        o = bl.bound.get(pointer)
        if o is not None and o.param is None and o.kept_param:
            o = replace(o, param=o.kept_param, like_of=None)
        elif o is not None and o.like_of and o.param is None:
            continue
        layouts.append(layout_of(o, bl, tree))
    if not layouts:
        return
    layout = combine(layouts)
    if layout.kind == PACKED or not layout.default_tier:
        return
    passed = [o for o in (bl.bound.get(pointer) for bl in launches) if o is not None and o.kind is OriginKind.TENSOR]
    if not passed:
        return
    reported.update((model.path, sp, pointer) for sp, _ in flat)
    span, text = flat[0]
    tensor = passed[0].text
    yield make_finding(
        "SC003", model.path, span, group=f"{kernel.name}:{pointer}:flat", template="flat_write",
        related=[(model.path, sp) for sp, _ in flat[1:] if sp != span],
        product=text, pointer=pointer, size="1", tensor=tensor, detail=layout.why,
        advice=_advice(kernel, pointer, tensor, True, layout),
    )


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
                # No size step to report: the innermost dimension's implicit stride of 1 may be
                # the assumption a launch breaks, or a flat store the tensor's layout (one
                # finding per pointer either way).
                found = list(_implicit_unit_stride(model, kernel, p.name, launches, reported))
                if not found and steps is not None:
                    found = list(_flat_write(tree, model, kernel, p.name, launches, reported))
                yield from found
                continue
            if launches and all(_packed_where_used(kernel, bl, p.name) for bl in launches):
                continue
            passed = [o for o in (bl.bound.get(p.name) for bl in launches) if o is not None]
            if launches and not passed:
                continue  # launched, but this argument could not be placed (*args): unknown
            sizes = sorted({q for _, _, size in steps for q in size.replace("*", " ").split()
                            if (k := kernel.param(q)) is not None and k.kind is ParamKind.SIZE})
            layout = kernel_layout(tree, launches, p.name)
            if layout.kind == PACKED:
                continue
            if launches and all(_steps_are_strides(kernel, bl, p.name, steps) for bl in launches):
                continue  # `assert x.stride(0) == n_cols`, `empty_strided(...)`: each size is a stride
            if launches and all(_unit_vector(bl, p.name) for bl in launches):
                continue  # `assert ids.stride(0) == 1`: a unit-stride vector, packed
            preview = not layout.default_tier
            if not preview and layout.kind != LIVE and _own_scratch(tree, kernel, p.name, launches):
                preview = True  # flat scratch of the kernel's own: nothing shows the packing is read
            written = any(a.writes for a in kernel.accesses if a.pointer == p.name)
            tensor = next((o.text for o in passed if o.kind is OriginKind.TENSOR), tensor_word(p.name))
            # One finding per pointer (the packing it assumes), at its first size step; the
            # other products that rely on it are related locations.
            # Ties at one place broken by text: the same finding whatever the hash seed.
            steps = sorted({st for st in steps if (model.path, st[0]) not in reported},
                           key=lambda st: (st[0].line, st[0].column, st[0].end_line, st[0].end_column, st[1], st[2]))
            if not steps:
                continue
            reported.update((model.path, st[0]) for st in steps)
            span, product, size = steps[0]
            yield make_finding(
                "SC003", model.path, span, preview=preview,
                related=[(model.path, st[0]) for st in steps[1:] if st[0] != span],
                group=f"{kernel.name}:{p.name}",
                product=product, pointer=p.name, size=size, tensor=tensor,
                detail=layout.why if layout.default_tier else f"assumes packed inner dimensions ({layout.why})",
                advice=_advice(kernel, p.name, tensor, written, layout),
            )
