# The founding bug: a cache column stepped by the vocabulary size.
import triton
import triton.language as tl


@triton.jit
def store_step_kernel(cache_ptr, cache_row_stride, step_ptr, logits_ptr, logits_row_stride, n_vocab,
                      BLOCK: tl.constexpr):
    req = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_vocab
    step = tl.load(step_ptr).to(tl.int64)
    vals = tl.load(logits_ptr + req * logits_row_stride + offs, mask=mask)
    tl.store(cache_ptr + req * cache_row_stride + step * n_vocab + offs, vals, mask=mask)  # expect: SC001
