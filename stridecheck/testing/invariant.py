"""The layout assertion: the same values in another physical layout must give the same results.

>>> from stridecheck.testing import assert_layout_invariant
>>> assert_layout_invariant(store_step, logits, cache, step)   # LayoutError for the founding bug

:func:`assert_layout_invariant` runs the function once on contiguous copies of its tensor
arguments (the *baseline*), then once per (tensor argument, layout) with that argument
re-materialised — same logical values — in another physical layout, in a buffer whose gaps and
guard zones hold poison (:mod:`stridecheck.testing.layouts` documents the layouts and the
poison). Each run must return what the baseline returned, leave every tensor argument as the
baseline left it (write what it wrote, and only that), and write no gap element.
:mod:`stridecheck.testing.compare` says what "the same" means (torch's tolerances by dtype).

Importing this module imports neither torch nor triton; they are imported when a function here
is called.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
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

# The layout names, also in stridecheck.testing.layouts (which imports torch): a test that
# keeps the two in step is in tests/testing/test_layouts.py.
DEFAULT_LAYOUTS = ("padded_last", "padded_outer", "storage_offset", "size_one_strides", "transposed", "strided")
EXTRA_LAYOUTS = ("expanded",)
ALL_LAYOUTS = DEFAULT_LAYOUTS + EXTRA_LAYOUTS
_NON_UNIT_INNER = ("transposed", "strided")

# An exception that says it refuses a layout: a launcher's own check, before any launch.
_REFUSAL = re.compile(r"stride|contiguous|layout|dense|row.major", re.IGNORECASE)


@dataclass(frozen=True)
class Variant:
    """One run of the function: ``argument`` re-materialised as ``layout``.

    ``status``:

    * ``"passed"``;
    * ``"failed"``: ``problems`` lists what differed, one sentence each;
    * ``"unsupported"``: the function refused the layout before writing anything (the guard's
      ``StrideGuardError``, or an exception whose message names strides, contiguity or the
      layout), or — for an argument the function writes, in a layout with a non-unit inner
      stride, which a kernel need not support — wrote it otherwise than the baseline;
    * ``"not_applicable"``: the layout would equal the contiguous one, or is an expanded view
      of an argument the function writes.

    ``strides`` are the argument's strides in this layout. With a ``reference``,
    ``reference_agrees_with`` is ``"baseline"``, ``"layout"``, ``"neither"`` or ``"both"`` (the
    runs differ by less than the tolerance of the comparison with the reference) for a failed
    variant whose values differ, and ``reference_detail`` says it in a sentence.
    """

    argument: str
    layout: str
    status: str
    problems: tuple[str, ...] = ()
    strides: tuple[int, ...] | None = None
    reference_agrees_with: str | None = None
    reference_detail: str | None = None

    @property
    def detail(self) -> str:
        parts = list(self.problems)
        if self.reference_detail:
            parts.append(self.reference_detail)
        return "; ".join(parts)

    @property
    def confirmed(self) -> bool:
        """A reference says one of the runs is wrong (not only that they differ by rounding)."""
        return self.reference_agrees_with in ("baseline", "layout", "neither")


@dataclass
class LayoutReport:
    """Every variant :func:`assert_layout_invariant` ran or skipped, in order."""

    function: str
    variants: list[Variant] = field(default_factory=list)
    reference: str | None = None

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
            where = f" (strides {v.strides})" if v.strides is not None else ""
            lines.append(f"  {v.argument} as {v.layout}{where}:")
            lines.extend(f"    - {p}" for p in v.problems)
            if v.reference_detail:
                lines.append(f"    verdict: {v.reference_detail}")
        if self.unsupported:
            lines.append("  declared unsupported, not failures:")
            lines.extend(f"    - {v.argument} as {v.layout}: {v.problems[0]}" for v in self.unsupported)
        return "\n".join(lines)


class LayoutError(AssertionError):
    """A function's results depend on its arguments' layouts, or it wrote into a gap.

    ``report`` is the :class:`LayoutReport`; the message lists every failing (argument, layout)
    pair: the first differing logical index with the value the contiguous baseline gave and the
    value the layout gave, which run modified which argument, or the gap element written.
    """

    def __init__(self, report: LayoutReport) -> None:
        self.report = report
        super().__init__(report.format())


# Shown under the package's name in tracebacks and reprs: that is where users import them from.
for _cls in (Variant, LayoutReport, LayoutError):
    _cls.__module__ = "stridecheck.testing"


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


def _argument_names(fn, args: tuple, kwargs: dict, label: str) -> tuple[list[str], list[str]]:
    """Names of the positional and keyword arguments, from ``fn``'s signature where it has one."""
    positional = [f"args[{i}]" for i in range(len(args))]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return positional, list(kwargs)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"assert_layout_invariant: the arguments do not fit {label}{sig}: {err}") from None
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
    """A readable name: the qualified name, or where a lambda was defined."""
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    code = getattr(fn, "__code__", None)
    if qualname and qualname.endswith("<lambda>") and code is not None:
        return f"<lambda at {os.path.basename(code.co_filename)}:{code.co_firstlineno}>"
    return qualname or repr(fn)


# --- the runs ------------------------------------------------------------------------------


@dataclass
class _Call:
    fn: Callable
    args: tuple
    kwargs: dict
    leaves: list  # [(name, tensor)] in _flatten order over args then kwargs
    tolerance: Any  # compare.Tolerance
    rng: tuple  # torch RNG states to restore before every run
    reference: Callable | None = None
    reference_name: str | None = None
    reference_cache: Any = None  # _ReferenceRun, computed at the first failure that needs it

    def arguments_with(self, tensors: list):
        it = iter(tensors)
        args = _rebuild(tuple(self.args), it)
        kwargs = _rebuild(dict(self.kwargs), it)
        return args, kwargs

    def __getstate__(self):
        # A child process computes its own reference run, if it needs one.
        return {**self.__dict__, "reference_cache": None}


@dataclass
class _Baseline:
    outputs: list  # [(path, value)]; tensors cloned
    after: list  # per leaf: its logical value after the call (contiguous clone)
    mutated: list  # per leaf: did the call change it (bits)?


@dataclass
class _ReferenceRun:
    outputs: list | None  # [(path, value)], None when the reference raised
    after: list  # per leaf
    error: str | None = None


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


def _invoke(fn, call: _Call, tensors: list):
    """``fn`` on ``call``'s arguments with ``tensors`` as the leaves: ``(result, exception)``."""
    __tracebackhide__ = True
    args, kwargs = call.arguments_with(tensors)
    _set_rng(call.rng)
    try:
        result = fn(*args, **kwargs)
        _sync(call.leaves)
    except Exception as err:  # noqa: BLE001 - the caller decides what an exception means
        return None, err
    return result, None


def _exception_text(err: BaseException) -> str:
    text = " ".join(str(err).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _same_bits(a, b) -> bool:
    from stridecheck.testing.compare import Tolerance, difference

    return difference(a, b, Tolerance(exact=True)) is None


def _value_difference(what: str, baseline_value, value, run: str, verb: str, call: _Call) -> str | None:
    """A sentence saying how ``value`` (from ``run``) differs from the baseline's, or None."""
    from stridecheck.testing.compare import difference, format_index, format_value

    if _is_tensor(baseline_value) != _is_tensor(value):
        return (
            f"{what}: the contiguous baseline {verb} a {type(baseline_value).__name__}, "
            f"{run} {verb} a {type(value).__name__}"
        )
    if not _is_tensor(baseline_value):
        try:
            same = bool(baseline_value == value) or (baseline_value != baseline_value and value != value)
        except Exception:  # noqa: BLE001 - objects whose == does not give a bool
            same = baseline_value is value
        if same:
            return None
        return f"{what}: the contiguous baseline {verb} {baseline_value!r}, {run} {verb} {value!r}"
    diff = difference(baseline_value, value, call.tolerance)
    if diff is None:
        return None
    if diff.mismatch:
        return f"{what}: the contiguous baseline {verb} a tensor of {diff.mismatch[0]}, {run} {verb} {diff.mismatch[1]}"
    sentence = (
        f"{what} differs at {format_index(diff.index)}: the contiguous baseline {verb} "
        f"{format_value(diff.expected, diff.dtype)}, {run} {verb} {format_value(diff.actual, diff.dtype)} "
        f"({diff.count} of {diff.numel} element(s) differ"
    )
    floating = diff.dtype is not None and (diff.dtype.is_floating_point or diff.dtype.is_complex)
    if floating and diff.max_abs is not None and diff.max_abs != float("inf"):
        sentence += f", by up to {diff.max_abs:.3g}"
    sentence += ")"
    if diff.within_few_ulp:
        sentence += _rounding_hint(diff, call.tolerance)
    return sentence


def _rounding_hint(diff, tolerance) -> str:
    dtype = str(diff.dtype).removeprefix("torch.")
    hint = (
        f"; at most {diff.max_ulp:.3g} ulp of {dtype} apart: the size of a change of rounding "
        f"(another summation order), not of a misplaced element. The comparison was "
        f"{tolerance.describe(diff.dtype)}"
    )
    if tolerance.exact:
        return hint + "; without exact=True (and atol=rtol=0) it follows torch.testing.assert_close's tolerances"
    return hint + "; pass larger atol=/rtol= if the function may round differently in another layout"


def _first_change(original, after) -> str:
    """Where ``after`` first differs from ``original`` (same shape), as ``[i, j]: a -> b``."""
    from stridecheck.testing.compare import Tolerance, difference, format_index, format_value

    diff = difference(original, after, Tolerance(exact=True))
    if diff is None or diff.mismatch:
        return ""
    return (
        f" (first change at {format_index(diff.index)}: {format_value(diff.expected, diff.dtype)} -> "
        f"{format_value(diff.actual, diff.dtype)}; {diff.count} of {diff.numel} element(s))"
    )


@dataclass
class _Outcome:
    """What one run did: its materialised arguments, its result or exception."""

    mats: list
    result: Any = None
    error: BaseException | None = None


def _materialise_all(call: _Call, target: int, layout: str, stride0=()) -> list:
    from stridecheck.testing.layouts import materialise

    mats = []
    for i, (_, t) in enumerate(call.leaves):
        mats.append(materialise(t, layout, stride0) if i == target else materialise(t, "contiguous"))
    return mats


def _run(call: _Call, target: int, layout: str, stride0=()) -> _Outcome:
    mats = _materialise_all(call, target, layout, stride0)
    result, error = _invoke(call.fn, call, [m.view for m in mats])
    return _Outcome(mats, result, error)


def _gap_problem(argument: str, m, run: str) -> str | None:
    """A sentence for the first gap element of ``m`` that ``run`` wrote, or None."""
    count, writes = m.gap_writes(limit=1)
    if not count:
        return None
    index, before, after = writes[0]
    return (
        f"{run} wrote into the gap of {argument}'s buffer: element {m.describe_position(index)} "
        f"changed from poison {before!r} to {after!r} ({count} gap element(s) written)"
    )


def _reference_run(call: _Call) -> _ReferenceRun:
    """The reference on fresh contiguous copies of the arguments, once per call."""
    if call.reference_cache is None:
        import torch

        copies = [t.detach().clone(memory_format=torch.contiguous_format) for _, t in call.leaves]
        result, error = _invoke(call.reference, call, copies)
        if error is not None:
            call.reference_cache = _ReferenceRun(None, copies, _exception_text(error))
        else:
            call.reference_cache = _ReferenceRun(_outputs(result), copies)
    return call.reference_cache


def _reference_verdict(call: _Call, baseline: _Baseline, outcome: _Outcome, items: list, run: str):
    """``(agrees_with, sentence)`` for the differing ``items`` of one failed run, or ``(None, ...)``.

    ``items``: ``("return", k)`` for the k-th flattened output, ``("argument", j)`` for leaf j's
    state after the call.
    """
    import torch

    from stridecheck.testing.compare import Tolerance, difference

    ref = _reference_run(call)
    label = f"the reference ({call.reference_name})"
    if ref.error is not None:
        return None, f"{label} raised {ref.error}: no verdict"
    # Two implementations agree within the comparison's tolerance; exact is meaningless here.
    tolerance = Tolerance() if call.tolerance.exact else call.tolerance
    got = _outputs(outcome.result) if outcome.error is None else None
    base_ok, layout_ok = True, True
    base_off, layout_off = 0.0, 0.0
    for kind, k in items:
        if kind == "return":
            if ref.outputs is None or [p for p, _ in ref.outputs] != [p for p, _ in baseline.outputs]:
                return None, f"{label} returned {[p for p, _ in (ref.outputs or [])]}, not the function's structure: no verdict"
            want, base, mine = ref.outputs[k][1], baseline.outputs[k][1], got[k][1]
        else:
            want, base, mine = ref.after[k], baseline.after[k], outcome.mats[k].view
        if not _is_tensor(base):
            b, m = base == want, mine == want
            base_ok, layout_ok = base_ok and bool(b), layout_ok and bool(m)
            continue
        if not _is_tensor(want):
            return None, f"{label} gave a {type(want).__name__} where the function gave a tensor: no verdict"
        want = want.detach().to(device=base.device, dtype=base.dtype)
        if tuple(want.shape) != tuple(base.shape):
            return None, f"{label} gave shape {tuple(want.shape)} where the function gave {tuple(base.shape)}: no verdict"
        for side, value in (("base", base), ("layout", mine)):
            diff = difference(want, value, tolerance)
            if diff is None:
                continue
            off = diff.max_abs if diff.max_abs is not None else float("inf")
            if side == "base":
                base_ok, base_off = False, max(base_off, off)
            else:
                layout_ok, layout_off = False, max(layout_off, off)
    if base_ok and layout_ok:
        return "both", (
            f"{label} agrees with both runs ({tolerance.describe(_dtype_of(items, baseline))}): "
            "they differ by less than that tolerance, not by a wrong result"
        )
    if base_ok:
        return "baseline", (
            f"{label} agrees with the contiguous baseline: {run} is wrong "
            f"(largest difference from the reference: {base_off:.3g} against {layout_off:.3g})"
        )
    if layout_ok:
        return "layout", (
            f"{label} agrees with {run}: the contiguous baseline is wrong "
            f"(largest difference from the reference: {base_off:.3g} against {layout_off:.3g})"
        )
    return "neither", (
        f"{label} agrees with neither run: both are wrong (largest difference from the reference: "
        f"the baseline {base_off:.3g}, {run} {layout_off:.3g})"
    )


def _dtype_of(items, baseline):
    import torch

    for kind, k in items:
        value = baseline.outputs[k][1] if kind == "return" else baseline.after[k]
        if _is_tensor(value):
            return value.dtype
    return torch.float32


def _judge(call: _Call, baseline: _Baseline, target: int, layout: str, outcome: _Outcome, write_through: bool) -> Variant:
    """The verdict on one run (leaf ``target`` as ``layout``) against the baseline.

    ``write_through``: the target is an argument the baseline wrote, in a layout with a non-unit
    inner stride; such a run fails only if the writes do not reach the caller's tensor.
    """
    name = call.leaves[target][0]
    run = f"{name} as {layout}"
    strides = tuple(outcome.mats[target].view.stride())
    err = outcome.error
    mutated = [not _same_bits(t, m.view) for (_, t), m in zip(call.leaves, outcome.mats)]
    gaps = [p for p in (_gap_problem(a, m, run) for (a, _), m in zip(call.leaves, outcome.mats)) if p]
    if err is not None:
        if isinstance(err, _guard_error_type() or ()):
            return Variant(name, layout, "unsupported", (f"refused by @stride_guard: {_exception_text(err)}",), strides)
        if _REFUSAL.search(str(err)) and not any(mutated) and not gaps:
            return Variant(
                name, layout, "unsupported", (f"refused before writing anything: {_exception_text(err)}",), strides
            )
        return Variant(name, layout, "failed", (f"{run} raised {_exception_text(err)}", *gaps), strides)

    problems: list[str] = []
    items: list = []
    got = _outputs(outcome.result)
    if [p for p, _ in got] != [p for p, _ in baseline.outputs]:
        problems.append(
            f"the contiguous baseline returned {[p for p, _ in baseline.outputs]}, {run} returned {[p for p, _ in got]}"
        )
    else:
        for k, ((path, want), (_, have)) in enumerate(zip(baseline.outputs, got)):
            p = _value_difference(path, want, have, run, "gave", call)
            if p:
                problems.append(p)
                items.append(("return", k))
    lost_writes = False
    for j, ((arg, original), m) in enumerate(zip(call.leaves, outcome.mats)):
        if baseline.mutated[j] and not mutated[j]:
            lost_writes = lost_writes or j == target
            problems.append(
                f"the contiguous baseline modified argument {arg}{_first_change(original, baseline.after[j])}, "
                f"{run} left it unchanged"
            )
            items.append(("argument", j))
        elif mutated[j] and not baseline.mutated[j]:
            problems.append(
                f"{run} modified argument {arg}{_first_change(original, m.view)}, "
                "the contiguous baseline left it unchanged"
            )
            items.append(("argument", j))
        elif mutated[j]:
            p = _value_difference(f"argument {arg} after the call", baseline.after[j], m.view, run, "left", call)
            if p:
                problems.append(p + " (both runs wrote it)")
                items.append(("argument", j))
    problems.extend(gaps)
    if not problems:
        return Variant(name, layout, "passed", (), strides)
    if write_through and not lost_writes:
        why = (
            f"{name}, which the function writes, has a non-unit inner stride here (a kernel may assume "
            "stride(-1) == 1 for a tensor it writes; @stride_guard refuses such tensors before the launch)"
        )
        return Variant(name, layout, "unsupported", (why, *problems), strides)
    agrees, sentence = None, None
    if call.reference is not None and items:
        try:
            agrees, sentence = _reference_verdict(call, baseline, outcome, items, run)
        except Exception as err:  # noqa: BLE001 - a verdict that cannot be had is said, not raised
            sentence = f"the reference's result could not be compared: {_exception_text(err)}: no verdict"
    return Variant(name, layout, "failed", tuple(problems), strides, agrees, sentence)


def _contract_rule(fn, argument: str):
    """``(allows a non-unit inner stride, read-only)`` from a ``@stride_guard`` contract, or None."""
    contract = getattr(fn, "__stride_contract__", None)
    if contract is None:
        contract = getattr(fn, "contract", None)
    if getattr(contract, "rule", None) is None:
        return None
    r = contract.rule(argument.split("[", 1)[0])
    if r is None or getattr(r, "kind", "tensor") == "stride":
        return None
    return getattr(r, "inner_stride", 1) is None, not getattr(r, "writes", True)


def _run_variant(call: _Call, baseline: _Baseline, target: int, layout: str, stride0, write_through: bool) -> Variant:
    outcome = _run(call, target, layout, stride0)
    return _judge(call, baseline, target, layout, outcome, write_through)


def _variant_in_child(conn, call, baseline, target, layout, stride0, write_through) -> None:
    import faulthandler

    import torch

    # A crash here is expected and reported by the parent, with the variant that caused it.
    faulthandler.disable()
    # A forked child has none of the parent's OpenMP worker threads, and its first parallel
    # region would wait for them forever; one thread runs every torch CPU op inline.
    torch.set_num_threads(1)
    try:
        variant = _run_variant(call, baseline, target, layout, stride0, write_through)
    except BaseException as err:  # noqa: BLE001 - report, do not lose it, in the parent
        variant = Variant(call.leaves[target][0], layout, "failed", (f"raised {_exception_text(err)}",))
    conn.send(variant)
    conn.close()


def _run_isolated(call, baseline, target, layout, stride0, write_through, method: str) -> Variant:
    import multiprocessing
    import signal

    if method == "spawn":
        import torch.multiprocessing as tmp

        ctx = tmp.get_context("spawn")
    else:
        ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_variant_in_child, args=(send, call, baseline, target, layout, stride0, write_through)
    )
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
    atol: float | None = None,
    rtol: float | None = None,
    exact: bool = False,
    reference: Callable | None = None,
    name: str | None = None,
    isolate: bool | str = False,
    **kwargs: Any,
) -> LayoutReport:
    """Assert that ``fn(*args, **kwargs)`` does not depend on its tensor arguments' layouts.

    1. The baseline: ``fn`` is called with a contiguous copy of every tensor argument (tensors
       anywhere in the arguments, also inside lists, tuples and dicts). The caller's tensors are
       only read, never passed to ``fn``, so they are never modified — also not by a function
       that writes its arguments. An argument whose copy the baseline changed is *written*; the
       others are *read-only*. Aliasing between arguments is not kept: each gets its own copy.
       Copies are detached (no autograd history); tensors inside other objects (a dataclass
       argument, say) are passed through as they are, not re-laid out.
    2. For each tensor argument and each layout, ``fn`` is called again with that argument
       re-materialised in the layout (the same logical values) and every other tensor argument a
       fresh contiguous copy. Each run must return what the baseline returned, leave every
       argument as the baseline left it — modify the arguments the baseline modified, the same
       way, and no other — and write no gap element.

    Every copy, baseline included, lives in a buffer whose gaps and guard zones hold poison
    (NaN for floating and complex dtypes, -1 for signed and the maximum of unsigned integer
    dtypes, True for bool; see :mod:`stridecheck.testing.layouts`). torch's random number
    generator state is restored before each call, so functions that draw from it compare equal.

    Layouts (``stridecheck.testing.layouts.LAYOUT_DOCS`` describes each), by default:

    * for every argument, those whose last dimension keeps stride 1: ``padded_last`` (each row
      padded by 3 elements), ``padded_outer`` (a view into a buffer larger along every
      dimension), ``storage_offset`` (3 elements in), ``size_one_strides`` (stride 0 on every
      dimension of size 1, which PyTorch leaves arbitrary: a kernel that reads such a stride,
      say a row stride taken from a ``(B, H, 1, D)`` tensor's dimension 2, gives other answers);
    * ``transposed`` (dimensions stored in reverse order) and ``strided`` (a ``[::2]`` slice
      along every dimension): fully checked for read-only arguments, which a function can always
      support (a copy does); for a written argument a kernel may assume ``stride(-1) == 1``, so
      there the run fails only if the writes do not reach the caller's tensor (written into a
      copy, say), and other differences are listed as unsupported;
    * ``expanded`` (stride 0 along size-1 and constant dimensions) only on request or where the
      function's ``@stride_guard`` contract declares the argument read-only; never for a written
      argument.

    ``layouts=`` replaces the defaults: every named layout, fully checked, for every argument
    (``expanded`` still only for read-only ones). A ``@stride_guard`` contract with
    ``inner_stride=None`` makes ``transposed`` and ``strided`` fully checked for that argument.
    A layout that would equal the contiguous one is skipped (``not_applicable``).

    A run that raises the guard's ``StrideGuardError``, or an exception whose message names
    strides, contiguity or the layout (``stride``, ``contiguous``, ``layout``, ``dense``,
    ``row-major``) without having written anything, is a refusal: listed as declared
    unsupported, not as a failure. Any other exception on a layout is a failure.

    Comparison (:mod:`stridecheck.testing.compare`): return values through lists, tuples, dicts
    and dataclasses, tensors and numpy arrays element by element, other objects with ``==``.
    Floating and complex tensors by default as ``torch.testing.assert_close`` compares them, with
    torch's tolerances for their dtype (float32: ``rtol=1.3e-6, atol=1e-5``); integers, booleans
    (indices, counts, masks) and float8 exactly; NaN equals NaN everywhere. A failure within a
    few ulp says so and names the keyword that would admit it.

    The keywords ``layouts``, ``atol``, ``rtol``, ``exact``, ``reference``, ``name`` and
    ``isolate`` are this function's; an argument of ``fn`` with one of these names must be passed
    positionally (or bound with ``functools.partial``).

    Args:
        fn: the function under test (a launcher, or ``kernel[grid]``); works on CPU tensors (the
            Triton interpreter, ``TRITON_INTERPRET=1``) and CUDA tensors alike.
        *args, **kwargs: its arguments; tensors of any shape, dtype and device.
        layouts: layout names to use instead of the defaults (a name or a sequence of names).
        atol, rtol: tolerances for every numeric dtype (``|a - b| <= atol + rtol * |b|``); one
            given alone sets the other to 0; both 0 is ``exact``. Default: torch's by dtype.
        exact: equal bits (-0.0 differs from 0.0; NaN equals any NaN), for every dtype.
        reference: a function with ``fn``'s signature that computes the right answer (torch's own
            op, say). It is called, on contiguous copies, only when a variant fails, and says
            which side is right: each failure's ``reference_agrees_with`` is ``"baseline"``,
            ``"layout"``, ``"neither"`` or ``"both"``. Its values are compared with the
            tolerances above (torch's defaults where ``exact``), after conversion to the
            function's dtype; its writes to its arguments are compared too (a reference that
            writes nothing says that a write is a side effect).
        name: the function's name in the report (default: its qualified name, or where a lambda
            was defined).
        isolate: run each variant in a child process (``True``: fork, or spawn when a tensor is
            on CUDA; ``"spawn"``/``"fork"`` to choose), so that a stray access that kills the
            process is reported as a failure of that variant.

    Returns:
        The :class:`LayoutReport` (passed, declared unsupported and skipped variants).

    Raises:
        LayoutError: (an ``AssertionError``) some (argument, layout) pair returned other values
            than the baseline, left a tensor argument otherwise than the baseline did (or wrote
            one the baseline did not write), wrote a gap element, or raised. The baseline's own
            writes into a gap are failures too (layout ``"contiguous"``).
        ValueError: no tensor argument, an unknown layout name, a bad tolerance.
        TypeError: arguments that do not fit ``fn``'s signature; an isolated run that cannot
            start.
        Exception: whatever ``fn`` raises on the baseline (contiguous copies) is re-raised.
    """
    __tracebackhide__ = True  # pytest shows the caller's line and the report, not this module
    report = _check(fn, args, kwargs, layouts, atol, rtol, exact, reference, name, isolate)
    if report.failures:
        raise LayoutError(report)
    return report


def _check(fn, args, kwargs, layouts, atol, rtol, exact, reference, name, isolate) -> LayoutReport:
    __tracebackhide__ = True
    from stridecheck.testing.compare import Tolerance
    from stridecheck.testing.layouts import ALL_LAYOUTS as known, constant_dims, placement

    if isinstance(layouts, str):
        layouts = (layouts,)
    if layouts is not None:
        layouts = tuple(layouts)
        unknown = [n for n in layouts if n not in known]
        if unknown:
            raise ValueError(f"unknown layout(s) {unknown}; known layouts: {', '.join(known)}")
    if isolate not in (False, True, "fork", "spawn"):
        raise ValueError(f"isolate must be False, True, 'fork' or 'spawn', got {isolate!r}")
    if reference is not None and not callable(reference):
        raise TypeError(f"reference must be a callable with the function's signature, got {reference!r}")
    tolerance = Tolerance.from_arguments(atol, rtol, exact)
    label = name or _name(fn)

    positional, keywords = _argument_names(fn, args, kwargs, label)
    leaves: list = []
    for arg, value in zip(positional, args):
        _flatten(value, arg, leaves)
    for arg in keywords:
        _flatten(kwargs[arg], arg, leaves)
    if not leaves:
        raise ValueError(f"assert_layout_invariant({label}, ...): no tensor argument to re-lay out")
    call = _Call(fn, args, kwargs, leaves, tolerance, _get_rng(leaves), reference,
                 _name(reference) if reference is not None else None)
    report = LayoutReport(label, reference=call.reference_name)

    # The baseline, on contiguous copies in guarded buffers: its own stray writes are reported.
    outcome = _run(call, -1, "contiguous")
    if outcome.error is not None:
        raise outcome.error
    baseline = _Baseline(
        outputs=_outputs(outcome.result),
        after=[m.view.clone() for m in outcome.mats],
        mutated=[not _same_bits(t, m.view) for (_, t), m in zip(leaves, outcome.mats)],
    )
    for (arg, _), m in zip(leaves, outcome.mats):
        gap = _gap_problem(arg, m, "the contiguous baseline")
        if gap:
            report.variants.append(Variant(arg, "contiguous", "failed", (gap,), tuple(m.view.stride())))
    del outcome

    method = None
    if isolate:
        method = isolate if isinstance(isolate, str) else ("spawn" if any(t.is_cuda for _, t in leaves) else "fork")
    for i, (arg, t) in enumerate(leaves):
        contract = _contract_rule(fn, arg)
        names = layouts
        if names is None:
            names = DEFAULT_LAYOUTS + (("expanded",) if contract is not None and contract[1] else ())
        for layout in names:
            stride0 = ()
            if layout == "expanded":
                if baseline.mutated[i]:
                    report.variants.append(
                        Variant(arg, layout, "not_applicable", ("the function writes this argument",))
                    )
                    continue
                stride0 = constant_dims(t)
            if placement(layout, tuple(t.shape), stride0) is None:
                report.variants.append(
                    Variant(arg, layout, "not_applicable", ("same addresses as the contiguous layout",))
                )
                continue
            write_through = (
                layouts is None
                and layout in _NON_UNIT_INNER
                and baseline.mutated[i]
                and not (contract is not None and contract[0])
            )
            if method:
                variant = _run_isolated(call, baseline, i, layout, stride0, write_through, method)
            else:
                variant = _run_variant(call, baseline, i, layout, stride0, write_through)
            report.variants.append(variant)
    return report
