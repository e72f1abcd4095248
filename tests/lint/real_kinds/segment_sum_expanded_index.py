"""A segment sum scatters the rows of `values` into `n_segments` output rows. The wrapper builds
the 2-D index the way torch's `scatter_add_` wants it, `segment_ids.view(-1, 1).expand_as(values)`,
a view whose column stride is 0; the 2-D fast-path kernel reads index and values as packed
`[n_rows, n_cols]` arrays (`i * n_cols + j`), so it reads other rows' ids (or past the ids).

Kind: a broadcast (stride-0) or strided view handed to a kernel that assumes packed rows (seen in
FlagGems' scatter_add_ 2-D fast path, flagos-ai/FlagGems#6017 and #6448)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _scatter_add_rows_kernel(out_ptr, index_ptr, src_ptr, n_cols, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, BLOCK)
    valid = j < n_cols
    seg = tl.load(index_ptr + i * n_cols + j, mask=valid, other=0).to(tl.int64)  # expect: SC003
    x = tl.load(src_ptr + i * n_cols + j, mask=valid, other=0.0)
    tl.atomic_add(out_ptr + seg * n_cols + j, x, mask=valid)


def segment_sum(values, segment_ids, n_segments):
    """Sum the rows of `values` [n_rows, d] (float32) that share a segment id (int64 [n_rows])."""
    out = torch.zeros(n_segments, values.shape[1], dtype=values.dtype)
    index = segment_ids.view(-1, 1).expand_as(values)
    src = values.contiguous()
    n_rows, n_cols = src.shape
    _scatter_add_rows_kernel[(n_rows,)](out, index, src, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return out


def run():
    n_rows, d, n_seg = 6, 5, 3
    values = torch.randn(n_rows, d)
    # The ids live at the front of a larger buffer, so the packed-row reads stay inside it.
    id_storage = torch.randint(0, n_seg, (n_rows * d,))
    segment_ids = id_storage[:n_rows]
    expected = torch.zeros(n_seg, d).index_add_(0, segment_ids, values)
    return torch.allclose(segment_sum(values, segment_ids, n_seg), expected, atol=1e-6)
