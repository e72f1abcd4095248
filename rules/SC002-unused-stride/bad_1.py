# The keep-mask is addressed with the ids' row stride; its own stride is ignored (SC005 reports the same address from the other side).
import triton
import triton.language as tl


@triton.jit
def masked_sum_kernel(out_ptr, ids_ptr, ids_stride, keep_ptr, keep_stride, n_tokens, BLOCK: tl.constexpr):  # expect: SC002
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_tokens
    ids = tl.load(ids_ptr + row * ids_stride + cols, mask=valid, other=0)
    keep = tl.load(keep_ptr + row * ids_stride + cols, mask=valid, other=0)
    tl.store(out_ptr + row, tl.sum(tl.where(keep != 0, ids, 0), axis=0))
