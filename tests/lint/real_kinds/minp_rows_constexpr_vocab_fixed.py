"""Fixed twin of minp_rows_constexpr_vocab.py: the kernel takes the row stride of the logits and
steps rows by it, so the padded-vocabulary view is filtered in place where it lives."""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _min_p_kernel(LOGITS, stride_row, log_min_p, VOCAB_SIZE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    valid = cols < VOCAB_SIZE
    row_ptr = LOGITS + row * stride_row
    x = tl.load(row_ptr + cols, mask=valid, other=float("-inf"))
    cutoff = tl.max(x, axis=0) + log_min_p
    tl.store(row_ptr + cols, tl.where(x < cutoff, float("-inf"), x), mask=valid)


def apply_min_p_(logits, min_p):
    """Mask, in place, the logits of `logits` [n_rows, vocab] (float32, unit column stride) below
    max + log(min_p)."""
    n_rows, vocab = logits.shape
    if logits.stride(1) != 1:
        raise ValueError(f"logits must have unit column stride, got strides {logits.stride()}")
    _min_p_kernel[(n_rows,)](
        logits, logits.stride(0), math.log(min_p), VOCAB_SIZE=vocab, BLOCK=triton.next_power_of_2(vocab)
    )
    return logits


def filtered_logits(model_out, vocab_size, min_p=0.1):
    """The model's output is padded to a multiple of 8 columns; only `vocab_size` are real tokens."""
    logits = model_out[:, :vocab_size]
    return apply_min_p_(logits, min_p)


def run():
    model_out = torch.randn(4, 40) * 3
    expected = model_out[:, :33].clone()
    cutoff = expected.max(dim=1, keepdim=True).values + math.log(0.1)
    expected[expected < cutoff] = float("-inf")
    return torch.equal(filtered_logits(model_out, 33), expected)
