"""``@stride_guard``: check the layouts a kernel is handed, before the launch, from metadata only.

Usage::

    from stridecheck import stride_guard, Tensor, stride

    @stride_guard(logits="T V", pos="T", logits_cache=Tensor("R S >=V", writes=True))
    def gumbel_sample(logits, idx_mapping, temperature, seed, pos, *, logits_cache=None): ...

    @stride_guard(x="M N", out=Tensor("M N", writes=True), x_stride=stride("x", 0))
    @triton.jit
    def _kernel(out, x, x_stride, n, BLOCK: tl.constexpr): ...
    _kernel[grid](out, x, x.stride(0), n, BLOCK=128)      # checked, then launched

Spec language
-------------
One spec per argument, given as a keyword of the decorator named after the parameter.

A string spec is whitespace-separated dimensions, outermost first:

``NAME``
    binds that dimension's size to ``NAME`` for the whole call. Arguments are visited in the
    order of the function's signature; the first argument (not ``None``) that binds a name sets
    its value, every later one must match. ``"T V"`` on ``logits`` and ``"T"`` on ``pos``
    says ``pos`` has as many rows as ``logits``.
``INT``
    a fixed size, e.g. ``"3"``.
``>=NAME`` / ``>=INT``
    a minimum: ``"R S >=V"`` says the last dimension is at least ``V`` wide. A ``>=NAME`` is
    checked once ``NAME`` is bound by some argument of the call (if every argument that binds it
    is ``None``, the check is skipped). A name used *only* in ``>=`` form is refused at
    decoration.
``*``
    any size.
``...``
    first token only: any number (0 or more) of leading dimensions; the named dims then count
    from the last, and the number of dims must be at least the number named.

An argument that is ``None`` skips its spec, unless it is declared ``required``. A one-token
spec on an argument whose value is an integer (Python or NumPy) binds or checks the integer
itself (``vocab_size="V"``); on a tensor it means a 1-d tensor. A spec names a parameter of its
own: one on ``*args`` or ``**kwargs`` is refused at decoration.

Object forms carry options:

* ``Tensor("R S >=V", dtype=torch.float32 | (dtypes...), inner_stride=1 | None, writes=False,
  required=False)``. ``inner_stride`` is the stride the last dimension must have (default 1,
  what an address ``ptr + offs`` assumes); ``None`` opts out for kernels that step the last
  dimension by its stride.
* ``stride("logits", 0)`` on an integer argument: it must equal ``logits.stride(0)`` (unless that
  dim has size 0 or 1). A dim the spec of ``logits`` cannot have is refused at decoration.

``writes=("cache", ...)`` on the decorator marks arguments as written, like
``Tensor(..., writes=True)``.

What is checked
---------------
From metadata only (``.shape``, ``.stride()``, ``.dtype``, ``.device``,
``.is_contiguous()``): the number of dimensions and the sizes above; unit stride of the last
dimension (unless opted out); non-negative strides; for written arguments, that no two elements
share memory (stride 0, or overlapping dimensions: a write race between programs) — a cheap
sufficient test: dims of size > 1 sorted by stride, each stride at least the extent of the dims
inside it; one device for all tensors; declared dtypes; integer stride arguments equal to the
stride they claim. A dimension of size 0 or 1 is always accepted, and its stride ignored (it is
never stepped); a tensor with no elements has no layout to check.

Errors
------
A failed check raises :class:`StrideGuardError` (a ``ValueError``) whose message names the
function, the argument, the dimension, the expected and actual values, where a named size was
bound, and the fix, e.g.::

    gumbel_sample: logits_cache dim 2 is 1030 but must be >= V = 1031 (V bound by logits dim 1);
    the logits_cache would be truncated — allocate it at least as wide as logits dim 1

A malformed spec raises ``StrideGuardError`` at decoration.

Cost and modes
--------------
Each decorator compiles its checks once into a generated Python function with the decorated
function's own signature; a call then costs the attribute reads and integer comparisons it needs
— no device synchronisation, no tensor allocation, nothing that breaks CUDA-graph capture, and
plain Python that ``torch.compile`` traces. Messages are built only on the failure path.

Under ``torch.compile`` a guarded launcher traces as plain Python (``fullgraph=True`` works,
static or ``dynamic=True``: size comparisons become dynamo guards). Called from compiled code
with data-dependent sizes (``x.nonzero()``), where a Python ``bool`` of a size would stop the
trace, dynamo traces a registered stand-in instead that checks through ``torch._check``
(see :mod:`stridecheck.guard.traced`; registered once ``torch._dynamo`` is imported, so a
process that never compiles never pays for it). A failed check while tracing raises
``StrideGuardError`` (under ``fullgraph=True`` dynamo wraps it; the message is in the chain).

The wrapper keeps the function's signature and ``functools.wraps`` metadata and pickles by
reference. ``@stride_guard(...)`` above ``@staticmethod`` / ``@classmethod`` guards the function
inside and keeps the binding; stacked guards check both contracts.

``STRIDECHECK_GUARD`` is read at decoration: ``0`` (or ``off``/``false``) returns the
decorated function object itself (zero overhead); ``warn`` logs each failing (function, check)
once through the ``stridecheck.guard`` logger instead of raising (once across threads, too);
anything else that is empty, ``1``, ``on`` or ``raise`` raises.

Triton kernels
--------------
``@stride_guard(...)`` above ``@triton.jit`` (or around an ``@triton.autotune`` /
``@triton.heuristics`` kernel) returns a :class:`GuardedKernel`: ``k[grid](...)`` checks the
launch's arguments, then launches; other attributes are forwarded to the kernel. Bare
``@stride_guard`` on a kernel derives the contract from the kernel's source through the
linter's access model, once per kernel (:mod:`stridecheck.guard.derive`): every step of every
address — a stride argument, a product of sizes (``col * vocab_size``), a ``tl.constexpr``
stride, a host ``TensorDescriptor``'s strides, a block pointer's ``strides=`` — must reach the
elements of the tensor it steps as the tensor's own strides do, however the address groups its
dims (:mod:`stridecheck.guard.layout`); a pointer addressed ``+ offs`` walks a dim of stride 1; a
store masked by ``offs < n`` must fit; written tensors must not overlap; all tensors share a
device. Code under a branch the launch makes false (a constexpr, a ``None`` argument, the
autotuner's config, a heuristic's value) is not judged, as Triton compiles it away. A refusal
names an index whose address differs, or a width that is too small. Verdicts are kept per layout
signature (:mod:`stridecheck.guard.kernel`): a repeated layout costs a lookup. A guarded kernel
launched inside ``torch.compile`` (``fullgraph=True`` too) is checked while tracing and launched
as the kernel itself. It cannot be called from inside another ``@triton.jit`` function: guard
the kernel you launch.

torch is never imported by this module; tensors are only read through their attributes.
"""

from __future__ import annotations

import functools
import inspect
import os

from stridecheck.guard.kernel import GuardedKernel, derived_guard, is_triton_kernel, python_function
from stridecheck.guard.spec_check import Reporter, generate_kernel_check, generate_wrapper
from stridecheck.guard.spec import StrideGuardError, Tensor, build_contract, callable_name, stride

__all__ = ["stride_guard", "StrideGuardError", "Tensor", "stride", "GuardedKernel", "guard_mode"]

_OFF = {"0", "off", "false", "no"}
_RAISE = {"", "1", "on", "true", "yes", "raise"}


def guard_mode() -> str:
    """The mode ``STRIDECHECK_GUARD`` selects now: ``"off"``, ``"warn"`` or ``"raise"``.

    Raises:
        ValueError: an unknown value (the guard never guesses whether to run).
    """
    value = os.environ.get("STRIDECHECK_GUARD", "").strip().lower()
    if value in _OFF:
        return "off"
    if value == "warn":
        return "warn"
    if value in _RAISE:
        return "raise"
    raise ValueError(f"STRIDECHECK_GUARD must be 0, 1 or warn, got {value!r}")


def _wrap(obj, specs: dict, writes, mode: str):
    if isinstance(obj, (staticmethod, classmethod)):
        # Guard the function inside and keep the binding: a bare function in a class body would
        # become an instance method and be handed `self` as its first argument.
        return type(obj)(_wrap(obj.__func__, specs, writes, mode))
    if is_triton_kernel(obj) or isinstance(obj, GuardedKernel):
        # A GuardedKernel launches like a kernel: guarding it again chains both checks.
        if specs:
            pyfn = python_function(obj)
            contract = build_contract(pyfn, specs, writes)
            check, src = generate_kernel_check(pyfn, contract, Reporter(contract, mode))
        else:
            if writes:
                raise StrideGuardError("stride_guard: writes= needs specs; a derived contract finds the stores itself")
            contract, check, src = derived_guard(obj, mode)
        return GuardedKernel(obj, contract, check, src)
    if not callable(obj):
        raise StrideGuardError(f"stride_guard: can only wrap a function or a Triton kernel, got {obj!r}")
    if not specs:
        raise StrideGuardError(
            f"stride_guard on {callable_name(obj)}: a plain function needs specs, e.g. "
            "@stride_guard(x='T V'); bare @stride_guard derives them only from a Triton kernel"
        )
    contract = build_contract(obj, specs, writes)
    reporter = Reporter(contract, mode)
    wrapper, src = generate_wrapper(obj, contract, reporter)
    functools.update_wrapper(wrapper, obj)
    if not isinstance(getattr(obj, "__name__", None), str):  # a partial, a callable object
        wrapper.__name__ = wrapper.__qualname__ = contract.func_name
    wrapper.__stride_contract__ = contract
    wrapper.__stride_guard_source__ = src
    if not inspect.iscoroutinefunction(wrapper):  # torch.compile does not trace coroutines
        from stridecheck.guard.traced import provide_traced, spec_standin

        provide_traced(wrapper, lambda: spec_standin(wrapper, contract, reporter), contract.func_name)
    return wrapper


def stride_guard(fn=None, /, *, writes=(), **specs):
    """Check tensor layouts before a launcher or a Triton kernel runs.

    Forms: ``@stride_guard(arg="spec", ..., writes=("out",))`` on a function or a Triton
    kernel, and bare ``@stride_guard`` on a Triton kernel (contract derived from its source).
    The spec language, the checks and the modes are documented in :mod:`stridecheck.guard`.

    Returns:
        The wrapped function (same signature; ``__wrapped__`` is the original and
        ``__stride_contract__`` the contract), a :class:`GuardedKernel` for a Triton kernel, or
        the object itself when ``STRIDECHECK_GUARD=0``.

    Raises:
        StrideGuardError: at decoration for a malformed spec; at call time when a layout breaks
            the contract (unless ``STRIDECHECK_GUARD=warn``).
        ValueError: ``STRIDECHECK_GUARD`` has an unknown value.
    """
    mode = guard_mode()
    if fn is not None:
        if mode == "off":
            return fn
        return _wrap(fn, specs, writes, mode)

    def decorate(obj):
        if mode == "off":
            return obj
        return _wrap(obj, specs, writes, mode)

    return decorate
