"""The check of a derived contract at one launch: :func:`check_launch`, and the words of its
refusals.

One function decides and explains. The guarded kernel's per-launch code (see
:mod:`stridecheck.guard.kernel`) keeps its verdicts in a table keyed by the launch's layout
signature: a repeated signature reads its verdict back, a new one runs a straight-line test that
can only *accept* (a canonical reading that fits, written out for the contract), and anything
else runs this function. The table holds what this function returns, so the fast path and the
messages cannot disagree.

Per pointer, from metadata only: the accesses that exist at this launch (their branch
conditions hold for its values), their items judged by :func:`stridecheck.guard.layout.judge`,
no two elements of a tensor the launch stores through sharing memory (named by two indices at
one offset; a layout that merely *might* overlap is not refused), and one device for all
tensors. A host ``TensorDescriptor`` is judged as a block access whose steps are its
``strides`` and whose extents are its ``shape``, against its ``base``.
"""

from __future__ import annotations

from stridecheck.guard.layout import Item, Problem, describe_offset, judge, overlap_witness
from stridecheck.guard.spec_check import Violation, overlaps, warn_once
from stridecheck.guard.spec import StrideGuardError
from stridecheck.lint.model import python_scalar


class _Missing:
    """A parameter the launch does not pass (an autotuner's or heuristic's constexpr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not passed>"


MISSING = _Missing()

_CODE: dict[str, object] = {}


def as_int(v) -> int | None:
    """``v`` as a Python int when it is an integral number, else None. Values that compare equal
    (and so share an entry of a guard's table: ``True == 1 == 1.0 == np.int64(1)``) get the same
    answer: a bool is 0 or 1 (Triton passes it as an ``i1``), an integral float its integer, a
    NumPy scalar what its Python value gives."""
    try:
        v = python_scalar(v)
    except Exception:  # noqa: BLE001 - a NumPy array, not a scalar
        return None
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return int(v) if v.is_integer() else None
    if type(v).__name__ == "SymInt":
        try:
            return int(v)
        except Exception:  # noqa: BLE001 - an unbacked symbolic size: not decidable here
            return None
    return None


def evaluate(expr: str, names: tuple[str, ...], env: dict) -> int | None:
    """The value of a step expression at a launch; None when a parameter is not an integer."""
    if expr == "1":
        return 1
    local = {}
    for n in names:
        v = as_int(env.get(n, MISSING))
        if v is None:
            return None
        local[n] = v
    code = _CODE.get(expr)
    if code is None:
        code = _CODE[expr] = compile(expr, "<stride_guard step>", "eval")
    try:
        return int(eval(code, {"__builtins__": {}}, local))  # noqa: S307 - arithmetic checked by derive.step_expression
    except ZeroDivisionError:
        return None


def is_live(access, env: dict) -> bool:
    """Whether ``access`` exists at a launch: every branch condition holds for its values."""
    for c in access.conditions:
        value = env.get(c.param, MISSING)
        if value is MISSING or c.holds(value) is not True:
            return False
    return True


def _meta(t):
    return tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride())


def _contiguous_strides(shape) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _index(idx) -> str:
    return ", ".join(str(j) for j in idx)


def _layout(shape, strides) -> str:
    return f"shape {list(shape)}, strides {list(strides)}"


def check_launch(contract, values: dict, alternatives: tuple = ()) -> tuple[Violation, ...]:
    """Every violation of a derived contract by one launch (``values``: parameter -> value, with
    :data:`MISSING` for those not passed). ``alternatives`` are the autotuner's configs (dicts of
    the missing values): the launch is valid if it is valid under one of them."""
    if not alternatives:
        return tuple(_check_env(contract, values))
    first = None
    for alt in alternatives:
        found = _check_env(contract, {**values, **alt})
        if not found:
            return ()
        first = first or found
    return tuple(first)


def _step_users(contract) -> dict[str, set[str]]:
    """Per parameter, the pointers whose steps read it."""
    users: dict[str, set[str]] = {}
    for plan in contract.pointers:
        for acc in plan.accesses:
            for t in acc.terms:
                for n in t.names:
                    users.setdefault(n, set()).add(plan.name)
    return users


def _check_env(contract, env: dict) -> list[Violation]:
    fn = contract.func_name
    out: list[Violation] = []
    users = _step_users(contract)
    device = None
    for plan in contract.pointers:
        p = plan.name
        t = env.get(p)
        if t is None or t is MISSING:
            continue
        if plan.descriptor:
            base = getattr(t, "base", None)
            if base is None or not hasattr(base, "stride") or not hasattr(t, "strides"):
                continue
            if device is None:
                device = (base.device, f"{p}.base")
            elif base.device != device[0]:
                out.append(_device(fn, f"{p}.base", base.device, device))
            out.extend(_check_descriptor(fn, p, t, base, plan.descriptor_writes))
            continue
        if not (hasattr(t, "stride") and hasattr(t, "shape")):
            continue
        try:
            shape, strides = _meta(t)
        except Exception:  # noqa: BLE001 - an unbacked symbolic size: not decidable from metadata
            continue
        if device is None:
            device = (t.device, p)
        elif t.device != device[0]:
            out.append(_device(fn, p, t.device, device))
        if 0 in shape:
            continue  # no element: no layout to check
        live = [a for a in plan.accesses if is_live(a, env)]
        if any(a.writes for a in live) and overlaps(shape, strides):
            w = overlap_witness(shape, strides)
            if w is not None:
                live = []  # refused for its layout: its addresses are not judged on top
                a, b, at = w
                out.append(
                    Violation(
                        (p, "overlap"),
                        f"{fn}: {p} is stored through but two of its elements share memory: {p}[{_index(a)}] and "
                        f"{p}[{_index(b)}] are both at offset {at} ({_layout(shape, strides)}); programs would race on "
                        f"one address — allocate {p} with torch.empty(...) so that each element has memory of its own",
                    )
                )
        for acc in live:
            if not acc.terms:
                continue
            items, opaque = [], list(acc.opaque)
            for term in acc.terms:
                v = evaluate(term.expr, term.names, env)
                if v is None:
                    opaque.append(term.text)
                    continue
                extent = as_int(env.get(term.bound)) if term.bound else None
                items.append(Item(v, term.text, term.index, term.step, term.kind, term.vector, extent, term.bound, term.tiled))
            packable = not opaque and not acc.offsets and any(not (i.value == 1 and i.vector) for i in items)
            problem = judge(items, shape, strides, packable)
            if problem is not None:
                written = any(a.writes for a in live)
                out.append(_violation(fn, p, acc, problem, shape, strides, written, users))
    return out


def _device(fn, p, dev, first) -> Violation:
    return Violation((p, "device"), f"{fn}: {p} is on {dev} but {first[1]} is on {first[0]}; move all tensors to one device")


def _violation(fn, p, acc, prob: Problem, shape, strides, written: bool, users: dict) -> Violation:
    where = f"line {acc.line}"
    it = prob.item
    key = (p, prob.kind, acc.line, it.text if it else None)
    layout = _layout(shape, strides)
    if prob.kind == "unit":
        d, s = prob.dim, prob.at
        fix = (
            f"allocate {p} with unit inner stride (torch.empty({list(shape)})) and copy the result where it belongs "
            f"after the launch (a copy passed in its place would take the kernel's writes)"
            if written
            else f"pass {p}.contiguous() (a copy with unit inner stride)"
        )
        return Violation(
            key,
            f"{fn}: {p} is addressed as `... + {it.text}` ({where}), a unit step along dim {d}, but {p}.stride({d}) "
            f"is {s} ({layout}): {p}[{_index(prob.index)}] is at offset {s}, but `{it.text}` reaches offset 1 when its "
            f"index is 1 ({describe_offset(p, 1, shape, strides)}); {fix}",
        )
    if prob.kind == "packed":
        d = prob.dim
        run_dims, extent = prob.detail
        inner = f"dim {run_dims[0]}" if len(run_dims) == 1 else f"dims {run_dims[0]}..{run_dims[-1]}"
        fix = (
            f"allocate {p} packed (torch.empty({list(shape)})), or step dim {d} by its own stride argument in the kernel"
            if written
            else f"pass {p}.contiguous(), or step dim {d} by its own stride argument in the kernel"
        )
        return Violation(
            key,
            f"{fn}: {p} dim {d} has no term of its own in the address ({where}), so `{it.text}` walks into it from "
            f"{inner} ({extent} elements); that needs {p}.stride({d}) == {extent}, but it is {prob.at} ({layout}): "
            f"{p}[{_index(prob.index)}] is at offset {prob.at}, but `{it.text}` reaches offset {extent} when its index is "
            f"{extent} ({describe_offset(p, extent, shape, strides)}); {fix}",
        )
    if prob.kind == "width":
        dims, cap = prob.detail
        n = it.extent
        if not dims:
            along = f"{p} (a dim of size 1)"
        elif dims == (len(shape) - 1,):
            along = "its last dim"
        else:
            along = f"dims {dims[0]}..{dims[-1]} (flattened)"
        reach = (
            f": `{it.text}` reaches offset {prob.addressed} when its index is {cap} "
            f"({describe_offset(p, prob.addressed, shape, strides)})"
            if prob.addressed is not None
            else ""
        )
        return Violation(
            key,
            f"{fn}: the store through {p} ({where}) is masked by `< {it.bound}` = {n} along {along}, which hold only "
            f"{cap} elements ({layout}){reach}; the store would run past them — allocate {p} at least {n} wide",
        )
    # A step that differs from the stride of the dim it is read on.
    v = it.value
    step = it.step or "1"
    step_words = f"{step} = {v}" if step != str(v) else f"{v}"
    if prob.dim is None:
        return Violation(
            key,
            f"{fn}: `{it.text}` ({where}) steps {p} by {step_words}, which is the stride of no dim of {p} ({layout}): "
            f"`{it.text}` reaches offset {v} when its index is 1 ({describe_offset(p, v, shape, strides)}); pass the "
            f"stride of the dim it steps ({p}.stride(d))",
        )
    d, s = prob.dim, prob.at
    single = it.kind == "stride" and it.step.isidentifier()
    others = sorted(users.get(it.step, set()) - {p}) if single else []
    packed = _contiguous_strides(shape)[d] == v  # a packed copy would have the step's stride
    if others:
        # The argument steps another tensor too (V addressed with Q's strides): the kernel
        # needs a stride argument of p's own, or p the layout the others have.
        fix = f"{it.step} also steps {', '.join(others)}: step {p} by a stride argument of its own ({p}.stride({d}) = {s})"
    elif single:
        fix = f"pass {p}.stride({d}) = {s} as {it.step}"
    else:
        fix = f"a logical size used as a stride — pass {p}.stride({d}) to the kernel and step by it"
    if (others or not single) and packed:
        # Never a copy of a tensor the kernel writes: the writes would land in the copy.
        fix += f", or pass {p}.contiguous() (its dim {d} is then {v} apart)" if not written else (
            f", or allocate {p} packed (torch.empty({list(shape)}))"
        )
    return Violation(
        key,
        f"{fn}: `{it.text}` ({where}) steps {p} dim {d} by {step_words}, but {p}.stride({d}) is {s} ({layout}): "
        f"{p}[{_index(prob.index)}] is at offset {s}, but `{it.text}` reaches offset {v} when its index is 1 "
        f"({describe_offset(p, v, shape, strides)}); {fix}",
    )


def _check_descriptor(fn, p, desc, base, writes: bool) -> list[Violation]:
    try:
        shape, strides = _meta(base)
        dshape = [int(x) for x in desc.shape]
        dstrides = [int(x) for x in desc.strides]
    except Exception:  # noqa: BLE001 - not a tensor descriptor we can read
        return []
    if 0 in shape or len(dshape) != len(dstrides):
        return []
    out: list[Violation] = []
    if writes and overlaps(shape, strides):
        w = overlap_witness(shape, strides)
        if w is not None:
            a, b, at = w
            out.append(
                Violation(
                    (p, "overlap"),
                    f"{fn}: {p} is stored through but two elements of {p}.base share memory: [{_index(a)}] and "
                    f"[{_index(b)}] are both at offset {at} ({_layout(shape, strides)}); allocate its base with "
                    f"torch.empty(...)",
                )
            )
    items = [
        Item(dstrides[i], f"{p}.strides[{i}]", f"block index {i}", f"{p}.strides[{i}]", "stride", True, dshape[i], f"{p}.shape[{i}]")
        for i in range(len(dshape))
    ]
    prob = judge(items, shape, strides, packable=False)
    if prob is None:
        return out
    it = prob.item
    layout = _layout(shape, strides)
    fix = f"build it with TensorDescriptor.from_tensor({p}.base, block_shape) or from {p}.base's own shape and strides"
    if prob.kind == "width":
        dims, cap = prob.detail
        d = next((d for d in range(len(shape)) if strides[d] == it.value and shape[d] > 1), None)
        along = f"{p}.base dim {d} holds" if d is not None else "its base holds"
        msg = (
            f"{fn}: {it.bound} = {it.extent} but {along} only {cap} along {it.text} ({layout}); the descriptor "
            f"would reach past {p}.base — {fix}"
        )
    elif prob.dim is None:
        msg = (
            f"{fn}: {it.text} = {it.value} is the stride of no dim of {p}.base ({layout}): block index 1 along it "
            f"addresses offset {it.value} ({describe_offset(p + '.base', it.value, shape, strides)}); {fix}"
        )
    else:
        d, s = prob.dim, prob.at
        msg = (
            f"{fn}: {it.text} = {it.value}, but {p}.base.stride({d}) is {s} ({layout}): {p}.base[{_index(prob.index)}] "
            f"is at offset {s}, the descriptor addresses offset {it.value} "
            f"({describe_offset(p + '.base', it.value, shape, strides)}); {fix}"
        )
    out.append(Violation((p, "descriptor", prob.kind, it.text), msg))
    return out


class DerivedReporter:
    """The failure path of a derived contract: raise the first violation, or (warn mode) log
    each once (across threads too)."""

    def __init__(self, contract, mode: str) -> None:
        import threading

        self.contract = contract
        self.mode = mode
        self.warned: set = set()
        self._lock = threading.Lock()

    full = None  # the launch's check_launch, set by the generated check (see kernel.py)

    def __call__(self, violations, values: dict | None = None) -> None:
        if not violations:
            return
        if self.mode == "warn" and all(v.key in self.warned for v in violations):
            return  # each logged once already: nothing to word again
        if values is not None and self.full is not None:
            # A verdict read back from the table words the layout it was first given; the
            # messages are this launch's (a contiguous tensor's size-1 strides may differ).
            violations = self.full(dict(values)) or violations
        if self.mode == "warn":
            warn_once(self, list(violations))
            return
        raise StrideGuardError(violations[0].message) from None
