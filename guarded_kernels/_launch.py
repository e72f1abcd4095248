"""A cheaper launch for a kernel whose constexprs are fixed by a launch plan.

``kernel[grid](*args, **constexprs)`` goes through ``JITFunction.run`` on every call: it binds
every argument, specialises each (dtype, 16-byte alignment, integers equal to 1 or divisible by
16), builds and hashes the cache key, reads Triton's knobs, and only then calls the compiled
kernel's launcher. For a sampler called once per decoding step that is most of an eager call's
host time. :class:`Launcher` makes the first call of each specialisation that way, keeps the
``CompiledKernel`` it returns, and afterwards calls its launcher directly with the same argument
list ``JITFunction.run`` would pass (the runtime arguments, then every constexpr in parameter
order). Its callers key each call by everything Triton specialises on that the plan does not
fix, so a compiled kernel is only reused for arguments it was specialised for.

The compiled kernel's ``run(grid_x, grid_y, grid_z, stream, function, packed_metadata,
launch_metadata, enter_hook, exit_hook, *args)`` is the call ``JITFunction.run`` makes, the same
in triton 3.6 and 3.9. The direct call passes no launch hooks; while a profiler has registered
any (``triton.knobs.runtime.launch_enter_hook``), every launch takes Triton's own path.
``GUARDED_KERNELS_DIRECT_LAUNCH=0`` (read at import) turns the direct call off.
"""

from __future__ import annotations

import os

from triton import knobs
from triton.runtime import driver
from triton.runtime.jit import JITFunction

DIRECT = os.environ.get("GUARDED_KERNELS_DIRECT_LAUNCH", "1") not in ("0", "")
# Distinct specialisations kept per plan; past it a call takes Triton's path (which has its own
# cache), so a caller cycling through many layouts cannot grow memory without bound.
MAX_KERNELS = 64


def _hooks_idle() -> bool:
    runtime = knobs.runtime
    return all(h is None or getattr(h, "calls", None) == [] for h in (runtime.launch_enter_hook, runtime.launch_exit_hook))


class Launcher:
    """``fn[grid](*args, **constexprs, **options)`` with the compiled kernel kept per key.

    ``fn``: a ``@triton.jit`` function whose constexpr parameters all follow its runtime ones;
    ``constexprs``: values for some of them (the rest take their defaults); ``options``: launch
    options (``num_warps``, ``launch_pdl``). Under the CPU interpreter (``fn`` is not a
    ``JITFunction``) every call is a plain launch.
    """

    __slots__ = ("fn", "constexprs", "options", "tail", "kernels", "direct", "current_device", "num_runtime")

    def __init__(self, fn, constexprs: dict, options: dict):
        self.fn = fn
        self.constexprs = constexprs
        self.options = options
        self.kernels: dict = {}
        self.direct = DIRECT and isinstance(fn, JITFunction)
        self.tail = ()
        self.current_device = None
        self.num_runtime = 0
        if self.direct:
            params = fn.params
            first = next(i for i, p in enumerate(params) if p.is_constexpr)
            if any(not p.is_constexpr for p in params[first:]):
                raise TypeError(f"{fn.__name__}: constexpr parameters must follow the runtime ones")
            missing = [p.name for p in params[first:] if p.name not in constexprs and not p.has_default]
            if missing:
                raise TypeError(f"{fn.__name__}: no value for constexprs {missing}")
            self.tail = tuple(constexprs[p.name] if p.name in constexprs else p.default for p in params[first:])
            self.num_runtime = first

    def __call__(self, grid: tuple[int, int], key, args: tuple) -> None:
        """Launch on ``grid`` (two dimensions) with the runtime arguments ``args``; ``key``: a
        hashable summary of everything Triton specialises ``args`` on (dtypes, alignment, integer
        values that can vary), or None to take Triton's path."""
        if self.direct and key is not None:
            if self.current_device is not None:
                device = self.current_device()
                entry = self.kernels.get((device, key))
                if entry is not None and _hooks_idle():
                    run, function, metadata, stream_of = entry
                    run(grid[0], grid[1], 1, stream_of(device), function, metadata, None, None, None, *args, *self.tail)
                    return
            kernel = self.fn[grid](*args, **self.constexprs, **self.options)
            if len(args) == self.num_runtime:
                self._keep(key, kernel)
            return
        self.fn[grid](*args, **self.constexprs, **self.options)

    def _keep(self, key, kernel) -> None:
        if len(self.kernels) >= MAX_KERNELS or kernel is None:
            return
        kernel = kernel.result() if hasattr(kernel, "result") else kernel
        try:
            run, function, metadata = kernel.run, kernel.function, kernel.packed_metadata
            active = driver.active
            current_device, stream_of = active.get_current_device, active.get_current_stream
        except AttributeError:  # a Triton whose compiled kernel differs: keep its own path
            self.direct = False
            return
        if function is None:
            return
        self.current_device = current_device
        self.kernels[(current_device(), key)] = (run, function, metadata, stream_of)
