"""Gumbel-max sampling in one page: the readable twin of :func:`guarded_kernels.gumbel_sample`.

Drawing token ``i`` of a row with probability ``softmax(logits / T)_i`` is the same as taking
``argmax_i(logits_i / T + G_i)`` with ``G_i`` independent standard Gumbel noise (the Gumbel-max
trick: Gumbel, 1954; Maddison et al., *A* Sampling*, 2014). The kernel below does exactly that,
one program per row: it walks the row BLOCK columns at a time, adds the noise, and keeps in each
lane the largest key seen and its column. Keys are in base 2 (``logit * log2(e) / T`` plus
:func:`guarded_kernels.noise.neg_log2_exponential`), which changes every key of a row by the
same factor and so not the argmax.

The noise is counter-based, keyed by ``(seed, pos, stream, token id)``
(:mod:`guarded_kernels.noise`): the same inputs draw the same token whatever the batch, the grid
or the block size. That is why :func:`gumbel_sample_reference` draws, bit for bit, the tokens of
the tuned :func:`guarded_kernels.gumbel_sample` (the tests hold them to it): the keys are the same
expression, and only the order in which the tuned kernel visits them differs.

Every tensor is addressed through its own strides (``row * logits_stride_0``, never
``row * vocab_size``), and :func:`stridecheck.stride_guard` refuses, before the launch, a layout
the kernel cannot address: an inner stride other than 1, mismatched sizes.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from guarded_kernels._interpreter import quiet_interpreter
from guarded_kernels.noise import DRAFT_STREAM, VERIFY_STREAM, neg_log2_exponential, row_key, token_hash
from stridecheck import Tensor, stride_guard

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def sample_reference_kernel(
    logits_ptr, logits_stride_0,  # [T, V] float32 / bfloat16 / float16, unit inner stride
    idx_mapping_ptr, idx_mapping_stride_0,  # [T] int: row -> request state; < 0 marks padding
    temperature_ptr, temperature_stride_0,  # [R] float32; 0 selects greedy
    seed_ptr, seed_stride_0,  # [R] int64
    pos_ptr, pos_stride_0,  # [T] int64
    out_ptr, out_stride_0,  # [T] int64
    vocab_size,
    APPLY_TEMPERATURE: tl.constexpr, STREAM: tl.constexpr, FAST_LOG: tl.constexpr, BLOCK: tl.constexpr,
):
    # int64 before any multiply by a stride: row * stride can pass 2**31 on a large batch.
    row = tl.program_id(0).to(tl.int64)
    slot = tl.load(idx_mapping_ptr + row * idx_mapping_stride_0).to(tl.int64)
    if slot < 0:
        tl.store(out_ptr + row * out_stride_0, 0)  # a padding row: an in-range id, nothing read
    else:
        temp = tl.load(temperature_ptr + slot * temperature_stride_0)
        greedy = temp == 0.0
        scale = LOG2E / tl.where(greedy, 1.0, temp)  # one division per row, a multiply per column
        if not APPLY_TEMPERATURE:
            scale = temp * 0.0 + LOG2E
        key = row_key(tl.load(seed_ptr + slot * seed_stride_0), tl.load(pos_ptr + row * pos_stride_0), STREAM)
        row_ptr = logits_ptr + row * logits_stride_0
        lanes = tl.arange(0, BLOCK)
        best_key = tl.full((BLOCK,), float("-inf"), tl.float32)
        best_col = lanes
        first_nan = tl.full((BLOCK,), vocab_size, tl.int32)
        for start in range(0, vocab_size, BLOCK):
            col = start + lanes
            # The mask keeps the last block inside the row; its dead lanes read -inf, which
            # never wins.
            x = tl.load(row_ptr + col, mask=col < vocab_size, other=float("-inf")).to(tl.float32)
            sampled = x * scale + neg_log2_exponential(token_hash(key, col), FAST_LOG, False)
            k = tl.where(greedy, x, sampled)
            # Strictly greater: a lane keeps its first (lowest) column on ties, and a NaN key
            # (compares false) never wins a sampled draw.
            better = k > best_key
            best_key = tl.where(better, k, best_key)
            best_col = tl.where(better, col, best_col)
            first_nan = tl.minimum(first_nan, tl.where(x != x, col, vocab_size))
        # The lanes' winner: the largest key, the lowest column among lanes holding it (a row
        # with no finite key, all NaN or -inf, returns column 0).
        m = tl.max(best_key, 0)
        token = tl.min(tl.where(best_key == m, best_col, vocab_size), 0)
        # Greedy is torch.argmax of the row, which returns the first NaN where there is one.
        nan_col = tl.min(first_nan, 0)
        token = tl.where(greedy & (nan_col < vocab_size), nan_col, token)
        tl.store(out_ptr + row * out_stride_0, token.to(tl.int64))


@stride_guard(
    logits=Tensor("T V", dtype=(torch.float32, torch.bfloat16, torch.float16)),
    idx_mapping=Tensor("T", dtype=(torch.int32, torch.int64), inner_stride=None),
    temperature=Tensor("R", dtype=torch.float32, inner_stride=None),
    seed=Tensor("R", dtype=torch.int64, inner_stride=None),
    pos=Tensor("T", dtype=torch.int64, inner_stride=None),
)
@quiet_interpreter
def gumbel_sample_reference(
    logits: torch.Tensor,
    idx_mapping: torch.Tensor,
    temperature: torch.Tensor,
    seed: torch.Tensor,
    pos: torch.Tensor,
    *,
    apply_temperature: bool = True,
    is_drafting: bool = False,
) -> torch.Tensor:
    """One token per row, ``[T]`` int64 in ``[0, V)``: the draw of
    :func:`guarded_kernels.gumbel_sample` with the same arguments (no logits cache, no float64
    path), one program per row.

    Args: ``logits`` [T, V] float32 / bfloat16 / float16, any row stride, unit inner stride;
    ``idx_mapping`` [T] int (row -> request state, negative for a padding row, which returns 0);
    ``temperature`` [R] float32 (0: greedy, ``torch.argmax`` of the row); ``seed`` [R] int64;
    ``pos`` [T] int64 token positions; ``apply_temperature``: divide by the temperature;
    ``is_drafting``: the draft noise stream. Raises ``StrideGuardError`` for a layout the kernel
    cannot address, ``ValueError`` for an empty or too wide vocabulary, ``RuntimeError`` for CPU
    tensors without Triton's interpreter (``TRITON_INTERPRET=1`` before triton is imported).
    """
    num_rows, vocab_size = logits.shape
    out = torch.empty((num_rows,), dtype=torch.int64, device=logits.device)
    if num_rows == 0:
        return out
    if not 0 < vocab_size < 2**31:
        raise ValueError(f"gumbel_sample_reference: V = {vocab_size}; 1 <= V < 2**31 (token ids are int32)")
    interpreted = not isinstance(sample_reference_kernel, triton.runtime.jit.JITFunction)
    if logits.device.type == "cpu" and not interpreted:
        raise RuntimeError("gumbel_sample_reference: CPU tensors need TRITON_INTERPRET=1 set before triton is imported")
    sample_reference_kernel[(num_rows,)](
        logits, logits.stride(0), idx_mapping, idx_mapping.stride(0), temperature, temperature.stride(0),
        seed, seed.stride(0), pos, pos.stride(0), out, out.stride(0), vocab_size,
        APPLY_TEMPERATURE=apply_temperature, STREAM=DRAFT_STREAM if is_drafting else VERIFY_STREAM,
        # The GPU's approximate logarithm, as gumbel_sample takes it there (same noise bits).
        FAST_LOG=logits.device.type == "cuda" and not interpreted,
        BLOCK=min(1024, triton.next_power_of_2(vocab_size)),
    )
    return out
