"""What the host side shows about a tensor's layout where it reaches a kernel, and how sure.

The rules and their tiers read one verdict per (launch, tensor argument), built from the
launcher's own facts (:class:`~stridecheck.lint.model.ArgOrigin`) and, for a tensor that is a
parameter of the launcher, from what the launcher's callers in the linted tree pass
(:meth:`~stridecheck.lint.linker.Tree.callers_of`, followed up to ``MAX_DEPTH`` calls):

* ``packed``: contiguous or allocated in the launcher, or by every caller of it (a decorator that
  makes arguments contiguous, ``.contiguous()``, an allocation, an attribute every assignment of
  which allocates, ``ctx.saved_tensors`` of a contiguous tensor), or checked by ``@stride_guard``;
* ``live``: a strided view made on the way (``x[:, :n]``, ``x.t()``, ``expand``) reaches the
  kernel: a layout that breaks a packed assumption;
* ``latent``: a parameter of a public entry point (a public function, a public method,
  ``forward``/``backward`` of a module or an autograd Function, a registered operator) with no
  caller in view reaches the kernel unchanged (or through a view that keeps its strides, or an
  ``empty_like`` of it) with no layout check on the way: whatever its callers pass, the kernel gets;
* ``unknown``: anything else (a private function whose callers are out of sight, a tensor
  returned by a call the analysis does not follow).

The default tier wants ``live`` or ``latent`` (the message says which, and where the tensor came
from); ``unknown`` is the preview tier's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stridecheck.lint.callgraph import MODULE_CALLER
from stridecheck.lint.model import ArgFact, ArgOrigin, OriginKind

PACKED, LIVE, LATENT, UNKNOWN = "packed", "live", "latent", "unknown"
MAX_DEPTH = 3
OMITTED = ArgFact("omitted")  # a call leaves the parameter to its default


@dataclass(frozen=True, slots=True)
class Layout:
    kind: str
    why: str = ""  # the evidence in words, for the message
    gappy: bool = False  # LIVE through a slice: not dense, so `empty_like` of it is contiguous

    @property
    def default_tier(self) -> bool:
        return self.kind in (LIVE, LATENT)


def combine(got: list[Layout]) -> Layout:
    """Every path packed: packed; else the strongest evidence of any path."""
    if not got:
        return Layout(UNKNOWN)
    if all(g.kind == PACKED for g in got):
        return got[0]
    for kind in (LIVE, LATENT, UNKNOWN):
        for g in got:
            if g.kind == kind:
                return g
    return got[0]


def _site(site) -> str:
    if site.caller == MODULE_CALLER:
        return f"the module's top level (line {site.line})"
    return f"`{site.caller}` (line {site.line})"


def _where(launch) -> str:
    if not launch.launcher:
        return "the launching module"
    return f"`{launch.launcher_class + '.' if launch.launcher_class else ''}{launch.launcher}`"


def caller_layout(tree, model, qualname: str, param: str, depth: int = 0, seen=None) -> Layout:
    """The layout of parameter ``param`` of function ``qualname`` (in ``model``), from its callers."""
    info = model.functions.get(qualname)
    if info is not None and not info.guarded and param in info.contiguous_params:
        return Layout(PACKED, f"a decorator of `{qualname}` makes `{param}` contiguous")
    return _walk_callers(
        tree, model, qualname, param, depth, seen, "layout",
        lambda m, q, seen: caller_layout(tree, m, q, param, depth + 1, seen),
        lambda cm, site, info, seen: _fact_layout(tree, cm, site, _bound(site, info, param), depth, seen),
    )


def _walk_callers(tree, model, qualname: str, param: str, depth: int, seen, tag: str, follow, judge) -> Layout:
    """The walk :func:`caller_layout` and :func:`caller_width` share: a guarded function settles
    it; a function seen before on this path, callers too far up or out of view say nothing; a
    ``@register(entry, ...)`` body is followed (``follow(model, qualname, seen)``) to its entry;
    a function without callers is judged as an entry point; else every call site is judged
    (``judge(model, site, info, seen)``) and the verdicts combined."""
    info = model.functions.get(qualname)
    if info is None or param not in info.params:
        return Layout(UNKNOWN)
    if info.guarded:
        return Layout(PACKED, f"`{qualname}` is guarded by `@stride_guard`")
    key = (id(model), qualname, param, tag)
    seen = seen or set()
    if key in seen:
        return Layout(UNKNOWN)
    seen = seen | {key}
    sites = tree.callers_of(model, qualname) if tree is not None else []
    if not sites and info.alternative_of and tree is not None:
        # `@register(entry, backend=...)`: this body runs where `entry` is called, with its arguments.
        target = tree.resolve_function(model, info.alternative_of, qualname)
        if target is not None and param in target[0].functions[target[1]].params:
            return follow(target[0], target[1], seen)
        return Layout(UNKNOWN, f"`{qualname}` is another body of `{info.alternative_of}`, whose callers are out of sight")
    if not sites:
        return _entry_layout(tree, model, info, param)
    if depth >= MAX_DEPTH:
        return Layout(UNKNOWN, f"the callers of `{qualname}` are too far up")
    return combine([judge(cm, site, info, seen) for cm, site in sites])


def callers_share_strides(tree, model, qualname: str, a: str, b: str, depth: int = 0, seen=None) -> bool:
    """Whether every caller of ``qualname`` (in ``model``) passes parameters ``a`` and ``b`` tensors
    with equal strides: the same tensor, two views made alike from one base (``buf[:, :h]`` and
    ``buf[:, h:]``, see ``ArgFact.view``), or its own two parameters of which the same holds, a
    few calls up. False where any caller passes something else, or none is in view."""
    info = model.functions.get(qualname) if tree is not None else None
    if info is None or a not in info.params or b not in info.params or depth >= MAX_DEPTH:
        return False
    key = (id(model), qualname, a, b)
    seen = seen or set()
    if key in seen:
        return False
    seen = seen | {key}
    sites = tree.callers_of(model, qualname)
    if not sites:
        return False
    for cm, site in sites:
        fa, fb = _bound(site, info, a), _bound(site, info, b)
        if fa is None or fb is None or fa is OMITTED or fb is OMITTED:
            return False
        if fa.view and fa.view == fb.view:
            continue
        if fa.kind == "param" and fb.kind == "param" and fa.name and fb.name and fa.view is None \
                and fb.view is None:
            if fa.name == fb.name or callers_share_strides(tree, cm, site.caller, fa.name, fb.name,
                                                            depth + 1, seen):
                continue
        return False
    return True


def _entry_layout(tree, model, info, param: str) -> Layout:
    """A function no caller in the linted tree is seen to call: ``latent`` when it is an entry
    point of the package's users (an autograd ``forward``/``backward``, a registered operator, or a
    public function or method that nothing else in its package names), ``unknown`` when it is
    private, lives under a private package, or is named somewhere the call graph does not follow
    (callers exist, out of the analysis' sight: they usually settle the layout)."""
    q = info.qualname
    if info.autograd:
        return Layout(LATENT, f"`{param}` comes unchecked from `{q}`, an autograd entry point")
    if info.registered:
        return Layout(LATENT, f"`{param}` comes unchecked from `{q}`, a registered operator")
    if not info.public:
        return Layout(UNKNOWN, f"no caller of `{q}` is in view")
    if tree is None:
        return Layout(LATENT, f"`{param}` comes unchecked from `{q}`, a public entry point")
    from stridecheck.lint.linker import private_path

    if private_path(model.path, tree.package_dirs):
        return Layout(UNKNOWN, f"`{q}` is in a private module and no caller of it is in view")
    cls, _, name = q.rpartition(".")
    use = tree.use_elsewhere(model, cls or name)
    if use is not None and use[0] == "use":
        return Layout(UNKNOWN, f"`{cls or name}` is used at {_short(use[1])}:{use[2]}, through a path the analysis "
                               f"does not follow")
    if use is not None:
        return Layout(LATENT, f"`{param}` comes unchecked from `{q}`, registered as an operator "
                              f"({_short(use[1])}:{use[2]})")
    return Layout(LATENT, f"`{param}` comes unchecked from `{q}`, a public entry point nothing in its package calls")


def caller_width(tree, model, qualname: str, param: str, source: str | None, depth: int = 0, seen=None) -> Layout:
    """Whether the callers of ``qualname`` settle how wide parameter ``param`` is against the
    extents of parameter ``source`` (the tensor a store's bound is taken from; None when that is
    not a parameter): ``packed`` when every caller allocates it from tensors' extents (``source``'s
    or others') or a decorator guards it; ``latent`` when a caller allocates it from constants or
    names no tensor's extent reaches, or it comes unchecked from an entry point; ``unknown`` as in
    :func:`caller_layout`. Contiguity says nothing of width, so a caller's ``.contiguous()`` is
    followed to what it copies."""
    return _walk_callers(
        tree, model, qualname, param, depth, seen, "width",
        lambda m, q, seen: caller_width(tree, m, q, param, source if source in m.functions[q].params else None,
                                        depth + 1, seen),
        lambda cm, site, info, seen: _width_fact(tree, cm, site, _bound(site, info, param),
                                                 _bound(site, info, source) if source else None, depth, seen),
    )


def _width_fact(tree, model, site, fact, src, depth, seen) -> Layout:
    where = _site(site)
    if fact is None:
        return Layout(UNKNOWN, f"{where} passes it through `*args`")
    if fact is OMITTED:
        # The default (None, as a rule) is the path on which the launcher allocates it itself.
        return Layout(PACKED, f"{where} leaves it to its default")
    names = {n.split(".")[0] for n in ((src.name or "", src.text) if src is not None else ()) if n}
    if fact.sized_from is not None:
        # Sized from tensors' extents (the bound's own, or another's that the caller's code ties
        # to it, such as `k`'s heads for `q`'s), the width is the caller's contract; from
        # constants or names nothing ties to a tensor, it is exactly what no one checks.
        if not names or fact.sized_from:
            return Layout(PACKED, f"{where} allocates it")
        shown = fact.text if len(fact.text) <= 60 else fact.text[:57] + "..."
        other = (src.name or src.text) if src is not None else sorted(names)[0]
        other = other if len(other) <= 40 else other[:37] + "..."
        return Layout(LATENT, f"{where} allocates it as `{shown}`, not from the extents of `{other}`")
    if fact.kind == "strided":
        return Layout(UNKNOWN, f"{where} passes a view of a tensor whose extent nothing shows")
    if fact.kind in ("param", "like", "packed") and fact.name:
        nxt = src.name if src is not None and src.kind == "param" else None
        return caller_width(tree, model, site.caller, fact.name, nxt, depth + 1, seen)
    if fact.kind == "attr" and fact.name:
        cls = site.caller.split(".")[0] if "." in site.caller else None
        if cls and tree is not None and tree.attrs_of(model).get(cls, {}).get(fact.name) == "packed":
            return Layout(PACKED, f"`self.{fact.name}` is allocated by its class")
    return Layout(UNKNOWN, f"nothing shows what {where} passes")


def width_of(o: ArgOrigin | None, source: ArgOrigin | None, bl, tree=None) -> Layout:
    """How sure a launch is to write tensor ``o`` past its extent, where a store's bound comes
    from ``source``'s extents and the launcher checks nothing: ``latent``/``live`` when the
    tensor comes unchecked from an entry point, a caller allocates it from other extents, or
    nothing in view settles it; ``packed`` when every caller allocates it from ``source``;
    ``unknown`` when it comes from a call, an attribute or callers the analysis does not follow."""
    launch = bl.launch
    where = _where(launch)
    qual = launch.launcher_qualname
    if o is None or o.kind is not OriginKind.TENSOR:
        return Layout(UNKNOWN)
    # A parameter, unchanged or on one path (`out = torch.empty(...) if out is None else out`):
    # the other paths allocate, so what the callers pass decides.
    param = o.param if o.param is not None else (o.tensor if o.tensor in launch.params else None)
    if param is not None and qual and qual in bl.module.functions:
        src = source.tensor if source is not None and source.tensor in launch.params else None
        return caller_width(tree, bl.module, qual, param, src)
    if o.tensor and o.tensor.startswith("self."):
        return layout_of(o, bl, tree)
    if o.opaque or o.alloc_call:
        return Layout(UNKNOWN, f"`{o.text}` comes from a call the analysis does not follow")
    return Layout(UNKNOWN, f"nothing in {where} shows where `{o.text}` comes from")


def _short(path: str) -> str:
    import os

    parts = os.path.abspath(path).replace("\\", "/").split("/")
    return "/".join(parts[-3:])


def _bound(site, info, param):
    """The fact a call site passes for ``param`` (None when it cannot be placed)."""
    params = list(info.params)
    if site.callee.startswith("self.") or site.callee.endswith(".apply") or "." in info.qualname:
        params = params[1:]  # `self` / `ctx`
    if param in site.kwargs:
        return site.kwargs[param]
    if param in params:
        i = params.index(param)
        if i < len(site.args):
            return site.args[i]
        if not site.star and param in info.defaulted:
            return OMITTED
    return None


def _fact_layout(tree, model, site, fact, depth, seen) -> Layout:
    where = _site(site)
    if fact is None:
        return Layout(UNKNOWN, f"{where} passes it through `*args`")
    if fact is OMITTED:
        return Layout(UNKNOWN, f"{where} leaves it to its default")
    if fact.kind == "packed":
        return Layout(PACKED, f"{where} passes a contiguous tensor")
    if fact.kind == "strided":
        return Layout(LIVE, f"{where} passes a strided view{' `' + fact.text + '`' if fact.text else ''}",
                      gappy=fact.name == "slice")
    if fact.kind in ("param", "like") and fact.name:
        return caller_layout(tree, model, site.caller, fact.name, depth + 1, seen)
    if fact.kind == "attr" and fact.name:
        cls = site.caller.split(".")[0] if "." in site.caller else None
        if cls and tree is not None and tree.attrs_of(model).get(cls, {}).get(fact.name) == "packed":
            return Layout(PACKED, f"`self.{fact.name}` is allocated by its class")
    return Layout(UNKNOWN, f"nothing shows the layout {where} passes")


def layout_of(o: ArgOrigin | None, bl, tree=None) -> Layout:
    """The layout verdict of one tensor argument ``o`` of the bound launch ``bl``."""
    launch = bl.launch
    if o is None or o.kind is not OriginKind.TENSOR or o.text == "None":
        return Layout(UNKNOWN)
    where = _where(launch)
    qual = launch.launcher_qualname
    if launch.guarded:
        return Layout(PACKED, f"{where} is guarded by `@stride_guard`")
    if o.fresh and not o.like_of and not o.contiguous and o.known_strides:
        # `torch.empty_strided(size, stride)` with strides other than the packed ones
        return Layout(LIVE, f"`{o.text}` is allocated with strides of its own in {where}")
    if o.contiguous or o.contiguous_in_module or (o.fresh and not o.like_of):
        return Layout(PACKED, f"`{o.text}` is contiguous where {where} launches")
    if o.strided_view:
        return Layout(LIVE, f"`{o.text}` is a strided view made in {where}")
    if o.tensor and o.tensor.startswith("self.") and launch.launcher_class:
        if tree is not None and tree.attrs_of(bl.module).get(launch.launcher_class, {}).get(o.tensor[5:]) == "packed":
            return Layout(PACKED, f"`{o.tensor}` is allocated by its class")
        return Layout(UNKNOWN, f"`{o.tensor}` is an attribute whose layout nothing shows")
    source = o.param if o.param is not None else (o.like_of if o.like_of in launch.params else None)
    if source is None and o.descriptor_strides and o.tensor in launch.params:
        source = o.tensor  # a host tensor descriptor built around the parameter itself
    if source is not None and qual and qual in bl.module.functions:
        got = caller_layout(tree, bl.module, qual, source)
        if got.kind == LIVE and got.gappy and o.like_of == source:
            # `torch.empty_like` keeps the strides of a dense source only: of a slice (gaps in
            # it), it makes a contiguous tensor.
            return Layout(PACKED, f"`{o.text}` is made like `{source}`, a slice: contiguous")
        if got.kind == LATENT and source != o.text:
            how = "is made like" if o.like_of == source else "is a view of"
            return Layout(LATENT, f"`{o.text}` {how} `{source}`, which comes unchecked from {where}, a public entry point")
        return got
    if o.opaque or o.alloc_call:
        return Layout(UNKNOWN, f"`{o.text}` comes from a call the analysis does not follow")
    return Layout(UNKNOWN, f"nothing in {where} shows the layout of `{o.text}`")


def kernel_layout(tree, launches, pointer: str) -> Layout:
    """The verdict over every resolved launch of a kernel for the tensor bound to ``pointer``."""
    if not launches:
        return Layout(UNKNOWN, "no launch of the kernel is in view")
    return combine([layout_of(bl.bound.get(pointer), bl, tree) for bl in launches])


def origin_text(o: ArgOrigin) -> str:
    """What an argument is, in the launcher's terms: `logits.shape[1]` for a name unpacked from a shape."""
    if o.kind is OriginKind.SHAPE and o.tensor and o.dim is not None and "shape" not in o.text and "size(" not in o.text:
        return f"{o.tensor}.shape[{o.dim}]"
    if o.kind is OriginKind.STRIDE and o.tensor and o.dim is not None and "stride" not in o.text:
        return f"{o.tensor}.stride({o.dim})"
    return o.text


def _extent_tensors(o: ArgOrigin) -> set[str]:
    """The tensors whose extents a size argument is built from (`n, v = logits.shape` -> logits)."""
    if o.kind in (OriginKind.SHAPE, OriginKind.NUMEL) and o.tensor:
        return {o.family or o.tensor}
    out: set[str] = set()
    for f in o.factors:
        out |= _extent_tensors(f)
    if not out and o.kind is OriginKind.OTHER:
        # `out.shape[1] // 4`, `x.size(-1) * 2`: an expression of extents the origin does not model.
        out = set(_EXTENT_TEXT.findall(o.text))
    return out


_EXTENT_TEXT = re.compile(r"([A-Za-z_][\w.]*)\.(?:shape\b|size\(|numel\()")


def _own_names(o: ArgOrigin | None) -> set:
    """The names whose extents are those of tensor argument ``o``: itself, the storage it views,
    what it was made like, and the tensors a check shows to share its strides."""
    if o is None:
        return set()
    return {o.family or o.tensor, o.tensor, o.like_of} | set(o.same_strides)


def foreign_extent(launches, pointer: str, sizes):
    """A size that a launch builds from another tensor's extents (`step * n_vocab` on `cache`,
    `n_vocab = logits.shape[1]`): wrong for any layout of the pointer's tensor whose extent
    differs, contiguous or not (the founding bug: a cache one column wider than the logits).
    An allocation is made with the extents it is addressed by, so it is never foreign.
    (a ``live`` verdict naming the size, the launch, the size's origin) of the first launch that
    builds one; None when none does."""
    for bl in launches:
        o = bl.bound.get(pointer)
        if o is None or o.kind is not OriginKind.TENSOR or not o.tensor or o.fresh:
            continue
        mine = _own_names(o)
        for s in sizes:
            so = bl.bound.get(s)
            if so is None:
                continue
            foreign = _extent_tensors(so) - mine
            if foreign:
                other = sorted(foreign)[0]
                return (Layout(LIVE, f"{_where(bl.launch)} passes `{s}` = `{origin_text(so)}`, an extent of "
                                     f"`{other}`, not of `{o.text}`"), bl, so)
    return None


def own_extents(launches, pointer: str, sizes) -> bool:
    """Every launch builds each of ``sizes`` from the extents of the very tensor ``pointer``
    receives (`n_cols = x.shape[1]` for `x_ptr`), or allocates that tensor (then with them)."""
    if not launches:
        return False
    for bl in launches:
        o = bl.bound.get(pointer)
        if o is None or o.kind is not OriginKind.TENSOR or not o.tensor:
            return False
        if o.fresh:
            continue
        mine = _own_names(o)
        for s in sizes:
            so = bl.bound.get(s)
            if so is None:
                return False
            got = _extent_tensors(so)
            if not got or not got <= mine:
                return False
    return True


def step_layout(tree, launches, pointer: str, sizes) -> Layout:
    """A pointer stepped by the logical sizes ``sizes`` next to a stride of its own: a foreign
    extent is ``live`` (see :func:`foreign_extent`); packing settles it only where the sizes are
    the tensor's own extents (a contiguous `[R, B, 8]` buffer stepped by a `top_k` of 5 is still
    misread); else as :func:`kernel_layout`."""
    hit = foreign_extent(launches, pointer, sizes)
    if hit is not None:
        # A foreign extent is right exactly while the tensor is as wide as the other one: the
        # width question of :func:`width_of`. Allocated by every caller from tensors' extents, it
        # is; from constants, or handed in unchecked by an entry point, nothing says so.
        found, bl, so = hit
        got = kernel_layout(tree, launches, pointer)
        if got.kind == LIVE:
            return Layout(LIVE, f"{found.why}; {got.why}")  # a strided view: wrong whatever the width
        width = width_of(bl.bound.get(pointer), so if so.tensor else None, bl, tree)
        if width.kind == PACKED:
            return width
        if width.kind == UNKNOWN:
            return Layout(UNKNOWN, found.why)
        return Layout(LIVE, f"{found.why}; {width.why}" if width.why else found.why)
    got = kernel_layout(tree, launches, pointer)
    if got.kind == PACKED and not own_extents(launches, pointer, sizes):
        unplaced = _unplaced_size(tree, launches, pointer, sizes)
        if unplaced is not None:
            # Packed, stepped by a size that nothing in view places (a parameter of the launcher,
            # a name the analysis does not follow): whether it is one of the tensor's extents is
            # exactly what cannot be told here, so no evidence either way.
            why = f"nothing in view shows whether `{unplaced}` is one of its extents"
            return Layout(UNKNOWN, f"{got.why}; {why}" if got.why else why)
        # Packed, but stepped by a size shown to be none of its extents (a `top_k` of 5 over rows
        # of 8): packing is what makes the step wrong, not right.
        return Layout(LATENT, f"{got.why}, but the size is not shown to be one of its extents"
                      if got.why else "the size is not shown to be an extent of the tensor it steps")
    return got


def _unplaced_size(tree, launches, pointer: str, sizes) -> str | None:
    """The text of a size that some launch passes from nowhere the analysis places (no literal,
    no tensor's extent: an unfollowed name, a launcher's parameter no caller passes a number
    for), when every size that is not the pointer's own extent at every launch is such; else None
    (a size shown to be something else is evidence)."""
    found = None
    for bl in launches:
        o = bl.bound.get(pointer)
        mine = _own_names(o)
        for s in sizes:
            so = bl.bound.get(s)
            if so is None:
                return None
            got = _extent_tensors(so)
            if got and got <= mine:
                continue  # its own extent
            name = so.kind is OriginKind.OTHER or (so.kind is OriginKind.TENSOR and not so.is_tensor)
            if got or not name or so.literal is not None or so.factors:
                return None  # a literal, a product, another tensor's extent: placed
            if _callers_pass_a_number(tree, bl, so.text):
                return None
            found = found or origin_text(so)
    return found


def _callers_pass_a_number(tree, bl, param: str) -> bool:
    """Whether a caller of the launch's launcher passes a number for its parameter ``param``."""
    launch = bl.launch
    qual = launch.launcher_qualname
    info = bl.module.functions.get(qual) if qual else None
    if tree is None or info is None or param not in info.params:
        return False
    for _cm, site in tree.callers_of(bl.module, qual):
        fact = _bound(site, info, param)
        if fact is not None and fact is not OMITTED and fact.kind == "literal":
            return True
    return False


def runs_in_training(tree, bl, depth: int = 0, seen=None) -> bool:
    """Whether a launch's launcher is, or is called (a few calls up) from, the ``forward`` or
    ``backward`` of an autograd Function: the kernel serves training, where a batch holds
    hundreds of thousands of tokens."""
    launch = bl.launch
    qual = launch.launcher_qualname
    return bool(qual) and _autograd_above(tree, bl.module, qual, 0, set())


def _autograd_above(tree, model, qualname: str, depth: int, seen: set) -> bool:
    info = model.functions.get(qualname)
    if info is None or (id(model), qualname) in seen:
        return False
    if info.autograd:
        return True
    if depth >= MAX_DEPTH or tree is None:
        return False
    seen.add((id(model), qualname))
    return any(_autograd_above(tree, cm, site.caller, depth + 1, seen) for cm, site in tree.callers_of(model, qualname))
