"""The corrected twin of hidden_state_cache_layer.py: the cache's layer stride is passed and
used, so padded rows are stepped over."""

import torch
import triton
import triton.language as tl


@triton.jit
def _save_layer_kernel(
    cache_ptr,  # [num_slots, num_layers, width]
    cache_stride_slot,
    cache_stride_layer,
    hidden_ptr,  # [num_tokens, hidden_size]
    hidden_stride_token,
    slot_ptr,  # [num_tokens]
    layer,
    hidden_size,
    BLOCK: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_ptr + token).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < hidden_size
    h = tl.load(hidden_ptr + token * hidden_stride_token + offs, mask=mask)
    tl.store(cache_ptr + slot * cache_stride_slot + layer * cache_stride_layer + offs, h, mask=mask)


def save_layer(cache, hidden, slots, layer):
    num_tokens, hidden_size = hidden.shape
    if cache.shape[-1] < hidden_size:
        raise ValueError(f"cache rows hold {cache.shape[-1]} values, the hidden states {hidden_size}")
    _save_layer_kernel[(num_tokens,)](
        cache, cache.stride(0), cache.stride(1), hidden, hidden.stride(0), slots, layer, hidden_size,
        BLOCK=triton.next_power_of_2(hidden_size),
    )


def run():
    hidden_size, num_layers = 12, 3
    cache = torch.zeros(4, num_layers, 16)
    slots = torch.tensor([2, 0], dtype=torch.int64)
    states = [torch.randn(2, hidden_size) for _ in range(num_layers)]
    for layer, hidden in enumerate(states):
        save_layer(cache, hidden, slots, layer)
    return all(torch.equal(cache[slots, layer, :hidden_size], states[layer]) for layer in range(num_layers))
