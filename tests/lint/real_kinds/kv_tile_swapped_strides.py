"""A single-head attention kernel walks K and V in tiles. The tile pointers are *initialised* with
each other's strides (K's tile with V's row and column strides, V's with K's) and then advanced
with the right ones. Nothing shows while K and V share a layout, which every test built; a K that
is every other row of a cache and a packed V read the wrong keys and values.

Kind: two pointers' stride sets crossed in the kernel (seen in FlagAttention's forward kernels,
flagos-ai/FlagAttention#45, fixed by #46)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _attn_row_kernel(
    out_ptr, stride_om, q_ptr, stride_qm, k_ptr, stride_kn, stride_kd, v_ptr, stride_vn, stride_vd,
    n_keys, sm_scale, D: tl.constexpr, BLOCK_N: tl.constexpr,
):
    m = tl.program_id(0).to(tl.int64)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + m * stride_qm + offs_d)
    k_ptrs = k_ptr + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd  # expect: SC005
    v_ptrs = v_ptr + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd  # expect: SC005
    m_i = float("-inf")
    l_i = 0.0
    acc = tl.zeros([D], dtype=tl.float32)
    for start in range(0, n_keys, BLOCK_N):
        valid = (start + offs_n) < n_keys
        k = tl.load(k_ptrs, mask=valid[:, None], other=0.0)
        s = tl.where(valid, tl.sum(k * q[None, :], axis=1) * sm_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=0))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(v_ptrs, mask=valid[:, None], other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        m_i = m_new
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    tl.store(out_ptr + m * stride_om + offs_d, acc / l_i)


def attention(q, k, v):
    """softmax(q @ k.T / sqrt(D)) @ v for q [M, D], k and v [N, D] (float32, unit last stride)."""
    n_q, d = q.shape
    out = torch.empty(n_q, d, dtype=torch.float32)
    _attn_row_kernel[(n_q,)](
        out, out.stride(0), q, q.stride(0), k, k.stride(0), k.stride(1), v, v.stride(0), v.stride(1),
        k.shape[0], d ** -0.5, D=d, BLOCK_N=4,
    )
    return out


def run():
    n, d = 6, 8
    q = torch.randn(3, d)
    k = torch.randn(2 * n, d)[::2]  # every other row of a cache: row stride 2 * d
    v = torch.randn(2 * n, d)[:n]  # packed rows at the front of a larger buffer
    expected = torch.softmax(q @ k.T * d ** -0.5, dim=-1) @ v
    return torch.allclose(attention(q, k, v), expected, atol=1e-5)
