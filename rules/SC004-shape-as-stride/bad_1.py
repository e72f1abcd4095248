# The slot stride of a state pool filled with the product of its inner sizes.
import torch
import triton
import triton.language as tl


@triton.jit
def _gather_kernel(out_ptr, pool_ptr, pool_slot_stride, slot_ptr, n_inner, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + i).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_inner
    x = tl.load(pool_ptr + slot * pool_slot_stride + offs, mask=mask)
    tl.store(out_ptr + i * n_inner + offs, x, mask=mask)


def gather(pool, slots):
    n_slots, heads, dim = pool.shape
    out = torch.empty(slots.numel(), heads, dim, dtype=pool.dtype)
    _gather_kernel[(slots.numel(),)](out, pool, heads * dim, slots, heads * dim, BLOCK=triton.next_power_of_2(heads * dim))  # expect: SC004
    return out
