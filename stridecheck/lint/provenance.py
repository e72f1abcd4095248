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
