"""A varlen chunk cumsum over packed sequences [total_tokens, H] reads each sequence's first token
from `cu_seqlens` and narrows it to 32 bits (`.to(tl.int32)`) although `cu_seqlens` is int64, then
multiplies it by the head count. Past 2**31 // H tokens in the batch (33.5M tokens at 64 heads:
a long-context packed training batch) the base offset wraps negative.

Kind: a row offset loaded from an int64 table, narrowed to int32, times a row pitch (seen in
flash-linear-attention, fla-org/flash-linear-attention#1082; FlashDeBERTa's varlen positions,
Knowledgator/FlashDeBERTa#11).

run() uses a few tokens, so it returns True: the fault needs more than 2**31 elements."""
import torch
import triton
import triton.language as tl


@triton.jit
def _varlen_cumsum_kernel(s, o, cu_seqlens, H: tl.constexpr, BT: tl.constexpr):
    i_n, i_h = tl.program_id(0), tl.program_id(1)
    bos = tl.load(cu_seqlens + i_n).to(tl.int32)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int32)
    p_s = s + bos * H + i_h  # expect: SC006
    p_o = o + bos * H + i_h  # expect: SC006
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
