"""The counter-based noise: the construction the docstring states, its uniformity, and the
resolution of the tail that decides rare tokens."""

import math

import numpy as np
import pytest
import torch

from tests.kernels.chisquare import chi2_pvalue
from guarded_kernels.noise import DRAFT_STREAM, VERIFY_STREAM, noise_from_hash, token_hashes

M32 = 0xFFFFFFFF


def _fmix32(h):
    h = h & M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h


def _reference_hash(seed, pos, stream, token):
    """The construction of guarded_kernels.noise's docstring, in plain Python integers."""
    seed &= (1 << 64) - 1
    pos &= (1 << 64) - 1
    k = _fmix32(((seed & M32) + 0x9E3779B9) & M32)
    k = _fmix32(k ^ (seed >> 32))
    k = _fmix32(k ^ (pos & M32))
    k = _fmix32(k ^ (pos >> 32) ^ ((stream * 0x85EBCA77) & M32))
    return _fmix32(k ^ ((token * 0x9E3779B1) & M32))


@pytest.mark.parametrize("stream", [VERIFY_STREAM, DRAFT_STREAM])
def test_hash_is_the_documented_construction(device, stream):
    rng = np.random.default_rng(1)
    n = 300
    seed = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    pos = rng.integers(0, 2**40, n, dtype=np.int64)
    token = rng.integers(0, 300000, n, dtype=np.int64)
    got = token_hashes(*(torch.from_numpy(a).to(device) for a in (seed, pos, token)), stream=stream)
    got = got.cpu().numpy().view(np.uint32)
    want = [_reference_hash(int(s), int(p), stream, int(t)) for s, p, t in zip(seed, pos, token)]
    assert got.tolist() == want


def test_streams_and_positions_give_different_noise(device):
    n = 4096
    token = torch.arange(n, device=device)
    seed = torch.full((n,), 42, device=device)
    pos = torch.full((n,), 7, device=device)
    verify = token_hashes(seed, pos, token, VERIFY_STREAM)
    draft = token_hashes(seed, pos, token, DRAFT_STREAM)
    other_pos = token_hashes(seed, pos + 1, token, VERIFY_STREAM)
    # A token -> hash bijection per row: no two tokens of a row share a hash.
    assert torch.unique(verify).numel() == n
    # Independent 32-bit words agree by chance with probability 2**-32 per token.
    assert (verify == draft).sum().item() <= 1
    assert (verify == other_pos).sum().item() <= 1


def test_hash_bytes_are_uniform(device):
    # 2**16 hashes of consecutive tokens and positions; each byte of the word over 256 bins.
    # alpha = 1e-6 per byte: the inputs are fixed, so the verdict is too; a hash whose bytes are
    # visibly non-uniform (a missing fmix round, a token not multiplied) fails by orders of magnitude.
    n = 1 << 16
    token = torch.arange(n, device=device) % 4096
    pos = torch.arange(n, device=device) // 4096
    seed = torch.full((n,), 1234, device=device)
    h = token_hashes(seed, pos, token).cpu().numpy().view(np.uint32).astype(np.int64)
    for shift in (0, 8, 16, 24):
        counts = np.bincount((h >> shift) & 0xFF, minlength=256)
        _, p, _ = chi2_pvalue(counts, np.full(256, 1 / 256))
        assert p > 1e-6, (shift, p)
    # Adjacent tokens of one row are not correlated: |r| of uniforms ~ N(0, 1/n), 6 sigma.
    u = (h + 0.5) / 2**32
    r = np.corrcoef(u[:-1], u[1:])[0, 1]
    assert abs(r) < 6 / math.sqrt(n)


@pytest.mark.parametrize("bits", ["top", "bottom"])
def test_hash_of_tokens_apart_is_jointly_uniform(device, bits):
    # The draw of a row compares the noise of all its tokens, so pairs of tokens must be
    # independent too, not only each one uniform: the 4 top (or bottom) bits of h(t) and of h(t + d)
    # over 256 joint cells, 2**16 pairs per lag, for lags 1 .. 4,096 (the block sizes and strides
    # of the kernels' loops are powers of two). Per lag the statistic is chi-square with 255 dof;
    # alpha = 1e-6 per lag (fixed inputs, so a fixed verdict): a lattice structure, as from a
    # token multiplier without the finaliser, fails by orders of magnitude.
    n, lags = 1 << 16, (1, 2, 3, 16, 256, 4096)
    token = torch.arange(n + max(lags), device=device)
    seed = torch.full_like(token, 987654321)
    pos = torch.full_like(token, 5)
    h = token_hashes(seed, pos, token).cpu().numpy().view(np.uint32).astype(np.int64)
    nib = (h >> 28) if bits == "top" else (h & 15)
    for d in lags:
        counts = np.bincount(nib[:n] * 16 + nib[d : n + d], minlength=256)
        _, p, _ = chi2_pvalue(counts, np.full(256, 1 / 256))
        assert p > 1e-6, (d, p)


def _exact_noise(v):
    return -np.log2(-np.log1p(-v) * math.log2(math.e))


# lg2.approx (the GPU path) has a relative error near 2**-21 on the values here; the CPU path's
# float32 arithmetic stays within 3e-6.
FP32_TOL = 3e-6 if not torch.cuda.is_available() else 2e-5


@pytest.mark.parametrize("use_fp64", [False, True])
def test_tail_resolves_every_hash_value(device, use_fp64):
    # The largest noise values come from the smallest hash values. Each must map to its own
    # Exp(1) variate -ln(1 - v), v = (h + 1/2) / 2**32, to float32 accuracy: with 24-bit
    # uniforms they would collapse onto a few values capped near 17 nats.
    h = torch.cat([torch.arange(0, 4096), torch.tensor([2**20, 2**23 - 1])]).to(torch.int32)
    got = noise_from_hash(h.to(device), use_fp64=use_fp64).cpu().double().numpy()
    want = _exact_noise((h.double().numpy() + 0.5) / 2**32)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=0, atol=FP32_TOL if not use_fp64 else 1e-12)
    # Strictly decreasing in h: no two hash values share a noise value in the tail.
    assert np.all(np.diff(got[:4096]) < 0)
    # The largest Gumbel noise, in nats: -ln(-ln(1 - 2**-33)) = ln(2**33) = 22.87 (the kernel's
    # base-2 noise is shifted by the constant ln(log2 e)).
    assert got[0] / math.log2(math.e) + math.log(math.log2(math.e)) > 22.8


def test_body_of_the_uniform_within_its_stated_error(device):
    # v >= 2**-9: 1 - v from the top 23 bits of ~h; relative error of E at most 2**-24 / (w E),
    # i.e. at most 2**-15 * log2(e) in the base-2 noise at v = 2**-9 (docstring of noise.py).
    rng = np.random.default_rng(3)
    hs = np.concatenate([[2**23, 2**23 + 1, 2**27, 2**31 - 1, 2**31, 3 * 2**30], rng.integers(2**23, 2**32 - 2**20, 2000)])
    h = torch.from_numpy(hs.astype(np.uint32).view(np.int32))
    got = noise_from_hash(h.to(device)).cpu().double().numpy()
    v = (hs + 0.5) / 2**32
    w = 1 - v
    bound = 2.0**-24 / (w * -np.log(w)) * math.log2(math.e) + FP32_TOL
    assert np.all(np.abs(got - _exact_noise(v)) <= bound)


def test_complement_half_has_no_infinities(device):
    # v -> 1 (h near 2**32): w = m * 2**-23 + 2**-24 with m = (~h) >> 9, never 0, so E is finite.
    hs = np.array([2**32 - 1, 2**32 - 2, 2**32 - 256, 2**32 - 2**24, 2**32 - 2**20], dtype=np.int64)
    h = torch.from_numpy(hs.astype(np.uint32).view(np.int32))
    got = noise_from_hash(h.to(device)).cpu().double().numpy()
    w = ((2**32 - 1 - hs) >> 9) * 2.0**-23 + 2.0**-24
    want = -np.log2(-np.log(w) * math.log2(math.e))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=0, atol=FP32_TOL)


def test_tail_rate_from_the_map(device):
    # The rate at which a token d nats below the best is drawn is P(G_tail - G_best > d). With
    # hash values uniform on 2**32, P(G > y) is the count of hash values whose noise exceeds y,
    # over 2**32. Counting them from the kernel's own map on the smallest 2**16 hash values
    # (noise >= ~11 nats) must reproduce the exact Gumbel tail 1 - exp(-exp(-y)) to 1% at
    # y = 12 .. 20 nats (the 18-nat case of the heavy-tail test is inside this range).
    h = torch.arange(0, 1 << 16, dtype=torch.int32, device=device)
    noise_nats = noise_from_hash(h).cpu().double().numpy() / math.log2(math.e)
    # The kernel's noise is -ln E - ln(log2 e); shift back to the standard Gumbel.
    gumbel = noise_nats + math.log(math.log2(math.e))
    for y in (12.0, 14.0, 16.0, 18.0, 20.0):
        count = int((gumbel > y).sum())
        exact = -math.expm1(-math.exp(-y)) * 2**32
        assert abs(count - exact) <= max(0.01 * exact, 1.0), (y, count, exact)


def test_noise_bound_holds_and_is_about_one_bit(device):
    # neg_log2_exponential_bound (the block skip's per-element bound, sample._walk_chunk SKIP)
    # must never be below the noise the kernels compute for the same hash, or a skipped block
    # could have held the winner. Checked at every power of two and its neighbours (where the
    # leading-zero count changes; on the CPU the count comes from float(h), which rounds up just
    # below a power of two), at the series / complement boundary 2**23, at 0 and 2**32 - 1, and
    # on 200,000 random values. It must also be tight where tokens win (small h: within 1.01 of
    # the noise, the one bit of the leading-zero count plus the 2**-8 margin), else the skip
    # never fires.
    rng = np.random.default_rng(11)
    edges = [0, 1, 2, 3, 2**32 - 1, 2**32 - 2, 2**23 - 1, 2**23, 2**23 + 1]
    for k in range(1, 32):
        edges += [2**k - 1, 2**k, 2**k + 1, 2**k - 2**max(k - 25, 0), 2**k - 2**max(k - 24, 0)]
    hs = np.concatenate([np.array(edges, dtype=np.int64), rng.integers(0, 2**32, 200_000)])
    h = torch.from_numpy(hs.astype(np.uint32).view(np.int32)).to(device)
    noise = noise_from_hash(h).cpu().double().numpy()
    bound = noise_from_hash(h, bound=True).cpu().double().numpy()
    assert np.all(np.isfinite(bound))
    gap = bound - noise
    assert gap.min() > 2.0**-9, (hs[gap.argmin()], gap.min())
    small = hs < 2**20
    assert small.sum() > 50 and gap[small].max() < 1.01, gap[small].max()
    # For v <= 1/2 within 1 + log2(2 ln 2) = 1.47 bits (E / v = -ln(1 - v) / v <= 2 ln 2); above, the
    # noise falls below zero while the bound stays near 0.47: such tokens win only by their logit.
    half = hs < 2**31
    assert gap[half].max() < 1.48, (hs[half][gap[half].argmax()], gap[half].max())
    with pytest.raises(ValueError, match="float32"):
        noise_from_hash(h, use_fp64=True, bound=True)
