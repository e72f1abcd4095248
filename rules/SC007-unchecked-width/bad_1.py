# A cache row written up to the logits' width, unchecked.
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(cache_ptr, cache_stride, logits_ptr, logits_stride, n_vocab, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    valid = offs < n_vocab
    vals = tl.load(logits_ptr + row * logits_stride + offs, mask=valid)
    tl.store(cache_ptr + row * cache_stride + offs, vals, mask=valid)


def copy_into(cache, logits):
    n_rows, n_vocab = logits.shape
    _copy_kernel[(n_rows,)](cache, cache.stride(0), logits, logits.stride(0), n_vocab, BLOCK=triton.next_power_of_2(n_vocab))  # expect: SC007
