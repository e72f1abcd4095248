"""Quiet numpy while Triton's CPU interpreter runs our kernels (``TRITON_INTERPRET=1``).

The interpreter runs a kernel in numpy and evaluates every lane: the masked-out ones, and the
branch a ``tl.where`` discards. The noise construction computes there on purpose (the bit tricks
of :mod:`guarded_kernels.noise` make huge or NaN floats in lanes the select drops), so numpy's
overflow and invalid-value warnings on every call say nothing about the result. The launchers run
under ``np.errstate`` only while interpreted; on a GPU, and for any numpy code of the caller,
nothing changes.
"""

from __future__ import annotations

import functools
import os


def quiet_interpreter(launcher):
    """``launcher`` with numpy's floating-point warnings off while Triton interprets it."""

    @functools.wraps(launcher)
    def run(*args, **kwargs):
        if os.environ.get("TRITON_INTERPRET") != "1":
            return launcher(*args, **kwargs)
        import numpy as np

        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return launcher(*args, **kwargs)

    return run
