"""A bad-words kernel sets the logit of every banned token id of a request to -inf. The ids come
from the tokenizer's vocabulary, which (for multimodal tokenizers with input-only placeholder
tokens) is wider than the model's output logits; nothing compares the ids with the logits' width,
so a placeholder id writes -inf into the next request's row, or past the end of the buffer.

Kind: a store at a column loaded from an id table, never bounded by the written tensor's width
(seen in vLLM's BadWords Triton kernel, vllm-project/vllm#48824)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _ban_tokens_kernel(logits_ptr, stride_row, banned_ptr, stride_banned, n_banned, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    valid = offs < n_banned
    tok = tl.load(banned_ptr + row * stride_banned + offs, mask=valid, other=0).to(tl.int64)
    tl.store(logits_ptr + row * stride_row + tok, float("-inf"), mask=valid)


def ban_tokens_(logits, banned_ids):
    """Set logits[r, banned_ids[r, j]] = -inf in place; logits [R, V] float32 (unit column
    stride), banned_ids int [R, n] of tokenizer ids."""
    n_rows = logits.shape[0]
    n_banned = banned_ids.shape[1]
    _ban_tokens_kernel[(n_rows,)](  # expect: SC007
        logits, logits.stride(0), banned_ids, banned_ids.stride(0), n_banned,
        BLOCK=triton.next_power_of_2(n_banned),
    )
    return logits


def run():
    vocab = 10  # the model's output width; the tokenizer also has placeholder ids 10 and 11
    logits = torch.randn(3, vocab)
    banned = torch.tensor([[1, 11], [4, 5], [0, 2]])
    expected = logits.clone()
    for r in range(3):
        for t in banned[r].tolist():
            if t < vocab:
                expected[r, t] = float("-inf")
    return torch.equal(ban_tokens_(logits, banned), expected)
