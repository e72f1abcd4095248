"""The last product of an attention head, O = P @ V, as a small blocked matrix product with the
tutorials' names. The output O is stored with the probabilities' strides (stride_pm, stride_pn)
instead of its own. P is [M, N] and O is [M, D]: the layouts agree only when N == D, so any
context length other than the head dimension scatters O's rows. (run() keeps N < D, so the
misplaced rows overlap inside O rather than land past its end.)
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _pv_kernel(
    P, V, O,
    M, N, D,
    stride_pm, stride_pn,
    stride_vn, stride_vd,
    stride_om, stride_od,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    rm = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    p = tl.load(P + rm[:, None] * stride_pm + rn[None, :] * stride_pn, mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
    v = tl.load(V + rn[:, None] * stride_vn + rd[None, :] * stride_vd, mask=(rn[:, None] < N) & (rd[None, :] < D), other=0.0)
    o = tl.sum(p[:, :, None] * v[None, :, :], axis=1)
    tl.store(O + rm[:, None] * stride_pm + rd[None, :] * stride_pn, o, mask=(rm[:, None] < M) & (rd[None, :] < D))  # expect: SC005


def probs_times_values(p, v):
    m, n = p.shape
    _, d = v.shape
    o = torch.zeros(m, d, dtype=p.dtype)
    _pv_kernel[(triton.cdiv(m, 8),)](
        p, v, o, m, n, d,
        p.stride(0), p.stride(1), v.stride(0), v.stride(1), o.stride(0), o.stride(1),
        BLOCK_M=8, BLOCK_N=triton.next_power_of_2(n), BLOCK_D=triton.next_power_of_2(d),
    )
    return o


def run():
    p = torch.softmax(torch.randn(6, 4), dim=-1)
    v = torch.randn(4, 6)
    return torch.allclose(probs_times_values(p, v), p @ v, atol=1e-5)
