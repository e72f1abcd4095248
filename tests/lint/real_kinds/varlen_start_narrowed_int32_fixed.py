"""Fixed twin of varlen_start_narrowed_int32.py: the sequence bounds stay int64, so the base
offset is computed in 64 bits."""
import torch
import triton
import triton.language as tl


@triton.jit
def _varlen_cumsum_kernel(s, o, cu_seqlens, H: tl.constexpr, BT: tl.constexpr):
    i_n, i_h = tl.program_id(0), tl.program_id(1)
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    p_s = s + bos * H + i_h
    p_o = o + bos * H + i_h
    carry = tl.zeros([], dtype=tl.float32)
    for start in range(0, eos - bos, BT):
        o_t = start + tl.arange(0, BT)
        m_t = o_t < eos - bos
        b_s = tl.load(p_s + o_t * H, mask=m_t, other=0.0)
        b_o = tl.cumsum(b_s, axis=0) + carry
        tl.store(p_o + o_t * H, b_o, mask=m_t)
        carry += tl.sum(b_s, axis=0)


def varlen_cumsum(s, seq_lens):
    """Per-sequence cumulative sum over the tokens of s [total_tokens, H] (float32), the
    sequences packed one after another with lengths `seq_lens` (int [n_seqs])."""
    total, n_heads = s.shape
    cu_seqlens = torch.zeros(seq_lens.numel() + 1, dtype=torch.int64)
    cu_seqlens[1:] = torch.cumsum(seq_lens, dim=0)
    s = s.contiguous()
    o = torch.empty_like(s)
    _varlen_cumsum_kernel[(seq_lens.numel(), n_heads)](s, o, cu_seqlens, H=n_heads, BT=4)
    return o


def run():
    lens = [3, 6, 2]
    s = torch.randn(sum(lens), 4)
    expected = torch.cat([part.cumsum(0) for part in s.split(lens)])
    return torch.allclose(varlen_cumsum(s, torch.tensor(lens)), expected, atol=1e-5)
