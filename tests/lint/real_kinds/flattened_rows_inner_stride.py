"""A cross-entropy kernel takes logits [B, S, V] and treats them as B * S rows: one program per
row, each row at `row * stride_row`. The launcher passes the stride of dimension 1 and only checks
the last dimension's stride. That is the row stride of the flattened tensor only while dimension 0
is packed over dimension 1; the next-token logits `full[:, :-1]` are not, and every sequence
after the first is read shifted by one token per sequence before it.

Kind: an index over flattened leading dimensions stepped by one dimension's stride (seen in
TransformerEngine's Triton cross-entropy, NVIDIA/TransformerEngine#2746, whose fix still checks only
dimension 1; and kernl's layer norm, which passed out.stride(0) of a 3-D output, ELS-RD/kernl#192)."""
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
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    target = target.reshape(-1).contiguous()
    loss = torch.empty(b * s, dtype=torch.float32)
    _cross_entropy_kernel[(b * s,)](
        loss,
        logits,
        logits.stride(-2),  # expect: SC005
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
