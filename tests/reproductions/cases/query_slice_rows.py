"""A query-norm kernel (RMS norm of each token's query) reads rows as `token * q_size`, which
assumes packed rows. The launcher hands it the query part of a fused QKV projection,
`qkv[:, :q_size]`, a view whose rows are `q_size + 2 * kv_size` apart: every token after the
first reads part of the previous token's keys and values.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _q_rms_norm_kernel(out_ptr, q_ptr, weight_ptr, q_size, eps, BLOCK: tl.constexpr):
    token = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < q_size
    q = tl.load(q_ptr + token * q_size + cols, mask=mask, other=0.0)  # expect: SC003
    w = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(q * q, axis=0) / q_size + eps)
    tl.store(out_ptr + token * q_size + cols, q / rms * w, mask=mask)


def q_rms_norm(qkv, weight, q_size, eps=1e-6):
    q = qkv[:, :q_size]
    out = torch.empty(q.shape, dtype=q.dtype)
    _q_rms_norm_kernel[(q.shape[0],)](out, q, weight, q_size, eps, BLOCK=triton.next_power_of_2(q_size))
    return out


def run():
    q_size, kv_size = 16, 4
    qkv = torch.randn(3, q_size + 2 * kv_size)
    weight = torch.rand(q_size)
    q = qkv[:, :q_size]
    expected = q / torch.sqrt((q * q).mean(dim=1, keepdim=True) + 1e-6) * weight
    return torch.allclose(q_rms_norm(qkv, weight, q_size), expected, atol=1e-5)
