"""The corrected twin of mask_stepped_by_ids_stride.py: the mask is addressed with its own row
stride."""

import torch
import triton
import triton.language as tl


@triton.jit
def _masked_logprob_sum_kernel(
    out_ptr,  # [num_seqs], float32
    logprobs_ptr,  # [num_seqs, seq_len], float32
    logprobs_stride_seq,
    loss_mask_ptr,  # [num_seqs, seq_len], bool as int8
    loss_mask_stride_seq,
    seq_len,
    BLOCK: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    pos = tl.arange(0, BLOCK)
    valid = pos < seq_len
    lp = tl.load(logprobs_ptr + seq * logprobs_stride_seq + pos, mask=valid, other=0.0)
    keep = tl.load(loss_mask_ptr + seq * loss_mask_stride_seq + pos, mask=valid, other=0)
    tl.store(out_ptr + seq, tl.sum(tl.where(keep != 0, lp, 0.0), axis=0))


def masked_logprob_sum(logprobs, loss_mask):
    num_seqs, seq_len = logprobs.shape
    out = torch.empty(num_seqs, dtype=torch.float32)
    _masked_logprob_sum_kernel[(num_seqs,)](
        out, logprobs, logprobs.stride(0), loss_mask, loss_mask.stride(0), seq_len,
        BLOCK=triton.next_power_of_2(seq_len),
    )
    return out


def run():
    logprobs = -torch.rand(3, 10)
    attention = torch.randint(0, 2, (3, 16), dtype=torch.int8)
    loss_mask = attention[:, 6:]  # the last 10 positions; rows 16 apart
    expected = (logprobs * loss_mask).sum(dim=1)
    return torch.allclose(masked_logprob_sum(logprobs, loss_mask), expected)
