# A row copy whose row offset is a 32-bit product.
import triton
import triton.language as tl


@triton.jit
def copy_rows_kernel(dst_ptr, dst_stride, src_ptr, src_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(src_ptr + row * src_stride + cols, mask=mask)  # expect: SC006
    tl.store(dst_ptr + row.to(tl.int64) * dst_stride + cols, x, mask=mask)
