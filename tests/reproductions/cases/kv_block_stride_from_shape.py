"""A paged-attention helper copies whole KV-cache blocks (prefix caching). The kernel takes a
proper block stride, but the launcher fills it with `block_size * num_heads * head_dim`, the
size of a packed block. The key cache here is `kv_cache[:, 0]` of a cache that interleaves keys
and values per block, so its blocks are twice that far apart: the copy reads and writes the
values' half.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _copy_blocks_kernel(cache_ptr, block_stride, src_ptr, dst_ptr, block_numel, BLOCK: tl.constexpr):
    pair = tl.program_id(0).to(tl.int64)
    src = tl.load(src_ptr + pair).to(tl.int64)
    dst = tl.load(dst_ptr + pair).to(tl.int64)
    for start in range(0, block_numel, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < block_numel
        x = tl.load(cache_ptr + src * block_stride + offs, mask=mask)
        tl.store(cache_ptr + dst * block_stride + offs, x, mask=mask)


def copy_blocks(key_cache, src_blocks, dst_blocks):
    num_blocks, block_size, num_heads, head_dim = key_cache.shape
    _copy_blocks_kernel[(src_blocks.numel(),)](
        key_cache,
        block_size * num_heads * head_dim,  # expect: SC004
        src_blocks,
        dst_blocks,
        block_size * num_heads * head_dim,
        BLOCK=64,
    )


def run():
    kv_cache = torch.randn(5, 2, 4, 2, 8)  # [blocks, key/value, block_size, heads, head_dim]
    key_cache = kv_cache[:, 0]
    before = kv_cache.clone()
    copy_blocks(key_cache, torch.tensor([1, 3]), torch.tensor([0, 4]))
    expected = before.clone()
    expected[[0, 4], 0] = before[[1, 3], 0]
    return torch.equal(kv_cache, expected)
