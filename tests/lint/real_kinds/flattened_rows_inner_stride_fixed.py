"""Fixed twin of flattened_rows_inner_stride.py: the launcher flattens the leading dimensions with
`reshape` (a view when they are packed, a copy otherwise) and passes the flattened tensor's row
stride."""
import torch
import triton
import triton.language as tl


@triton.jit
def _cross_entropy_kernel(loss_ptr, logits_ptr, stride_row, target_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    valid = cols < n_cols
    x = tl.load(logits_ptr + row * stride_row + cols, mask=valid, other=float("-inf"))
    y = tl.load(target_ptr + row)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    x_y = tl.sum(tl.where(cols == y, x, 0.0), axis=0)
    tl.store(loss_ptr + row, lse - x_y)


def cross_entropy(logits, target):
    """Per-token loss [B, S] for logits [B, S, V] (float32) and target [B, S] (int64)."""
    b, s, v = logits.shape
    rows = logits.reshape(b * s, v)
    if rows.stride(1) != 1:
        rows = rows.contiguous()
    target = target.reshape(-1).contiguous()
    loss = torch.empty(b * s, dtype=torch.float32)
    _cross_entropy_kernel[(b * s,)](
        loss,
        rows,
        rows.stride(0),
        target,
        v,
        BLOCK=triton.next_power_of_2(v),
    )
    return loss.view(b, s)


def run():
    full = torch.randn(2, 6, 11)  # [B, S + 1, V]
    logits = full[:, :-1]  # next-token logits: stride(1) is V, but stride(0) is (S + 1) * V
    target = torch.randint(0, 11, (2, 5))
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), reduction="none")
    return torch.allclose(cross_entropy(logits, target), expected.view(2, 5), atol=1e-5)
