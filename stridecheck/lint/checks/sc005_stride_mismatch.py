"""SC005 stride-mismatch: a stride of one tensor (or dimension) used for another.

In the kernel: an address of pointer P stepped by a stride parameter that belongs, by name, to
another pointer Q, while P has stride parameters of its own (reported at the product). Silent
when every resolved launch feeds that parameter the stride of the tensor P receives (names lie).

At a launch: (a) a stride parameter owned by pointer P receives ``t.stride(i)`` of a tensor t other
than the one P receives (and not a view of it, nor a ``*_like`` allocation of it, nor both provably contiguous,
nor shown equal in that dimension by a check: ``assert a.stride() == b.stride()``, nor, for two
parameters of the launcher, two views made alike from one tensor by every caller); (b) it receives
``t.stride(i)`` of the right tensor, but the index it steps is bounded (mask or grid) by
``t.shape[j]`` with j != i. Reported at the argument; swapped pairs get an unsafe fix.
"""

from __future__ import annotations

from dataclasses import replace

from stridecheck.lint.catalogue import make_finding
from stridecheck.lint.checks._kernel_side import judged_kernels
from stridecheck.lint.checks._launch_common import shares_stride
from stridecheck.lint.provenance import PACKED, callers_share_strides, kernel_layout, layout_of
from stridecheck.lint.fixes import swap_fix
from stridecheck.lint.model import IndexSource, OriginKind, ParamKind, StepKind
from stridecheck.lint.stride_pairs import (
    expected_dims,
    flattened_dims,
    own_strides,
    pair_by_name,
    pair_strides,
    same_dim,
)


def _fam(o):
    return o.family or o.tensor


def _in_kernel(tree, reported):
    """One finding per (kernel, pointer, tensor whose strides it borrows): the first term, with
    the kernel's other terms of the same borrowing as related locations."""
    for model, kernel in judged_kernels(tree):
        named = pair_by_name(kernel)
        mine = own_strides(kernel, named)
        launches = tree.launches_of(model, kernel)
        groups: dict[tuple, list] = {}
        for acc in kernel.accesses:
            p = acc.pointer
            if p is None:
                continue
            for term in acc.terms:
                if term.step.kind is not StepKind.STRIDE:
                    continue
                for s in term.step.params:
                    q = kernel.param(s)
                    if q is None or q.kind is not ParamKind.STRIDE or s in mine.get(p, ()):
                        continue
                    verdict = _judge(tree, launches, s, p, named, mine)
                    if verdict is None:
                        continue
                    groups.setdefault((p, verdict[1]), []).append((term, s, verdict))
        for (p, owner), items in groups.items():
            items.sort(key=lambda it: (it[0].span.line, it[0].span.column))
            term, s, (preview, _, why) = items[0]
            key = (model.path, term.span, s)
            if key in reported:
                continue
            reported.add(key)
            reported.update((model.path, t.span, x) for t, x, _ in items)
            # The kernel is at fault for these strides: its launches passing them are not.
            reported.update(("kernel-stride", id(kernel), x) for _, x, _ in items)
            own = mine.get(p)
            strides = sorted({x for _, x, _ in items})
            related = sorted({t.span for t, _, _ in items if t.span != term.span}, key=lambda sp: (sp.line, sp.column))
            yield make_finding(
                "SC005", model.path, term.span, preview=all(v[0] for _, _, v in items),
                related=[(model.path, sp) for sp in related], group=f"{kernel.name}:{p}:{owner}",
                product=term.text, pointer=p, stride=s, owner=owner,
                more=f" (and {', '.join(f'`{x}`' for x in strides if x != s)})" if len(strides) > 1 else "",
                advice=(f"use `{p}`'s own stride ({', '.join(f'`{x}`' for x in own)})" if own
                        else f"pass and use `{p}`'s own strides"),
                evidence=f" ({why})" if why else "",
            )


def _dropped_stride(tree, reported):
    """One index steps a pointer by a stride parameter in one access and by an implicit 1 in
    another (`X + cols * x_stride1`, then `X + cols`): the stride is honoured once and dropped once,
    so a tensor whose stride is not 1 there is read right by one access and wrong by the other.
    Reported at the access that drops it. Silent where every launch passes a packed tensor; default
    tier only where a view or an entry point's unchecked argument reaches it."""
    for model, kernel in judged_kernels(tree):
        by_pointer: dict[str, dict[str, list]] = {}
        for acc in kernel.accesses:
            if acc.pointer is None or acc.byte_record or acc.via_block:
                continue
            for t in acc.terms:
                if IndexSource.ARANGE not in t.index.sources:
                    continue
                if t.step.kind is StepKind.STRIDE and len(t.step.params) == 1:
                    by_pointer.setdefault(acc.pointer, {}).setdefault(t.index.text, []).append(("stride", acc, t))
                elif t.step.kind is StepKind.UNIT:
                    by_pointer.setdefault(acc.pointer, {}).setdefault(t.index.text, []).append(("unit", acc, t))
        launches = None
        for pointer, indices in by_pointer.items():
            for index, uses in indices.items():
                strided = [(a, t) for k, a, t in uses if k == "stride"]
                if not strided:
                    continue
                s = strided[0][1].step.params[0]
                # Under `if s == 1` (directly or through a local test), dropping `s` is right.
                unit = [(a, t) for k, a, t in uses if k == "unit" and not any(
                    c.param == s and c.test == "eq" and c.truth and c.value == "1" for c in a.conditions)]
                if not unit:
                    continue
                if launches is None:
                    launches = tree.launches_of(model, kernel)
                # Dropped where the stride is 1 anyway: the tensor's layout where it reaches the
                # launches decides (packed: silent; a view or an entry point's argument: default).
                layout = kernel_layout(tree, launches, pointer)
                if layout.kind == PACKED:
                    continue
                acc, term = min(unit, key=lambda x: (x[0].span.line, x[0].span.column))
                key = (model.path, acc.span, s)
                if key in reported:
                    continue
                reported.add(key)
                yield make_finding(
                    "SC005", model.path, acc.span, group=f"{kernel.name}:{pointer}:{index}:dropped",
                    preview=not layout.default_tier, evidence=f" ({layout.why})" if layout.why else "",
                    related=[(model.path, strided[0][0].span, f"`{index}` steps `{pointer}` by `{s}` here")],
                    template="dropped", index=index, pointer=pointer, stride=s, line=strided[0][0].span.line,
                )


def _judge(tree, launches, stride, pointer, named, mine):
    """Whether ``stride`` stepping ``pointer`` is another tensor's stride: (preview, owner, why),
    or None when it is not (or nothing says so).

    The launches decide where they bind both: a stride of tensor X stepping the pointer bound to
    tensor Y is wrong unless the launcher establishes that X and Y share strides (the same tensor
    or a view of it, ``empty_like``, an asserted stride equality, both contiguous). Where no launch
    binds them, the names decide. The default tier wants a slip (the pointer's own strides are
    there, unused in this place) or a layout that the launch side shows reaching the kernel
    (a strided view, or a public entry point's unchecked argument); the rest is preview."""
    seen = []
    for bl in launches:
        so, po = bl.bound.get(stride), bl.bound.get(pointer)
        if so is None or po is None or so.kind is not OriginKind.STRIDE or po.kind is not OriginKind.TENSOR \
                or not so.tensor or not po.tensor or po.opaque:
            continue
        seen.append((bl, so, po))
    if seen:
        wrong = [(bl, so, po) for bl, so, po in seen if not _share(so, po, bl, tree)]
        if not wrong:
            return None
        bl, so, po = wrong[0]
        evidence = [layout_of(po, bl, tree), layout_of(_tensor_arg(bl, so.tensor) or _stride_source(so), bl, tree)]
        strong = next((e for e in evidence if e.default_tier), None)
        slip = bool(mine.get(pointer))
        why = strong.why if strong else ""
        return (not (strong or slip), so.tensor, why)
    owner = named.get(stride)
    if owner is None or owner == pointer:
        return None
    return (not mine.get(pointer), owner, "")


def _tensor_arg(bl, tensor):
    """The launch's argument that is ``tensor`` (for its layout), if any."""
    for o in bl.bound.values():
        if o.kind is OriginKind.TENSOR and o.tensor == tensor:
            return o
    return None


def _stride_source(so):
    """The tensor a stride argument is taken from, where no pointer of the launch receives it
    (`x.stride(0)` stepping a buffer derived from `x`): its layout is what the stride carries."""
    return replace(so, kind=OriginKind.TENSOR, text=so.tensor, dim=None, factors=())


def _share(so, po, bl, tree) -> bool:
    """The launcher establishes that the tensor ``so`` is a stride of and the tensor ``po`` share
    strides, or its callers do (two views made alike from one tensor)."""
    if _fam(so) == _fam(po) or so.tensor == po.tensor:
        return True
    if po.like_of == so.tensor or so.like_of == po.tensor:
        return True
    other = _tensor_arg(bl, so.tensor)
    if shares_stride(po, so, other):
        return True
    if po.contiguous and (so.contiguous or (other is not None and other.contiguous)):
        return True
    return _callers_share(bl, tree, po, other)


def _callers_share(bl, tree, a, b) -> bool:
    """Both tensors are the launcher's parameters unchanged, and every caller passes them two
    tensors with equal strides (`buf[:, :h]` and `buf[:, h:]`), a few calls up."""
    if a is None or b is None or not a.param or not b.param:
        return False
    launch = bl.launch
    qual = launch.launcher_qualname
    return bool(qual) and callers_share_strides(tree, bl.module, qual, a.param, b.param)


def _at_launch(tree, reported):
    for bl in tree.bound_launches():
        kernel = bl.kernel
        strides = {n: o for n, o in bl.bound.items()
                   if o.kind is OriginKind.STRIDE and (q := kernel.param(n)) is not None and q.kind is ParamKind.STRIDE}
        if not strides:
            continue
        pairs = pair_strides(kernel)
        wrong_dim: dict[str, tuple] = {}
        for name, o in strides.items():
            pointer = pairs.get(name)
            if pointer is None or ("kernel-stride", id(kernel), name) in reported:
                continue
            t = bl.bound.get(pointer)
            if t is None or t.kind is not OriginKind.TENSOR or t.tensor is None or o.tensor is None:
                continue
            if _fam(o) != _fam(t) and o.tensor != t.tensor:
                if t.opaque:
                    continue  # the pointer gets something of unknown nature (a pointer table)
                if t.contiguous and o.contiguous:
                    continue  # both packed: equal strides wherever the shapes agree
                if t.like_of == o.tensor or o.like_of == t.tensor:
                    # `out = torch.empty_like(x)` keeps x's strides (x dense): sharing them is the intent.
                    continue
                if shares_stride(t, o, _tensor_arg(bl, o.tensor)):
                    continue  # `assert t.stride() == x.stride()`: a check shows the strides equal
                if _held_by(t.tensor, o.tensor):
                    continue  # `x.storage.data` with `x.stride(0)`: a wrapper and the tensor it holds
                if _callers_share(bl, tree, t, _tensor_arg(bl, o.tensor)):
                    continue  # the callers pass two views made alike from one tensor
                yield from _emit(bl, o, name, reported, fix=None, template="launch_foreign",
                                 arg=o.text, tensor=o.tensor, stride=name, pointer=pointer, receives=t.text)
                continue
            if o.dim is None:
                continue
            exp = expected_dims(kernel, name, bl.bound, bl.launch.grid, o.tensor)
            if not exp:
                yield from _flattened(tree, bl, kernel, name, o, t, reported)
                continue
            verdicts = {same_dim(o, e) for e in exp}
            if verdicts == {False}:
                dims = {e.dim for e in exp}
                if len(dims) == 1:
                    wrong_dim[name] = (o, exp[0])
        # Swapped pairs: each one's expected dimension is what the other received.
        done = set()
        for a, (oa, ea) in wrong_dim.items():
            if a in done:
                continue
            fix = None
            for b, (ob, eb) in wrong_dim.items():
                if b != a and b not in done and _fam(oa) == _fam(ob) and same_dim(ob, ea) and same_dim(oa, eb):
                    fix = swap_fix(oa, ob)
                    done.update((a, b))
                    yield from _emit(bl, oa, a, reported, fix=fix, **_dim_fields(oa, ea, a))
                    yield from _emit(bl, ob, b, reported, fix=fix, **_dim_fields(ob, eb, b))
                    break
            if fix is None:
                done.add(a)
                yield from _emit(bl, oa, a, reported, fix=None, **_dim_fields(oa, ea, a))


def _flattened(tree, bl, kernel, name, o, t, reported):
    """A stride of one dimension stepping an index that walks several dimensions of the same
    tensor flattened (a grid of `b * s` rows, each at `row * t.stride(1)`): the step is that
    dimension's alone, right only while the dimensions outside it are packed over it (`reshape`
    makes them so, or a contiguous tensor is). The stride of an outer one of them is wrong even
    then; the innermost one's, where the tensor's layout is shown not to be packed (default
    tier) or nothing shows it (preview)."""
    for g, dims in flattened_dims(kernel, name, bl.bound, bl.launch.grid, o.tensor):
        if list(dims) != list(range(dims[0], dims[-1] + 1)):
            continue
        ndim = next((f.ndim for f in g.factors if f.ndim), None) or o.ndim
        d = o.dim + ndim if o.dim < 0 and ndim else o.dim
        if d < 0 or d not in dims:
            continue
        preview, why = False, ""
        if d == dims[-1]:
            if t.contiguous or (t.known_strides and any(k < 0 or k in dims[:-1] for k, _ in t.known_strides)):
                continue
            # A path on which the tensor is the launcher's parameter unchanged brings whatever the
            # callers pass (the other paths make it contiguous, at best).
            layout = layout_of(replace(t, param=t.kept_param) if t.param is None and t.kept_param else t, bl, tree)
            if layout.kind == PACKED:
                continue
            preview, why = not layout.default_tier, layout.why
        yield from _emit(bl, o, name, reported, fix=None, template="launch_flattened", preview=preview,
                         stride=name, bound=g.text or " * ".join(f.text for f in g.factors),
                         dims=", ".join(map(str, dims)), tensor=o.tensor, arg=o.text, dim=d,
                         evidence=f" ({why})" if why else "")
        return


def _held_by(pointer_tensor: str, stride_tensor: str) -> bool:
    """Whether the pointer's tensor is an attribute of the very object whose ``.stride()`` is passed
    (`x.storage.data` and `x.stride(0)`: a wrapper's strides are its tensor's, by construction);
    ``self``/``ctx`` hold many tensors, so an attribute of theirs is not one."""
    root = stride_tensor.split(".")[0]
    return (pointer_tensor.startswith(stride_tensor + ".") and root not in ("self", "ctx", "cls")
            and "." not in stride_tensor)


def _dim_fields(o, e, name) -> dict:
    return dict(template="launch_dimension", stride=name, bound=e.text, dim=e.dim, tensor=e.tensor, arg=o.text)


def _emit(bl, o, name, reported, fix, template, preview=False, **fields):
    key = (bl.module.path, o.span, "SC005")
    if key in reported:
        return
    reported.add(key)
    yield make_finding("SC005", bl.module.path, o.span, fix=fix, group=f"{bl.launch.launcher}:{bl.kernel.name}:{name}",
                       template=template, preview=preview, **fields)


def check(tree, options):
    reported = set()
    yield from _in_kernel(tree, reported)
    yield from _dropped_stride(tree, reported)
    yield from _at_launch(tree, reported)
