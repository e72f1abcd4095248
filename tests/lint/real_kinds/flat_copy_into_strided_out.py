"""An elementwise op with an optional `out=` tensor, as ATen-style operator libraries offer: the
launcher makes its input contiguous and launches a flat kernel over `numel()` elements, each at
`ptr + offs` in both tensors. The output it writes is whatever the caller hands in: an `out=`
that is a strided view (every other element of a larger buffer, `big[::2]`) is written as if it
were packed, into the wrong elements.

Kind: a flat (unit-step, numel-bounded) kernel writing a caller-supplied output whose layout the
launcher never checks nor copies back (seen in a FlagGems `row_indices_copy` kernel, whose
review found `out=big[::2]` written into the wrong locations, flagos-ai/FlagGems#5939)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _scaled_copy_kernel(src_ptr, dst_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    x = tl.load(src_ptr + offs, mask=valid, other=0.0)
    tl.store(dst_ptr + offs, x * scale, mask=valid)  # expect: SC003


def scaled_copy(src, scale, out=None):
    """`out = src * scale` elementwise (float32); `out`, when given, has `src`'s shape."""
    src = src.contiguous()
    if out is None:
        out = torch.empty_like(src)
    n = src.numel()
    _scaled_copy_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
    return out


def run():
    src = torch.arange(6, dtype=torch.float32)
    big = torch.zeros(12)
    out = big[::2]  # every other element: stride 2
    scaled_copy(src, 2.0, out=out)
    return torch.equal(out, src * 2.0)
