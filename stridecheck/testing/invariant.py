"""Layout tests: does a function give the same answers for the same values in another layout?

>>> from stridecheck.testing import assert_layout_invariant
>>> assert_layout_invariant(store_step, logits, cache, step)   # LayoutError for the founding bug

:func:`assert_layout_invariant` runs the function once on contiguous copies of its tensor
arguments (the *baseline*), then once per (tensor argument, layout) with that argument
re-materialised — same logical values — in another physical layout, in a buffer whose gaps and
guard zones hold poison (:mod:`stridecheck.testing.layouts` documents the layouts and the poison
values). It asserts that every run returns what the baseline returned, leaves every tensor
argument as the baseline left it, and writes no gap element.

Importing this module imports neither torch nor triton; they are imported when a function here
is called.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

__all__ = [
    "assert_layout_invariant",
    "LayoutError",
    "LayoutReport",
    "Variant",
    "DEFAULT_LAYOUTS",
    "EXTRA_LAYOUTS",
    "ALL_LAYOUTS",
]

# Copies of stridecheck.testing.layouts' names, kept here so that reading them imports no torch.
DEFAULT_LAYOUTS = ("padded_last", "padded_outer", "storage_offset")
EXTRA_LAYOUTS = ("transposed", "strided", "expanded")
ALL_LAYOUTS = DEFAULT_LAYOUTS + EXTRA_LAYOUTS


@dataclass(frozen=True)
class Variant:
    """One run of the function: ``argument`` re-materialised as ``layout``.

    ``status`` is ``"passed"``, ``"failed"``, ``"unsupported"`` (the function raised
    ``StrideGuardError``: a layout its ``@stride_guard`` contract declares unsupported) or
    ``"not_applicable"`` (the layout would equal the contiguous one, or an expanded view of an
    argument the function writes). ``problems`` lists what differed, one sentence each.
    """

    argument: str
    layout: str
    status: str
    problems: tuple[str, ...] = ()

    @property
    def detail(self) -> str:
        return "; ".join(self.problems)


@dataclass
class LayoutReport:
    """Every variant :func:`assert_layout_invariant` ran or skipped, in order."""

    function: str
    variants: list[Variant] = field(default_factory=list)

    def _with(self, status: str) -> list[Variant]:
        return [v for v in self.variants if v.status == status]

    @property
    def failures(self) -> list[Variant]:
        return self._with("failed")

    @property
    def unsupported(self) -> list[Variant]:
        return self._with("unsupported")

    @property
    def passed(self) -> list[Variant]:
        return self._with("passed")

    @property
    def not_applicable(self) -> list[Variant]:
        return self._with("not_applicable")

    @property
    def failing_pairs(self) -> list[tuple[str, str]]:
        """``(argument, layout)`` of every failure."""
        return [(v.argument, v.layout) for v in self.failures]

    def format(self) -> str:
        counts = (
            f"{len(self.passed)} passed, {len(self.unsupported)} declared unsupported, "
            f"{len(self.not_applicable)} not applicable"
        )
        lines = [f"{self.function}: {len(self.failures)} layout variant(s) fail ({counts})"]
        for v in self.failures:
            lines.append(f"  {v.argument} as {v.layout}:")
            lines.extend(f"    - {p}" for p in v.problems)
        if self.unsupported:
            lines.append("  declared unsupported (StrideGuardError), not failures:")
            lines.extend(f"    - {v.argument} as {v.layout}: {v.detail}" for v in self.unsupported)
        return "\n".join(lines)


class LayoutError(AssertionError):
    """A function's results depend on its arguments' layouts, or it wrote into a gap.

    ``report`` is the :class:`LayoutReport`; the message lists every failing (argument, layout)
    pair with the first differing logical index and the expected and actual values, or the gap
    element written.
    """

    def __init__(self, report: LayoutReport) -> None:
        self.report = report
        super().__init__(report.format())


# --- arguments as a flat list of tensor leaves -------------------------------------------------


def _is_tensor(x) -> bool:
    import torch

    return isinstance(x, torch.Tensor)


def _flatten(obj, path: str, out: list) -> None:
    if _is_tensor(obj):
        out.append((path, obj))
    elif isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _flatten(item, f"{path}[{i}]", out)
    elif isinstance(obj, dict):
        for key, item in obj.items():
            _flatten(item, f"{path}[{key!r}]", out)


def _rebuild(obj, leaves):
    """``obj`` with its tensor leaves replaced, in :func:`_flatten` order, from iterator ``leaves``."""
    if _is_tensor(obj):
        return next(leaves)
    if isinstance(obj, (list, tuple)):
        items = [_rebuild(item, leaves) for item in obj]
        if isinstance(obj, list):
            return items
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return type(obj)((key, _rebuild(item, leaves)) for key, item in obj.items())
    return obj


def _argument_names(fn, args: tuple, kwargs: dict) -> tuple[list[str], list[str]]:
    """Names of the positional and keyword arguments, from ``fn``'s signature where it has one."""
    positional = [f"args[{i}]" for i in range(len(args))]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return positional, list(kwargs)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"assert_layout_invariant: the arguments do not fit {_name(fn)}{sig}: {err}") from None
    i = 0
    for p in sig.parameters.values():
        if i >= len(args):
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional[i] = p.name
            i += 1
        elif p.kind == p.VAR_POSITIONAL:
            for j in range(len(args) - i):
                positional[i + j] = f"{p.name}[{j}]"
            break
    return positional, list(kwargs)


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


# --- the runs ------------------------------------------------------------------------------


@dataclass
class _Call:
    fn: Callable
    args: tuple
    kwargs: dict
    leaves: list  # [(name, tensor)] in _flatten order over args then kwargs
    atol: float
    rtol: float
    rng: tuple  # torch RNG states to restore before every run

    def arguments_with(self, tensors: list):
        it = iter(tensors)
        args = _rebuild(tuple(self.args), it)
        kwargs = _rebuild(dict(self.kwargs), it)
        return args, kwargs


@dataclass
class _Baseline:
    outputs: list  # [(path, value)]; tensors cloned
    after: list  # per leaf: its logical value after the call (contiguous clone)
    mutated: list  # per leaf: bool


def _outputs(result) -> list:
    flat: list = []

    def walk(obj, path):
        if _is_tensor(obj):
            flat.append((path, obj.detach().clone()))
        elif type(obj).__module__ == "numpy" and hasattr(obj, "shape"):
            import torch

            flat.append((path, torch.from_numpy(obj.copy()) if obj.shape else torch.tensor(obj.item())))
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                walk(getattr(obj, f.name), f"{path}.{f.name}")
        elif isinstance(obj, (list, tuple)):
            for i, item in enumerate(obj):
                walk(item, f"{path}[{i}]")
        elif isinstance(obj, dict):
            for key, item in obj.items():
                walk(item, f"{path}[{key!r}]")
        else:
            flat.append((path, obj))

    walk(result, "return value")
    return flat


def _set_rng(states) -> None:
    import torch

    cpu, cuda = states
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def _get_rng(leaves) -> tuple:
    import torch

    cuda = None
    if any(t.is_cuda for _, t in leaves) and torch.cuda.is_initialized():
        cuda = torch.cuda.get_rng_state_all()
    return torch.get_rng_state(), cuda


def _sync(leaves) -> None:
    import torch

    if any(t.is_cuda for _, t in leaves):
        torch.cuda.synchronize()


def _guard_error_type():
    try:
        from stridecheck.guard import StrideGuardError
    except ImportError:  # the guard is optional to the layout tests
        return ()
    return StrideGuardError


def _fmt_index(index: tuple) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _difference(what: str, expected, actual, atol: float, rtol: float) -> str | None:
    from stridecheck.testing.layouts import first_difference

    if _is_tensor(expected) != _is_tensor(actual):
        return f"{what}: expected {type(expected).__name__}, got {type(actual).__name__}"
    if not _is_tensor(expected):
        try:
            same = bool(expected == actual) or (expected != expected and actual != actual)
        except Exception:  # noqa: BLE001 - objects whose == does not give a bool
            same = expected is actual
        return None if same else f"{what}: expected {expected!r}, got {actual!r}"
    diff = first_difference(expected, actual, atol, rtol)
    if diff is None:
        return None
    index, want, got, count = diff
    if count < 0:
        return f"{what}: expected {want}, got {got}"
    return (
        f"{what} differs at {_fmt_index(index)}: expected {want!r}, got {got!r} "
        f"({count} of {expected.numel()} element(s) differ)"
    )


def _run(call: _Call, baseline: _Baseline | None, target: int, layout: str, stride0=()):
    """One run with leaf ``target`` as ``layout`` (the others contiguous); baseline when None.

    Returns ``(variant, mats, result)``.
    """
    from stridecheck.testing.layouts import materialise

    name = call.leaves[target][0] if target >= 0 else "*"
    mats = []
    for i, (_, t) in enumerate(call.leaves):
        if i == target:
            m = materialise(t, layout, stride0)
        else:
            m = materialise(t, "contiguous")
        mats.append(m)
    args, kwargs = call.arguments_with([m.view for m in mats])
    problems: list[str] = []
    result = None
    _set_rng(call.rng)
    try:
        result = call.fn(*args, **kwargs)
        _sync(call.leaves)
    except _guard_error_type() as err:
        if baseline is None:
            raise
        return Variant(name, layout, "unsupported", (str(err),)), mats, None
    except Exception as err:  # noqa: BLE001 - any failure on a layout is a finding
        if baseline is None:
            raise
        problems.append(f"raised {type(err).__name__}: {err}")
    else:
        if baseline is not None:
            got = _outputs(result)
            if len(got) != len(baseline.outputs) or [p for p, _ in got] != [p for p, _ in baseline.outputs]:
                problems.append(
                    f"return value has structure {[p for p, _ in got]}, "
                    f"expected {[p for p, _ in baseline.outputs]}"
                )
            else:
                for (path, want), (_, have) in zip(baseline.outputs, got):
                    p = _difference(path, want, have, call.atol, call.rtol)
                    if p:
                        problems.append(p)
            for i, m in enumerate(mats):
                p = _difference(
                    f"argument {call.leaves[i][0]} after the call", baseline.after[i], m.view, call.atol, call.rtol
                )
                if p:
                    problems.append(p)
    for i, m in enumerate(mats):
        count, writes = m.gap_writes(limit=1)
        if count:
            index, before, after = writes[0]
            problems.append(
                f"gap of {call.leaves[i][0]} ({m.layout}) written: buffer element "
                f"{m.describe_position(index)} changed from poison {before!r} to {after!r} "
                f"({count} gap element(s) written)"
            )
    status = "failed" if problems else "passed"
    return Variant(name, layout, status, tuple(problems)), mats, result


def _contract_layouts(fn, argument: str) -> tuple[str, ...]:
    """Extra layouts a ``@stride_guard`` contract on ``fn`` allows for ``argument``."""
    contract = getattr(fn, "__stride_contract__", None)
    if contract is None:
        contract = getattr(fn, "contract", None)
    rule = getattr(contract, "rule", None)
    if rule is None:
        return ()
    r = contract.rule(argument.split("[", 1)[0])
    if r is None or getattr(r, "kind", "tensor") == "stride":
        return ()
    extra = []
    if getattr(r, "inner_stride", 1) is None:
        extra += ["transposed", "strided"]
    if not getattr(r, "writes", True):
        extra.append("expanded")
    return tuple(extra)


def _variant_in_child(conn, call, baseline, target, layout, stride0) -> None:
    import faulthandler

    import torch

    # A crash here is expected and reported by the parent, with the variant that caused it.
    faulthandler.disable()
    # A forked child has none of the parent's OpenMP worker threads, and its first parallel
    # region would wait for them forever; one thread runs every torch CPU op inline.
    torch.set_num_threads(1)
    try:
        variant = _run(call, baseline, target, layout, stride0)[0]
    except BaseException as err:  # noqa: BLE001 - report, do not lose it, in the parent
        variant = Variant(call.leaves[target][0], layout, "failed", (f"raised {type(err).__name__}: {err}",))
    conn.send(variant)
    conn.close()


def _run_isolated(call, baseline, target, layout, stride0, method: str) -> Variant:
    import multiprocessing
    import signal

    if method == "spawn":
        import torch.multiprocessing as tmp

        ctx = tmp.get_context("spawn")
    else:
        ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_variant_in_child, args=(send, call, baseline, target, layout, stride0))
    try:
        with warnings.catch_warnings():
            # Python 3.12 warns on fork() from a threaded process (torch's pools); torch resets
            # its pools in a forked child, which runs one variant and exits.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            proc.start()
    except Exception as err:  # noqa: BLE001 - e.g. a function spawn cannot pickle
        raise TypeError(
            f"assert_layout_invariant(isolate={method!r}) could not start a process for "
            f"{_name(call.fn)}: {type(err).__name__}: {err} (spawn needs a function importable "
            "by its module path, and picklable arguments)"
        ) from err
    send.close()
    variant = None
    try:
        variant = receive.recv()
    except EOFError:
        pass
    proc.join()
    if variant is not None:
        return variant
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            how = f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            how = f"signal {-code}"
    else:
        how = f"exit code {code}"
    return Variant(call.leaves[target][0], layout, "failed", (f"the process running it died: {how}",))


def assert_layout_invariant(
    fn: Callable,
    *args: Any,
    layouts: Sequence[str] | str | None = None,
    atol: float = 0,
    rtol: float = 0,
    isolate: bool | str = False,
    **kwargs: Any,
) -> LayoutReport:
    """Assert that ``fn(*args, **kwargs)`` does not depend on its tensor arguments' layouts.

    1. The baseline: ``fn`` is called with a contiguous copy of every tensor argument (tensors
       anywhere in the arguments, also inside lists, tuples and dicts). The caller's tensors are
       only read, never passed to ``fn``, so they are never modified — also not by a function
       that writes its arguments. Aliasing between arguments is not kept: each gets its own copy.
       Copies are detached (no autograd history); tensors inside other objects (a dataclass
       argument, say) are passed through as they are, not re-laid out.
    2. For each tensor argument and each layout, ``fn`` is called again with that argument
       re-materialised in the layout (the same logical values) and every other tensor argument a
       fresh contiguous copy.

    Return values are compared through lists, tuples, dicts and dataclasses, tensors and numpy
    arrays element by element, other objects with ``==``.

    Every copy, baseline included, lives in a buffer whose gaps and guard zones hold poison
    (NaN for floating and complex dtypes, the minimum of signed and the maximum of unsigned
    integer dtypes, True for bool; see :mod:`stridecheck.testing.layouts`). torch's random number
    generator state is restored before each call, so functions that draw from it compare equal.

    Layouts (names; :data:`DEFAULT_LAYOUTS` by default, which keep ``stride(-1) == 1``):
    ``padded_last`` (each row padded by 3 elements), ``padded_outer`` (a view into a buffer
    larger along every dimension), ``storage_offset`` (3 elements in), and, on request or where
    ``fn``'s ``@stride_guard`` contract allows them for an argument (``inner_stride=None``; not
    a written argument), ``transposed`` (dimensions stored in reverse order, inner stride != 1),
    ``strided`` (a ``[::2]`` slice along every dimension, inner stride 2) and ``expanded``
    (stride 0 along size-1 or constant dimensions; only for arguments the baseline left
    unchanged). A layout that would equal the contiguous one is skipped (``not_applicable``).
    ``stridecheck.testing.layouts.LAYOUT_DOCS`` describes each in a sentence.

    The keywords ``layouts``, ``atol``, ``rtol`` and ``isolate`` are this function's; an
    argument of ``fn`` with one of these names must be passed positionally (or bound with
    ``functools.partial``).

    Args:
        fn: the function under test (a launcher, or ``kernel[grid]``); works on CPU tensors (the
            Triton interpreter) and CUDA tensors alike.
        *args, **kwargs: its arguments; tensors of any shape, dtype and device.
        layouts: layout names to use instead of the defaults (a name or a sequence of names).
        atol, rtol: tolerances of the comparisons (``torch.isclose``); 0 and 0 means exact, with
            NaN equal to NaN.
        isolate: run each variant in a child process (``True``: fork, or spawn when a tensor is
            on CUDA; ``"spawn"``/``"fork"`` to choose), so that a stray access that kills the
            process is reported as a failure of that variant.

    Returns:
        The :class:`LayoutReport` (passed, declared unsupported and skipped variants).

    Raises:
        LayoutError: (an ``AssertionError``) some (argument, layout) pair returned other values
            than the baseline, left a tensor argument different, wrote a gap element, or raised.
            A ``StrideGuardError`` on a layout is not a failure: it is listed as declared
            unsupported.
        ValueError: no tensor argument, or an unknown layout name.
        TypeError: arguments that do not fit ``fn``'s signature; an isolated run that cannot
            start.
        Exception: whatever ``fn`` raises on the baseline (contiguous copies) is re-raised.
    """
    from stridecheck.testing.layouts import ALL_LAYOUTS as known, constant_dims, placement

    if isinstance(layouts, str):
        layouts = (layouts,)
    if layouts is not None:
        layouts = tuple(layouts)
        unknown = [name for name in layouts if name not in known]
        if unknown:
            raise ValueError(f"unknown layout(s) {unknown}; known layouts: {', '.join(known)}")
    if isolate not in (False, True, "fork", "spawn"):
        raise ValueError(f"isolate must be False, True, 'fork' or 'spawn', got {isolate!r}")

    positional, keywords = _argument_names(fn, args, kwargs)
    leaves: list = []
    for name, value in zip(positional, args):
        _flatten(value, name, leaves)
    for name in keywords:
        _flatten(kwargs[name], name, leaves)
    if not leaves:
        raise ValueError(f"assert_layout_invariant({_name(fn)}, ...): no tensor argument to re-lay out")
    call = _Call(fn, args, kwargs, leaves, atol, rtol, _get_rng(leaves))
    report = LayoutReport(_name(fn))

    # The baseline, on contiguous copies in guarded buffers: its own stray writes are reported.
    _, mats, result = _run(call, None, -1, "contiguous")
    baseline = _Baseline(
        outputs=_outputs(result),
        after=[m.view.clone() for m in mats],
        mutated=[],
    )
    for i, (name, t) in enumerate(leaves):
        baseline.mutated.append(_difference("", t, baseline.after[i], 0, 0) is not None)
        count, writes = mats[i].gap_writes(limit=1)
        if count:
            index, before, after = writes[0]
            report.variants.append(
                Variant(
                    name,
                    "contiguous",
                    "failed",
                    (
                        f"gap of {name} (contiguous baseline) written: buffer element "
                        f"{mats[i].describe_position(index)} changed from poison {before!r} to "
                        f"{after!r} ({count} gap element(s) written)",
                    ),
                )
            )
    del mats, result

    method = None
    if isolate:
        method = isolate if isinstance(isolate, str) else ("spawn" if any(t.is_cuda for _, t in leaves) else "fork")
    for i, (name, t) in enumerate(leaves):
        names = layouts if layouts is not None else DEFAULT_LAYOUTS + _contract_layouts(fn, name)
        for layout in names:
            stride0 = ()
            if layout == "expanded":
                if baseline.mutated[i]:
                    report.variants.append(
                        Variant(name, layout, "not_applicable", ("the function writes this argument",))
                    )
                    continue
                stride0 = constant_dims(t)
            if placement(layout, tuple(t.shape), stride0) is None:
                report.variants.append(
                    Variant(name, layout, "not_applicable", ("same addresses as the contiguous layout",))
                )
                continue
            if method:
                variant = _run_isolated(call, baseline, i, layout, stride0, method)
            else:
                variant = _run(call, baseline, i, layout, stride0)[0]
            report.variants.append(variant)
    if report.failures:
        raise LayoutError(report)
    return report
