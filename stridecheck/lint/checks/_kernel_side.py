"""What the kernel-side rules (SC001, SC002, SC006) share: which kernels to judge, what the
launches of a kernel show about each parameter, and how a stride parameter is paired with the
tensor it belongs to."""

from __future__ import annotations

import re
from collections.abc import Iterator

from stridecheck.lint.checks._launch_common import stride_fixed
from stridecheck.lint.kernels import tensor_of
from stridecheck.lint.model import Access, ArgOrigin, Kernel, ModuleModel, OriginKind, ParamKind

ADDRESS_OPS = ("load", "store", "atomic")


def judged_kernels(tree) -> Iterator[tuple[ModuleModel, Kernel]]:
    """Every kernel, and every helper that no kernel of its module calls.

    A helper called from a kernel of its module is judged through its callers (inlined, with the
    callers' values bound), which is more exact than reading its parameters alone; its findings
    then point into the helper, once (callers deduplicate by span)."""
    for model, kernel in tree.kernels():
        if kernel.called_by:
            continue
        yield model, kernel


class LaunchView:
    """What every resolved launch of one kernel shows about its parameters."""

    def __init__(self, tree, model: ModuleModel, kernel: Kernel):
        try:
            self.launches = tree.launches_of(model, kernel)
        except Exception:  # the launch side is another module: never let it break a rule
            self.launches = []

    def origins(self, param: str) -> list[ArgOrigin]:
        return [bl.bound[param] for bl in self.launches if param in bl.bound]

    def is_stride(self, param: str) -> bool:
        """Some launch builds this argument from ``.stride(``: a stride, whatever its name."""
        return any(_mentions_stride(o) for o in self.origins(param))

    def is_size(self, param: str) -> bool:
        """Every resolved launch fills it with shapes, a product of them or a literal (names lie:
        a ``dim_stride`` computed as ``dim_size * inner_size`` is a size; SC004 reports it)."""
        got = self.origins(param)
        return bool(got) and all(
            (o.kind in (OriginKind.SHAPE, OriginKind.PRODUCT, OriginKind.NUMEL, OriginKind.LITERAL)
             or (o.kind == OriginKind.OTHER and _PRODUCT.fullmatch(o.text)))
            and not _mentions_stride(o)
            for o in got
        )

    def contiguous(self, pointer: str) -> bool:
        """Every resolved launch passes a provably contiguous (or freshly allocated) tensor."""
        got = self.origins(pointer)
        return bool(got) and all(o.contiguous or o.fresh for o in got)

    def fixed(self, param: str, pointer: str) -> bool:
        """Every resolved launch passes ``t.stride(k)`` of the tensor ``t`` the pointer receives,
        and a check or allocation of the launcher fixes that stride (``assert t.stride(-1) == 1``,
        ``assert_size_stride``, ``empty_strided``): the kernel may use the value it is fixed to."""
        if not self.launches:
            return False
        for bl in self.launches:
            o, t = bl.bound.get(param), bl.bound.get(pointer)
            if o is None or t is None or o.kind != OriginKind.STRIDE or o.factors or not o.tensor \
                    or o.tensor != t.tensor or not stride_fixed(t, o.dim):
                return False
        return True

    def shares_strides(self, pointer: str) -> bool:
        """Every resolved launch passes a tensor that a check shows to have another tensor's strides
        (``assert k.stride() == v.stride()``, ``ArgOrigin.same_strides``)."""
        got = self.origins(pointer)
        return bool(got) and all(o.same_strides for o in got)

    def same_stride_dim(self, pointer: str, other: str, dim: int) -> bool:
        """Every resolved launch shows the tensors of ``pointer`` and ``other`` to have the same
        stride in dimension ``dim`` (a check of both whole stride tuples, or of that dimension)."""
        if not self.launches:
            return False
        for bl in self.launches:
            a, b = bl.bound.get(pointer), bl.bound.get(other)
            if a is None or b is None or a.kind != OriginKind.TENSOR or b.kind != OriginKind.TENSOR \
                    or not a.tensor or not b.tensor:
                return False
            if b.tensor in a.same_strides or a.tensor in b.same_strides:
                continue
            if (dim, f"stride:{b.tensor}:{dim}") in a.known_strides or (dim, f"stride:{a.tensor}:{dim}") in b.known_strides:
                continue
            return False
        return True

    def constant(self, param: str) -> bool:
        """Some launch passes an integer literal."""
        return any(o.kind == OriginKind.LITERAL for o in self.origins(param))

    def last_dim(self, param: str) -> bool:
        """Some launch passes ``t.stride(-1)``, or the highest dimension of ``t`` it passes."""
        for bl in self.launches:
            o = bl.bound.get(param)
            if o is None or o.kind != OriginKind.STRIDE or o.dim is None:
                continue
            if o.dim == -1:
                return True
            dims = [a.dim for a in bl.bound.values()
                    if a.kind == OriginKind.STRIDE and a.tensor == o.tensor and a.dim is not None and a.dim >= 0]
            if o.dim > 0 and dims and o.dim == max(dims):
                return True
        return False


# `splits * n`: a product of plain integers (no `.stride(`) is a product of sizes.
_PRODUCT = re.compile(r"\(?\s*[A-Za-z_][\w.]*(\s*\*\s*[A-Za-z_0-9][\w.]*)+\s*\)?")


def _mentions_stride(o: ArgOrigin) -> bool:
    if o.kind == OriginKind.STRIDE or ".stride(" in o.text or ".stride()" in o.text:
        return True
    return any(_mentions_stride(f) for f in o.factors)


def address_accesses(kernel: Kernel) -> list[Access]:
    return [a for a in kernel.accesses if a.op in ADDRESS_OPS and a.pointer]


def _tokens(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in name.lower().split("_") if t]


def stride_owner(stride: str, kernel: Kernel) -> str | None:
    """The pointer parameter a stride parameter belongs to, by name (``stride_xm``/``x_stride``/
    ``keep_row_stride`` -> ``x_ptr``/``keep_ptr``), or None."""
    bases: dict[str, str] = {}
    for p in kernel.params:
        if p.kind == ParamKind.POINTER:
            bases.setdefault(tensor_of(p.name).lower(), p.name)
    toks = [t for t in _tokens(stride) if t not in ("stride", "strides")]
    if "s" in toks[1:]:  # fla's `state_s_t`: tensor `state`, stride marker `s`, dimension `t`
        toks.remove("s")
    if not toks:
        return None
    cands: list[str] = []
    for i in range(len(toks), 0, -1):
        cands.append("_".join(toks[:i]))
        cands.append("".join(toks[:i]))
    first = toks[0]
    if len(toks) == 1 and len(first) >= 2:
        cands.append(first[:-1])  # stride_am -> a, stride_xm -> x (not stride_vn_z -> v)
    if re.fullmatch(r"s[a-z]+\d*", stride.lower()):
        cands.append(re.sub(r"\d+$", "", stride.lower())[1:])  # sx0 -> x
    for c in cands:
        if c in bases:
            return bases[c]
    return None


def term_dimension(access: Access, term) -> int:
    """Which dimension a term steps (see :meth:`Access.term_dimension`)."""
    return access.term_dimension(term)
