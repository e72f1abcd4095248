"""float64 torch references of the samplers' draws, built from the documented noise construction.

The hashes come from :func:`guarded_kernels.noise.token_hashes` (checked bit for bit against the
construction in plain Python by ``test_noise.py``); everything after the hash is computed here
independently, in float64 torch: ``v = (h + 1/2) / 2**32``, ``E = -log1p(-v)``, and the base-2
Gumbel-max key ``log2 w_i - log2(E_i * log2(e))`` for unnormalised weights ``w``.
"""

from __future__ import annotations

import math

import torch

from guarded_kernels.noise import VERIFY_STREAM, token_hashes

LOG2E = 1.4426950408889634


def noise2(seed: int, pos: int, vocab_size: int, stream: int = VERIFY_STREAM) -> torch.Tensor:
    """[V] float64 ``-log2(E * log2(e))`` of one row keyed by (seed, pos, stream, token)."""
    # The hash runs as a Triton kernel: on the GPU where there is one (CPU tensors cannot be
    # launched there), through the interpreter on the CPU otherwise. The float64 part is on the CPU.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    token = torch.arange(vocab_size, dtype=torch.int64, device=device)
    h = token_hashes(torch.full_like(token, seed), torch.full_like(token, pos), token, stream=stream)
    h = h.cpu().to(torch.int64) & 0xFFFFFFFF
    v = (h.double() + 0.5) / 2.0**32
    e = -torch.log1p(-v)
    return -torch.log2(e * LOG2E)


def decided_argmax(keys: torch.Tensor, margin: float) -> int | None:
    """The argmax of a row of keys, or None when the top two are within ``margin`` (a tie that
    the reference's own rounding could decide either way)."""
    finite = keys[keys > -math.inf]
    if finite.numel() == 0:
        return None
    if finite.numel() > 1:
        top = torch.topk(keys, 2).values
        if (top[0] - top[1]).item() <= margin:
            return None
    return int(torch.argmax(keys).item())


def scale64(temperature: float) -> float:
    """``log2(e) / T`` in float64 for a float32 temperature, as the float64 kernels compute it."""
    return LOG2E / float(torch.tensor(temperature, dtype=torch.float32).double())


def near_tied_logits(seed: int, pos: int, vocab_size: int, temperature: float, spread: float,
                     generator: torch.Generator) -> torch.Tensor:
    """[V] float32 logits whose Gumbel-max keys under the (seed, pos) verification noise all lie
    within about ``spread`` (log2 units) of one another: a draw that only float64 resolves."""
    sc = scale64(temperature)
    eps = torch.rand(vocab_size, generator=generator, dtype=torch.float64) * spread
    return ((3.0 + eps - noise2(seed, pos, vocab_size)) / sc).float()
