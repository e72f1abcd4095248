"""Fixed twin of banned_token_ids_unchecked.py: the kernel masks ids at or past the logits' width
(ids the model cannot emit need no ban)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _ban_tokens_kernel(logits_ptr, stride_row, vocab, banned_ptr, stride_banned, n_banned, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    valid = offs < n_banned
    tok = tl.load(banned_ptr + row * stride_banned + offs, mask=valid, other=0).to(tl.int64)
    tl.store(logits_ptr + row * stride_row + tok, float("-inf"), mask=valid & (tok < vocab))


def ban_tokens_(logits, banned_ids):
    """Set logits[r, banned_ids[r, j]] = -inf in place; logits [R, V] float32 (unit column
    stride), banned_ids int [R, n] of tokenizer ids."""
    n_rows, vocab = logits.shape
    n_banned = banned_ids.shape[1]
    _ban_tokens_kernel[(n_rows,)](
        logits, logits.stride(0), vocab, banned_ids, banned_ids.stride(0), n_banned,
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
