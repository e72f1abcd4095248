"""The corrected twin of buggy_sampler.py: the cache is addressed through both of its strides,
and the launcher refuses a cache narrower than the logits. `stridecheck lint` is clean on it."""

import torch
import triton
import triton.language as tl


@triton.jit
def _draft_sample_kernel(
    # [num_tokens] int64: output token ids
    out_ptr,
    # [num_tokens, vocab_size] logits of the current draft step
    logits_ptr,
    logits_stride_0,
    # [max_num_reqs, num_steps, cache_width] logits cache, cache_width >= vocab_size
    cache_ptr,
    cache_stride_0,
    cache_stride_1,
    # [num_tokens] int32: request-state slot of each token
    slot_ptr,
    # the draft step being written
    col,
    vocab_size,
    BLOCK: tl.constexpr,
):
    tok = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < vocab_size
    slot = tl.load(slot_ptr + tok).to(tl.int64)
    logits = tl.load(logits_ptr + tok * logits_stride_0 + offs, mask=mask, other=float("-inf"))
    tl.store(cache_ptr + slot * cache_stride_0 + col * cache_stride_1 + offs, logits, mask=mask)
    tl.store(out_ptr + tok, tl.argmax(logits, axis=0).to(tl.int64))


def draft_sample(logits, slots, cache, col):
    """Greedy draft step: returns argmax token ids [num_tokens] and caches `logits` in column `col`.

    Raises ValueError if the cache is narrower than the logits.
    """
    num_tokens, vocab_size = logits.shape
    if cache.shape[-1] < vocab_size:
        raise ValueError(f"cache width {cache.shape[-1]} is narrower than the logits ({vocab_size})")
    out = torch.empty(num_tokens, dtype=torch.int64, device=logits.device)
    _draft_sample_kernel[(num_tokens,)](
        out,
        logits,
        logits.stride(0),
        cache,
        cache.stride(0),
        cache.stride(1),
        slots,
        col,
        vocab_size,
        BLOCK=triton.next_power_of_2(vocab_size),
    )
    return out


if __name__ == "__main__":
    num_reqs, num_steps, vocab_size = 2, 3, 100
    cache = torch.zeros(num_reqs, num_steps, vocab_size + 1)  # one column wider than the logits
    slots = torch.arange(num_reqs, dtype=torch.int32)
    steps = [torch.randn(num_reqs, vocab_size) for _ in range(num_steps)]
    for col, logits in enumerate(steps):
        draft_sample(logits, slots, cache, col)
    for col, logits in enumerate(steps):
        ok = torch.equal(cache[:, col, :vocab_size], logits)
        print(f"step {col}: cached logits {'match' if ok else 'are SHIFTED'}")
