"""Fixed twin of segment_sum_expanded_index.py: the kernel takes the strides of the index and of
the values, so the expanded index (column stride 0) is read as the broadcast it is."""
import torch
import triton
import triton.language as tl


@triton.jit
def _scatter_add_rows_kernel(
    out_ptr, stride_out, index_ptr, stride_idx_i, stride_idx_j, src_ptr, stride_src_i, stride_src_j,
    n_cols, BLOCK: tl.constexpr,
):
    i = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, BLOCK)
    valid = j < n_cols
    seg = tl.load(index_ptr + i * stride_idx_i + j * stride_idx_j, mask=valid, other=0).to(tl.int64)
    x = tl.load(src_ptr + i * stride_src_i + j * stride_src_j, mask=valid, other=0.0)
    tl.atomic_add(out_ptr + seg * stride_out + j, x, mask=valid)


def segment_sum(values, segment_ids, n_segments):
    """Sum the rows of `values` [n_rows, d] (float32) that share a segment id (int64 [n_rows])."""
    out = torch.zeros(n_segments, values.shape[1], dtype=values.dtype)
    index = segment_ids.view(-1, 1).expand_as(values)
    src = values
    n_rows, n_cols = src.shape
    _scatter_add_rows_kernel[(n_rows,)](
        out, out.stride(0), index, index.stride(0), index.stride(1), src, src.stride(0), src.stride(1),
        n_cols, BLOCK=triton.next_power_of_2(n_cols),
    )
    return out


def run():
    n_rows, d, n_seg = 6, 5, 3
    values = torch.randn(n_rows, d)
    id_storage = torch.randint(0, n_seg, (n_rows * d,))
    segment_ids = id_storage[:n_rows]
    expected = torch.zeros(n_seg, d).index_add_(0, segment_ids, values)
    return torch.allclose(segment_sum(values, segment_ids, n_seg), expected, atol=1e-6)
