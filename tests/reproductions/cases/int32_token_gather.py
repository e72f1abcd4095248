"""An embedding lookup gathers one table row per token. The token id is loaded as int32 and
multiplied by the table's row stride in 32-bit arithmetic: a vocabulary of 152,064 rows of
16,384 values (2.5e9 elements) wraps past 2**31 for every id from 131,072 up, and the row read is
another token's (or out of bounds). Invisible at test sizes: run() returns True, which is why
VISIBLE_AT_SMALL_SIZE is False below.
"""

import torch
import triton
import triton.language as tl

VISIBLE_AT_SMALL_SIZE = False  # the fault needs a table of more than 2**31 elements


@triton.jit
def _embedding_kernel(
    out_ptr,  # [num_tokens, hidden]
    out_stride_token,
    table_ptr,  # [vocab, hidden]
    table_stride_row,
    ids_ptr,  # [num_tokens], int32
    hidden,
    BLOCK: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    token_id = tl.load(ids_ptr + token)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    row = tl.load(table_ptr + token_id * table_stride_row + cols, mask=mask)  # expect: SC006
    tl.store(out_ptr + token * out_stride_token + cols, row, mask=mask)


def embedding(table, ids):
    hidden = table.shape[1]
    out = torch.empty(ids.numel(), hidden, dtype=table.dtype)
    _embedding_kernel[(ids.numel(),)](
        out, out.stride(0), table, table.stride(0), ids, hidden, BLOCK=triton.next_power_of_2(hidden)
    )
    return out


def run():
    table = torch.randn(50, 24)[:, :20]
    ids = torch.tensor([7, 0, 49, 7], dtype=torch.int32)
    return torch.equal(embedding(table, ids), table[ids.long()])
