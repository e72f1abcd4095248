"""Counter-based noise shared by :mod:`guarded_kernels.sample` and :mod:`guarded_kernels.resample`.

Construction
------------
Every draw is keyed by ``(seed, pos, stream, token)``; nothing is stateful, so the same inputs
give the same noise whatever the batch composition, the launch grid or the block size.

1. *Row key* (once per program, scalar): the 64-bit ``seed`` and ``pos`` are split into 32-bit
   words and absorbed one word at a time into a 32-bit state, each absorption followed by the
   MurmurHash3 ``fmix32`` finaliser (a bijection of 32-bit words with full avalanche: Appleby,
   *MurmurHash3*, 2011, public domain)::

       k = fmix32(seed_lo + 0x9E3779B9); k = fmix32(k ^ seed_hi)
       k = fmix32(k ^ pos_lo);           k = fmix32(k ^ pos_hi ^ stream * 0x85EBCA77)

   For a fixed seed and stream, ``pos -> k`` is injective for ``0 <= pos < 2**32`` (each step is
   a bijection of the word that changes), so two positions of one request never share noise.
   ``stream`` is 0 for verification draws and 1 for draft draws (``is_drafting``): the two
   streams are different keys, so a draft draw never reuses the noise that later decides the
   verification draw at the same position.
2. *Per token* (the only per-element integer work: one multiply, one xor and one ``fmix32``)::

       h = fmix32(k ^ (token * 0x9E3779B1))

   ``token * 0x9E3779B1`` (an odd constant, so a bijection) spreads the token id's low bits over
   the word before the xor, and ``fmix32`` makes every output bit depend on every input bit. For a
   fixed row, ``token -> h`` is a bijection: no two tokens of a row share a hash value.
   Statistical quality: the per-token input ``k ^ (token * 0x9E3779B1)`` is exactly uniform
   over row keys for every token (an xor with the key), and ``fmix32`` is a bijection, so over
   uniformly random row keys every hash value has probability exactly 2**-32 for every token:
   the tail below needs no other argument. Within a row, consecutive tokens differ in the low
   bits of the input, and fmix32's avalanche (each input bit flips each output bit with
   probability ~1/2: Appleby's SMHasher results for MurmurHash3) carries that to every output
   bit, high and low alike. ``tests/kernels/test_noise.py`` checks each byte of the hash over 256
   bins, the correlation of adjacent tokens, and the joint distribution of the top and of the
   bottom 4 bits of tokens 1 to 4,096 apart (which the token product alone, without fmix32,
   fails at p = 0); the GPU chi-squares of 4.2 M draws (``test_gpu_distribution.py``) check the
   draws themselves. Cheaper mixers that are not bijections lose the exact 2**-32 argument above,
   which is why none is used.
3. *Exponential variate*: ``h`` is read as the uniform ``v = (h + 1/2) / 2**32`` in ``(0, 1)`` and
   turned into ``E = -ln(1 - v)``, an Exp(1) variate; the Gumbel noise is ``-ln E``. The sampler
   compares ``logit / T - ln E`` (Gumbel-max: Gumbel, *Statistical theory of extreme values*,
   1954; Maddison et al., *A* Sampling*, 2014), here in base 2:
   ``logit * log2(e) / T - log2(E * log2(e))``, which differs by a constant per row.

Resolution of the uniform
-------------------------
Rare tokens win when their ``E`` is tiny, that is when ``v`` is tiny. ``1 - v`` in float32 would
round ``v`` to a multiple of 2**-24 and cap the noise at about 17.3 nats, so a token 18 nats below
the best could never be drawn. Instead, for ``h < 2**23`` (``v < 2**-9``) ``E`` is computed from
``v`` itself, by the series ``-ln(1 - v) = v + v^2/2 + v^3/3`` (truncation below
``v^3/4 <= 2**-29`` relative), with ``v`` exact: ``h`` is turned into a float without a
conversion instruction (the bits ``0x4B000000 | h`` are the float ``2**23 + h``). So ``E``
resolves every one of the 2**23 smallest hash values: the smallest ``E`` is
``-ln(1 - 2**-33) = 1.16e-10``, the largest noise ``ln(2**33) = 22.9`` nats, and the probability
that a token's noise exceeds ``y`` is exact to within one hash value in 2**32 for every ``y`` above
``-ln(2**-9) = 6.2`` nats: a token ``d`` nats below the best is drawn at its rate for ``d`` up to
about 20 nats.

Elsewhere (``v >= 2**-9``) ``w = 1 - v`` is built from the top 23 bits of ``~h``, exact to within
2**-24, so ``E = -ln w`` has relative error at most ``2**-24 / (w E)``: at most 2**-15 (3e-5) at
``v = 2**-9``, falling to 2e-7 at ``v = 1/2``; it grows again only where ``w < 2**-12``
(``E > 8.3``, probability 2.5e-4 per token), noise below -2.1 nats that decides a draw only for a
token that already leads by several nats. The float64 path (``USE_FP64``) uses exact conversions
and ``1 - v`` from ``~h`` at full resolution.

An upper bound for skipping
---------------------------
:func:`noise_octave` bounds the noise of a hash by its leading zeros ``c``: ``c + 0.4751`` base-2
units, within about one bit of the noise where ``v`` is small (where tokens win). The samplers'
block skip compares a block's largest ``scaled logit + bound`` with the best key so far and
computes the noise only where a key could reach it; the bound is exact (never below the noise as
computed), so no draw changes.

GPU fast path
-------------
With ``FAST_LOG`` (chosen by the launchers only when compiling for a CUDA device, never in the
CPU interpreter, which has no inline assembly) the two base-2 logarithms use the hardware's
``lg2.approx.ftz.f32`` (absolute error about 2**-22 in the result; flushing subnormals is safe as
both arguments are at least 2**-33) instead of the library logarithm; the GPU tests check that
this path samples the same distributions.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

# MurmurHash3 fmix32 multipliers and the 32-bit golden-ratio constants (odd, so bijective).
_FMIX_C1 = 0x85EBCA6B
_FMIX_C2 = 0xC2B2AE35
_GOLDEN_ROW = 0x9E3779B9
_GOLDEN_TOKEN = 0x9E3779B1
_STREAM_MUL = 0x85EBCA77

VERIFY_STREAM = 0
DRAFT_STREAM = 1


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def use_fast_log(device) -> bool:
    """Whether :func:`noise_from_hash` on ``device`` (a ``torch.device``) uses ``lg2.approx.f32``:
    on a CUDA device, not in the interpreter. The samplers take it from their launch plan
    (``SamplePlan.fast_log``, ``ResamplePlan.fast_log``), which the GPU tests set both ways."""
    return device.type == "cuda" and not interpreting()


@triton.jit
def fmix32(h):
    """MurmurHash3's 32-bit finaliser on uint32 values (wrapping arithmetic)."""
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    return h


@triton.jit
def row_key(seed, pos, STREAM: tl.constexpr):
    """The scalar 32-bit key of one row: ``seed``/``pos`` int64 scalars, ``STREAM`` 0 or 1."""
    seed = seed.to(tl.int64)
    pos = pos.to(tl.int64)
    seed_lo = (seed & 0xFFFFFFFF).to(tl.uint32)
    seed_hi = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
    pos_lo = (pos & 0xFFFFFFFF).to(tl.uint32)
    pos_hi = ((pos >> 32) & 0xFFFFFFFF).to(tl.uint32)
    k = fmix32(seed_lo + 0x9E3779B9)
    k = fmix32(k ^ seed_hi)
    k = fmix32(k ^ pos_lo)
    k = fmix32(k ^ pos_hi ^ (STREAM * 0x85EBCA77))
    return k


@triton.jit
def token_product(token):
    """``token * 0x9E3779B1`` (mod 2**32), the per-token input of :func:`token_hash_of_product`:
    ``token`` int32/int64 block of token ids, returns uint32. A loop may carry it and step it by
    ``BLOCK * 0x9E3779B1`` (one add per element instead of an add and a multiply)."""
    return token.to(tl.uint32) * 0x9E3779B1


@triton.jit
def token_hash_of_product(key, m):
    """``fmix32(key ^ m)`` for ``key`` uint32 scalar and ``m = token_product(token)`` uint32 block:
    the same bits as :func:`token_hash`. fmix32's first xorshift is split by
    ``(a ^ b) >> 16 = (a >> 16) ^ (b >> 16)`` so that the key's half is computed once per
    program; per element one three-input xor remains."""
    return token_hash_finish(token_hash_unfinished(key, m))


@triton.jit
def token_hash_unfinished(key, m):
    """:func:`token_hash_of_product` without fmix32's last xorshift (:func:`token_hash_finish`),
    which keeps the leading zeros (all :func:`noise_octave` needs)."""
    h = (key ^ (key >> 16)) ^ m ^ (m >> 16)
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    return h


@triton.jit
def token_hash_finish(h):
    # fmix32's last xorshift.
    return h ^ (h >> 16)


@triton.jit
def token_hash(key, token):
    """Per-token 32-bit hash ``fmix32(key ^ (token * 0x9E3779B1))``: ``key`` uint32 scalar,
    ``token`` int32/int64 block of token ids; returns uint32."""
    return token_hash_of_product(key, token_product(token))


@triton.jit
def _log2_f32(x, FAST_LOG: tl.constexpr, FLUSH: tl.constexpr = True):
    """log2 of a float32 block: with FAST_LOG the hardware's approximate ``lg2.approx``, flushing
    subnormal inputs to zero (-inf) unless FLUSH is False; else Triton's accurate ``log2``."""
    if FAST_LOG:
        ASM: tl.constexpr = "lg2.approx.ftz.f32 $0, $1;" if FLUSH else "lg2.approx.f32 $0, $1;"
        return tl.inline_asm_elementwise(ASM, "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    else:
        return tl.log2(x)


@triton.jit
def log2e_exponential(h, FAST_LOG: tl.constexpr):
    """``E * log2(e) = -log2(1 - v)``, ``v = (h + 1/2) / 2**32``, for ``h`` a uint32 block: float32,
    in ``[~1.7e-10, 24]`` and never 0, the bits whose ``-log2`` :func:`neg_log2_exponential` returns
    (the same instructions). For the exponential race ``argmax_i r_i / E_i``, the Gumbel-max draw
    without its logarithms (``guarded_kernels.resample``'s lean draw)."""
    # No int->float conversion instructions: they issue at a quarter of the full rate on
    # Hopper, like the logarithms, and were the sampling loop's bottleneck on an H200.
    small = h < 8388608
    # h < 2**23: the float with bits 0x4B000000 + h is exactly 2**23 + h, so one FMA gives
    # v = (2**23 + h) * 2**-32 + (2**-33 - 2**-9) = (h + 1/2) * 2**-32 exactly (2h + 1 < 2**24).
    # (An add, not an or: the same bits here, and it can issue on the multiply-add pipe; for
    # h >= 2**23 the value is discarded by the select below.)
    v = (h + 0x4B000000).to(tl.float32, bitcast=True) * 2.3283064365386963e-10 - 0.0019531248835846782
    # -log2(1 - v) = log2(e) * (v + v^2/2 + v^3/3 + ...), three terms below 2**-9.
    series = v * (1.4426950408889634 + v * (0.7213475204444817 + v * 0.48089834696298783))
    # Elsewhere 1 - v from the top 23 bits m of h: x = 1 + m * 2**-23 (bits 0x3F800000 + (h >> 9),
    # one shift-add), 2 - x = 1 - m * 2**-23 exactly (Sterbenz: x is in [1, 2)), less 2**-24
    # (exact: a multiple of 2**-24 in (0, 1)): within 2**-24 of 1 - v and never 0. Two float
    # adds instead of a NOT on the integer pipe, which is the busiest.
    w = (2.0 - ((h >> 9) + 0x3F800000).to(tl.float32, bitcast=True)) - 5.9604644775390625e-08
    return tl.where(small, series, -_log2_f32(w, FAST_LOG))


@triton.jit
def neg_log2_exponential(h, FAST_LOG: tl.constexpr, USE_FP64: tl.constexpr):
    """``-log2(E * log2(e))`` for the Exp(1) variate ``E = -ln(1 - v)``, ``v = (h + 1/2) / 2**32``.

    ``h``: uint32 block. Returns float32 (float64 with ``USE_FP64``); adding it to
    ``logit * log2(e) / T`` gives the Gumbel-max key in base 2.
    """
    if USE_FP64:
        v = h.to(tl.float64) * 2.3283064365386963e-10 + 1.1641532182693481e-10
        w = (~h).to(tl.float64) * 2.3283064365386963e-10 + 1.1641532182693481e-10
        series = v * (1.0 + v * (0.5 + v * (0.3333333333333333 + v * (0.25 + v * (0.2 + v * 0.16666666666666666)))))
        # e2 = E * log2(e) = -log2(1 - v)
        e2 = tl.where(v < 0.0009765625, series * 1.4426950408889634, -tl.log2(w))
        return -tl.log2(e2)
    else:
        return -_log2_f32(log2e_exponential(h, FAST_LOG), FAST_LOG)


# -log2(E * log2(e)) <= -log2(v) - log2(log2(e)) since E = -ln(1 - v) >= v; the last term is
# 2**-8 of margin (see noise_octave).
NOISE_BOUND_OFFSET = tl.constexpr(1.0 - 0.5287663729448977 + 2.0**-8)


@triton.jit
def noise_octave(h, FAST_LOG: tl.constexpr):
    """``1 + c / 32`` with ``c`` the leading zeros of the uint32 block ``h`` (32 for ``h = 0``),
    float32: the cheap per-element part of an upper bound on the noise,
    ``neg_log2_exponential(h) <= 32 * noise_octave(h) + (NOISE_BOUND_OFFSET - 32) = c + 0.4751``.

    The bound: ``v = (h + 1/2) / 2**32 >= 2**-(c + 1)`` and ``E = -ln(1 - v) >= v``, so
    ``-log2(E * log2(e)) <= c + 1 - log2(log2(e)) = c + 0.4712``. For ``v < 1/2`` the float32
    evaluation of the noise is within 2e-4 of the exact value (the module docstring: ``1 - v`` to
    within ``2**-24`` where ``v >= 2**-9``; ``lg2.approx``'s absolute error ``2**-22``), so
    ``NOISE_BOUND_OFFSET`` adds ``2**-8``; for ``v >= 1/2`` (``c = 0``) the noise is at most 0 (at
    ``v = 1/2``, where the evaluation is accurate) and negative beyond, where its larger error
    near ``v = 1`` (up to ~0.4) meets values below -2: always below the bound 0.4751. The bound is within one bit of the noise where ``v`` is small, which is where a token
    can win (``tests/kernels/test_noise.py`` checks both at every power of two). The block skip of
    :mod:`guarded_kernels.sample` uses it.

    ``h`` may be the hash before fmix32's last xorshift (:func:`token_hash_unfinished`):
    ``h ^ (h >> 16)`` keeps the top 16 bits, so it keeps the leading zeros. On CUDA
    (``FAST_LOG``) the highest set bit comes from PTX ``bfind.u32`` (-1 for 0); elsewhere from
    the exponent of ``float(h)`` (rounding up to the next power of two just below one lowers ``c``
    by one where ``-log2(v)`` is within 2**-23 of the next integer: inside the margin). ``c``
    becomes a float without a conversion instruction: the bits ``0x3F800000 + (c << 18)`` are the
    float ``1 + c / 32``, exact for ``0 <= c <= 32``.
    """
    if FAST_LOG:
        top = tl.inline_asm_elementwise("bfind.u32 $0, $1;", "=r,r", [h], dtype=tl.uint32, is_pure=True, pack=1)
    else:
        # float(0) has the exponent field 0: top = -127, clamped to -1 (c = 32).
        top = tl.maximum((h.to(tl.float32).to(tl.int32, bitcast=True) >> 23) - 127, -1).to(tl.uint32)
    # 0x3F800000 + ((31 - top) << 18), one multiply-add (top = 0xFFFFFFFF wraps to c = 32).
    return (0x3F800000 + (31 << 18) - top * 262144).to(tl.float32, bitcast=True)


@triton.jit
def block_key_bound(xf, scale, h, FAST_LOG: tl.constexpr):
    """A float32 scalar at least ``max_i(xf_i * scale + neg_log2_exponential(token_hash_finish(h_i)))``
    over a block: ``xf`` float32 logits, ``scale`` float32 scalar, ``h`` the uint32 hashes before
    their last xorshift (:func:`token_hash_unfinished`). Per element one multiply-add on
    :func:`noise_octave` (the scale divided by 32, exactly), then one block maximum. The slack,
    2**-20 of the bound, covers the float32 rounding of either expression at any magnitude (a few
    roundings of 2**-24 each), so a block whose bound is below a key held so far holds no key
    that reaches it. ``scale / 32`` is exact unless subnormal (a temperature above ~3.8e36;
    the arithmetic here keeps subnormals, no ``.ftz``), and then ``|x * scale| <= 2**7`` for every
    float32 ``x`` and its error, at most 2**-17, stays inside the noise bound's 2**-8 margin. NaN
    logits are ignored by the maximum, as their keys never win."""
    b = tl.max(xf * (scale * 0.03125) + noise_octave(h, FAST_LOG), 0) * 32.0 + (NOISE_BOUND_OFFSET - 32.0)
    return with_rounding_slack(b)


@triton.jit
def with_rounding_slack(b):
    """``b + |b| * 2**-20``: a float32 bound raised past the rounding of the expressions it bounds
    (a few roundings of 2**-24 relative each; :func:`block_key_bound`)."""
    return b + tl.abs(b) * 9.5367431640625e-07


@triton.jit
def neg_log2_exponential_bound(h, FAST_LOG: tl.constexpr):
    """The upper bound ``c + 0.4751`` of :func:`noise_octave` on ``neg_log2_exponential(h)``:
    ``h`` uint32 block, float32 result."""
    return noise_octave(h, FAST_LOG) * 32.0 + (NOISE_BOUND_OFFSET - 32.0)


@triton.jit
def ordered_key(x):
    """Order-preserving map of float32 ``x`` to int64 (as the signed int32 pattern, sign-extended)."""
    bits = x.to(tl.int32, bitcast=True)
    bits = tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    return bits.to(tl.int64)


@triton.jit
def pack_key_index(x, idx):
    """Pack a float32 key and a token index into one int64: a larger key wins, then a lower index."""
    return (ordered_key(x) << 32) | (4294967295 - idx.to(tl.int64))


@triton.jit
def unpack_index(packed):
    return 4294967295 - (packed & 4294967295)


@triton.jit
def _noise_from_hash_kernel(
    h_ptr,  # [N] uint32 stored as int32
    out_ptr,  # [N] float32 or float64
    n,
    FAST_LOG: tl.constexpr,
    USE_FP64: tl.constexpr,
    BLOCK: tl.constexpr,
    BOUND: tl.constexpr = False,
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask, other=0).to(tl.uint32, bitcast=True)
    if BOUND:
        tl.store(out_ptr + offs, neg_log2_exponential_bound(h, FAST_LOG), mask=mask)
    else:
        tl.store(out_ptr + offs, neg_log2_exponential(h, FAST_LOG, USE_FP64), mask=mask)


@triton.jit
def _hash_kernel(
    seed_ptr,  # [N] int64
    pos_ptr,  # [N] int64
    token_ptr,  # [N] int64
    out_ptr,  # [N] int32 (the uint32 hash, bit-cast)
    n,
    STREAM: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # row_key is elementwise, so it also runs on blocks: one (seed, pos) per element here.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    k = row_key(tl.load(seed_ptr + offs, mask=mask, other=0), tl.load(pos_ptr + offs, mask=mask, other=0), STREAM)
    h = token_hash(k, tl.load(token_ptr + offs, mask=mask, other=0))
    tl.store(out_ptr + offs, h.to(tl.int32, bitcast=True), mask=mask)


def noise_from_hash(h, *, use_fp64: bool = False, bound: bool = False):
    """The kernels' tail map, for tests: ``-log2(E * log2(e))`` for each uint32 hash value.

    ``h``: int32 tensor [N] holding uint32 bit patterns. Returns float32 [N] (float64 with
    ``use_fp64``) on ``h``'s device, computed by the same Triton helper the samplers use; with
    ``bound``, float32 :func:`neg_log2_exponential_bound` instead (``use_fp64`` must be False).
    """
    import torch

    if bound and use_fp64:
        raise ValueError("noise_from_hash: the bound is a float32 helper; use_fp64 must be False")
    h = h.contiguous()
    out = torch.empty(h.shape, dtype=torch.float64 if use_fp64 else torch.float32, device=h.device)
    block = 1024
    _noise_from_hash_kernel[(triton.cdiv(h.numel(), block),)](
        h, out, h.numel(), FAST_LOG=use_fast_log(h.device), USE_FP64=use_fp64, BLOCK=block, BOUND=bound
    )
    return out


def token_hashes(seed, pos, token, stream: int = VERIFY_STREAM):
    """The kernels' 32-bit hash of ``(seed, pos, stream, token)``, for tests.

    ``seed``, ``pos``, ``token``: int64 tensors [N] on one device. Returns int32 [N] holding the
    uint32 hashes' bit patterns.
    """
    import torch

    seed, pos, token = (t.to(torch.int64).contiguous() for t in (seed, pos, token))
    out = torch.empty(seed.shape, dtype=torch.int32, device=seed.device)
    # Few large programs: the CPU interpreter's cost is per program and operation, not element.
    block = 1024
    _hash_kernel[(triton.cdiv(seed.numel(), block),)](seed, pos, token, out, seed.numel(), STREAM=stream, BLOCK=block)
    return out
