"""The founding bug, in miniature: a drafting sampler that caches each draft step's logits.

The cache is [max_num_reqs, num_steps, cache_width]. The kernel steps to the cache column by
`col * vocab_size` — the logical size of a row — where it must use `cache.stride(1)`. With a
cache exactly `vocab_size` wide the two are equal and every test passes; give it a cache one
column wider (a draft head that appends a column) and every step after the first lands shifted.

`stridecheck lint examples/buggy_sampler.py` reports the offset (SC001) and the launch that
writes a cache it never checked is wide enough (SC007). Run it (`python examples/buggy_sampler.py`,
with `TRITON_INTERPRET=1` on a machine without a GPU) to see the corruption.
"""

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
    # BUG: the column is stepped by the logical size; the cache's stride(1) is never passed.
    tl.store(cache_ptr + slot * cache_stride_0 + col * vocab_size + offs, logits, mask=mask)
    tl.store(out_ptr + tok, tl.argmax(logits, axis=0).to(tl.int64))


def draft_sample(logits, slots, cache, col):
    """Greedy draft step: returns argmax token ids [num_tokens] and caches `logits` in column `col`."""
    num_tokens, vocab_size = logits.shape
    out = torch.empty(num_tokens, dtype=torch.int64, device=logits.device)
    _draft_sample_kernel[(num_tokens,)](
        out,
        logits,
        logits.stride(0),
        cache,
        cache.stride(0),
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
