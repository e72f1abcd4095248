"""A decode step appends each token's key and value to a contiguous KV cache. The kernel follows
the attention tutorials' naming (K, V, Kc, Vc) and reads V with K's strides. Right while k and v
are slices of one fused projection (same strides); a model whose values come from their own
projection, or a value tensor transposed to head-major, is appended scrambled.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _append_kv_kernel(
    K, V, Kc, Vc, Slot,
    stride_kt, stride_kh,
    stride_vt, stride_vh,
    stride_cs, stride_ch,
    H, D,
    BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    slot = tl.load(Slot + t).to(tl.int64)
    offs_h = tl.arange(0, BLOCK_H)
    offs_d = tl.arange(0, BLOCK_D)
    mask = (offs_h[:, None] < H) & (offs_d[None, :] < D)
    k = tl.load(K + t * stride_kt + offs_h[:, None] * stride_kh + offs_d[None, :], mask=mask)
    v = tl.load(V + t * stride_kt + offs_h[:, None] * stride_kh + offs_d[None, :], mask=mask)  # expect: SC005
    dst = slot * stride_cs + offs_h[:, None] * stride_ch + offs_d[None, :]
    tl.store(Kc + dst, k, mask=mask)
    tl.store(Vc + dst, v, mask=mask)


def append_kv(k, v, k_cache, v_cache, slots):
    num_tokens, heads, head_dim = k.shape
    assert v.shape == k.shape and k_cache.shape == v_cache.shape and k_cache.stride() == v_cache.stride()
    assert k_cache.shape[1:] == k.shape[1:] and k_cache.stride(-1) == 1
    _append_kv_kernel[(num_tokens,)](
        k, v, k_cache, v_cache, slots,
        k.stride(0), k.stride(1),
        v.stride(0), v.stride(1),
        k_cache.stride(0), k_cache.stride(1),
        heads, head_dim,
        BLOCK_H=triton.next_power_of_2(heads), BLOCK_D=triton.next_power_of_2(head_dim),
    )


def run():
    k = torch.randn(3, 2, 4)
    v = torch.randn(2, 3, 4).transpose(0, 1)  # [tokens, heads, dim], heads outermost in memory
    k_cache, v_cache = torch.zeros(6, 2, 4), torch.zeros(6, 2, 4)
    slots = torch.tensor([5, 0, 2])
    append_kv(k, v, k_cache, v_cache, slots)
    return torch.equal(k_cache[slots], k) and torch.equal(v_cache[slots], v)
