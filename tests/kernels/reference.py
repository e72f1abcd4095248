"""float64 torch references of the samplers' draws, built from the documented noise construction.

The hashes come from :func:`guarded_kernels.noise.token_hashes` (checked bit for bit against the
construction in plain Python by ``test_noise.py``); everything after the hash is computed here
independently, in float64 torch: ``v = (h + 1/2) / 2**32``, ``E = -log1p(-v)``, and the base-2
Gumbel-max key ``log2 w_i - log2(E_i * log2(e))`` for unnormalised weights ``w``.
"""

from __future__ import annotations

import functools
import math

import torch

from guarded_kernels.noise import VERIFY_STREAM, token_hashes

LOG2E = 1.4426950408889634


def noise2(seed: int, pos: int, vocab_size: int, stream: int = VERIFY_STREAM) -> torch.Tensor:
    """[V] float64 ``-log2(E * log2(e))`` of one row keyed by (seed, pos, stream, token)."""
    return _noise2(seed, pos, vocab_size, stream).clone()


@functools.lru_cache(maxsize=1024)
def _noise2(seed: int, pos: int, vocab_size: int, stream: int) -> torch.Tensor:
    # Cached: the float64 references of several tests (and parameter cases) recompute the same
    # rows, and each row is a kernel launch (an interpreted one on the CPU).
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


def random_requests(device, Q, S, V, W, seed0):
    """Q requests of S drafts over V tokens, random logits, every accepted count 0..S in turn."""
    g = torch.Generator().manual_seed(seed0)
    N = Q * (S + 1)
    target = (torch.randn(N, V, generator=g) * 2).to(device)
    draft = (torch.randn(Q, S, W, generator=g) * 2).to(device)
    tokens = torch.randint(0, V, (Q, S), generator=g).to(device)
    acc = (torch.arange(Q) % (S + 1)).to(device)
    cu = torch.arange(0, N + 1, S + 1, device=device)
    idx = torch.randperm(Q, generator=g).to(device)
    temp = torch.tensor([0.6, 1.0, 1.7], dtype=torch.float32).repeat(Q)[:Q].to(device)
    seed = torch.randint(0, 2**62, (Q,), generator=g).to(device)
    pos = torch.randint(0, 2**40, (N,), generator=g).to(device)
    return target, draft, tokens, acc, cu, idx, temp, seed, pos


def reference_keys(target, draft, tokens, acc, cu, idx, temp, seed, pos, r, vd):
    """float64 base-2 Gumbel-max keys of request r's draw: the residual, p less the rejected
    token, or p (bonus), with the verification noise of (seed[slot], pos[row])."""
    V = target.shape[1]
    S = tokens.shape[1]
    slot = int(idx[r])
    row = int(cu[r]) + int(acc[r])
    sc = scale64(float(temp[slot]))
    x = target[row].double().cpu() * sc  # log2 p + const
    noise = noise2(int(seed[slot]), int(pos[row]), V)
    if int(acc[r]) == S:
        return x + noise
    if draft is None:
        keys = x + noise
        keys[int(tokens[r, int(acc[r])])] = -math.inf
        return keys
    lp = x - torch.logsumexp(x / LOG2E, 0) * LOG2E
    d = draft[slot, int(acc[r]), :vd].double().cpu() * sc
    lq = torch.full((V,), -math.inf, dtype=torch.float64)
    lq[:vd] = d - torch.logsumexp(d / LOG2E, 0) * LOG2E
    res = (torch.exp2(lp) - torch.exp2(lq)).clamp(min=0)
    return torch.log2(res) + noise



def assert_reference_draws(out, args, vd, margin, at_least):
    """Every request whose float64 reference keys (:func:`reference_keys`) have their two best
    more than ``margin`` apart must draw the reference's argmax; at least ``at_least`` requests
    must be so decided (a test that compares nothing proves nothing)."""
    compared = 0
    for r in range(out.numel()):
        want = decided_argmax(reference_keys(*args, r, vd), margin)
        if want is not None:
            compared += 1
            assert out[r].item() == want, (r, out[r].item(), want)
    assert compared >= at_least, compared


def bound_probe_row(device, seed, V, block, chunk, dtype, lowering=0.25):
    """(pos, [V] logits, j) of one row, temperature 1, that the exact block skip draws right only
    while its bound is exact to within ``lowering`` (log2 units): token j, in a block after the
    first two, has noise within 0.2 of its bound (the bound minus the noise, as the kernels
    compute both); token i in the first block gets the key K = x_i * log2(e) + noise_i inside
    (bound_j - lowering, key_j), token j the logit 0; every other column -inf. The skip must draw
    j; with a bound lowered by ``lowering`` it skips j's block and draws i. The bound is the
    documented one (guarded_kernels.noise.noise_octave: c + 1 - log2(log2 e) + 2**-8 for a hash
    with c leading zeros), computed here, not by the kernels' helper. The first position from 0
    whose noise has such a j is taken (one token in 20-50 is that close)."""
    from guarded_kernels.noise import noise_from_hash

    token = torch.arange(V, device=device)
    scale = float(torch.tensor(1.4426950408889634, dtype=torch.float32))
    offset = 1 - math.log2(math.log2(math.e)) + 2**-8
    for pos in range(50):
        h = token_hashes(torch.full_like(token, seed), torch.full_like(token, pos), token)
        noise = noise_from_hash(h).cpu().double()
        leading_zeros = torch.tensor([32 - (int(x) & 0xFFFFFFFF).bit_length() for x in h.cpu()], dtype=torch.float64)
        gap = leading_zeros + offset - noise
        for j in range(2 * block, min(V, chunk)):
            if not 0.01 < gap[j] < lowering - 0.05:
                continue
            lo, hi = float(noise[j] + gap[j]) - lowering, float(noise[j])
            target = (lo + hi) / 2
            i = min(range(block), key=lambda t: abs(target - float(noise[t])))
            x_i = torch.tensor((target - float(noise[i])) / scale).to(dtype)
            if lo + 0.01 < float(x_i) * scale + float(noise[i]) < hi - 0.01:
                row = torch.full((V,), -math.inf, dtype=dtype)
                row[i], row[j] = x_i, 0.0
                return pos, row, j
    raise AssertionError("no position in 0-49 has a token close enough to its bound")
