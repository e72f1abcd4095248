"""What the launch side shows about a tensor's layout where it reaches a kernel, and how sure.

The launch-side rules (SC002-SC005, SC007) and the tiers read one verdict per (launch, tensor
argument), built from :class:`~stridecheck.lint.model.ArgOrigin`:

* ``packed``: contiguous or freshly allocated in the launcher, or by every caller of it in the
  module (a decorator, ``ctx.saved_tensors`` of a contiguous tensor, an allocator it calls);
* ``live``: a strided view made on the way (``x[:, :n]``, ``x.t()``, ``expand``): a layout that
  breaks a packed assumption reaches the kernel;
* ``latent``: a parameter of a public entry point (a public function, a public method,
  ``forward``/``backward`` of a module or an autograd Function, a registered op) reaches the
  kernel unchanged (or through a view that keeps its strides) with no layout check on the way:
  whatever its callers pass, the kernel gets;
* ``unknown``: anything else (a private launcher whose callers are out of sight, a tensor
  returned by a call the analysis does not follow, a name it cannot place).

The default tier wants ``live`` or ``latent`` (the message says which, and where the tensor came
from); ``unknown`` is the preview tier's.
"""

from __future__ import annotations

from dataclasses import dataclass

from stridecheck.lint.model import ArgOrigin, OriginKind

PACKED, LIVE, LATENT, UNKNOWN = "packed", "live", "latent", "unknown"


@dataclass(frozen=True, slots=True)
class Layout:
    kind: str
    why: str = ""  # the evidence in words, for the message

    @property
    def default_tier(self) -> bool:
        return self.kind in (LIVE, LATENT)


def layout_of(o: ArgOrigin | None, launch) -> Layout:
    """The layout verdict of one tensor argument ``o`` of ``launch`` (a :class:`Launch`)."""
    if o is None or o.kind is not OriginKind.TENSOR or o.text == "None":
        return Layout(UNKNOWN)
    where = f"`{launch.launcher}`" if launch.launcher else "the launching module"
    if o.like_of and not o.contiguous and not o.contiguous_in_module:
        # `torch.empty_like(x)` keeps x's strides (preserve_format): its layout is x's.
        if o.like_of in launch.params and launch.public and not launch.guarded:
            return Layout(LATENT, f"`{o.text}` is made like `{o.like_of}`, which reaches the kernel's launch "
                                  f"unchecked from {where}, a public entry point")
        return Layout(UNKNOWN, f"`{o.text}` keeps the strides of `{o.like_of}`")
    if o.contiguous or o.fresh or o.contiguous_in_module:
        return Layout(PACKED, f"`{o.text}` is contiguous where {where} launches")
    if o.strided_view:
        return Layout(LIVE, f"`{o.text}` is a strided view made in {where}")
    if o.opaque or o.alloc_call:
        return Layout(UNKNOWN, f"`{o.text}` comes from a call the analysis does not follow")
    if o.param is not None and launch.public and not launch.guarded:
        via = "" if o.param == o.text else f" (through `{o.text}`)"
        return Layout(LATENT, f"`{o.param}`{via} reaches the kernel unchecked from {where}, a public entry point")
    return Layout(UNKNOWN, f"nothing in {where} shows the layout of `{o.text}`")


def kernel_layout(launches, pointer: str) -> Layout:
    """The verdict over every resolved launch of a kernel for the tensor bound to ``pointer``:
    ``packed`` only when every launch packs it; else the strongest evidence of any launch
    (``live`` before ``latent``); ``unknown`` with no launch in view."""
    if not launches:
        return Layout(UNKNOWN, "no launch of the kernel is in view")
    got = [layout_of(bl.bound.get(pointer), bl.launch) for bl in launches]
    if all(g.kind == PACKED for g in got):
        return got[0]
    for kind in (LIVE, LATENT):
        for g in got:
            if g.kind == kind:
                return g
    return next((g for g in got if g.kind == UNKNOWN), got[0])


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
    return out


def step_layout(launches, pointer: str, sizes) -> Layout:
    """The verdict for a pointer stepped by the logical sizes ``sizes``: a size that a launch builds
    from another tensor's extents (`step * n_vocab` on `cache`, `n_vocab = logits.shape[1]`) is
    wrong for any layout of the pointer's tensor whose extent differs, contiguous or not (the
    founding bug: a cache one column wider than the logits): ``live``. Otherwise as
    :func:`kernel_layout`: only contiguity makes a size the stride."""
    for bl in launches:
        o = bl.bound.get(pointer)
        if o is None or o.kind is not OriginKind.TENSOR or not o.tensor or o.fresh:
            continue  # an allocation is made with the extents it is addressed by
        mine = {o.family or o.tensor, o.tensor, o.like_of} | set(o.same_strides)
        for s in sizes:
            so = bl.bound.get(s)
            if so is None:
                continue
            foreign = _extent_tensors(so) - mine
            if foreign:
                where = f"`{bl.launch.launcher}`" if bl.launch.launcher else "the launching module"
                other = sorted(foreign)[0]
                return Layout(LIVE, f"{where} passes `{s}` = `{origin_text(so)}`, an extent of `{other}`, not of `{o.text}`")
    return kernel_layout(launches, pointer)
