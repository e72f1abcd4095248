"""The preprocessing step of a flash-attention backward pass computes, per query row,
`Delta = sum(O * DO)`. The kernel uses the tutorials' single-letter names and reads the output
gradient DO with O's strides. Right while DO has O's layout; autograd hands over whatever the
next op produced, here a head-major DO (`[Z, M, H, D]` transposed to `[Z, H, M, D]`), and the
sum mixes heads.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _attn_bwd_preprocess(
    O, DO, Delta,
    stride_oz, stride_oh, stride_om,
    stride_doz, stride_doh, stride_dom,
    H, N_CTX,
    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr,
):
    zh = tl.program_id(0).to(tl.int64)
    z = zh // H
    h = zh % H
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    mask = offs_m[:, None] < N_CTX
    o = tl.load(O + z * stride_oz + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :], mask=mask, other=0.0)
    do = tl.load(DO + z * stride_oz + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :], mask=mask, other=0.0)  # expect: SC005
    tl.store(Delta + zh * N_CTX + offs_m, tl.sum(o * do, axis=1), mask=offs_m < N_CTX)


def attn_bwd_preprocess(o, do):
    z, h, n_ctx, head_dim = o.shape
    delta = torch.empty(z, h, n_ctx, dtype=torch.float32)
    _attn_bwd_preprocess[(z * h,)](
        o, do, delta,
        o.stride(0), o.stride(1), o.stride(2),
        do.stride(0), do.stride(1), do.stride(2),
        h, n_ctx,
        BLOCK_M=triton.next_power_of_2(n_ctx), HEAD_DIM=head_dim,
    )
    return delta


def run():
    o = torch.randn(2, 3, 5, 4)
    do = torch.randn(2, 5, 3, 4).transpose(1, 2)  # same shape as o, heads outermost in memory
    return torch.allclose(attn_bwd_preprocess(o, do), (o * do).sum(dim=-1), atol=1e-5)
