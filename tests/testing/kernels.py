"""Small Triton kernels and launchers the layout tests run: correct ones, and our own
reproduction of each bug kind the layout tests exist to find.

Kernels run compiled on a GPU where there is one, else on the CPU through the interpreter
(tests/conftest.py sets TRITON_INTERPRET=1 when there is no CUDA driver). Sizes stay small.

Bug kinds (each beside a correct twin, so that a test can show the twin passes):

* :func:`scale_heads` — a row stride taken from a size-1 dimension: ``(B, H, T, D)`` rows
  ``b * T + t`` stepped by ``stride(T)``, which is only the row step after a copy; for ``T = 1``
  the launcher's ``.contiguous()`` copies nothing (size-1 strides are ignored by
  ``is_contiguous``) and a contiguous input is read wrong.
* :func:`row_loss` — an in-place side effect that depends on the layout: ignored rows of the
  caller's logits are zeroed, but only when their inner stride is 1 (else a copy is zeroed).
* :func:`mul_flat` — a kernel that ignores strides entirely (one flat index for every tensor).
* :func:`row_top1` — a top-k-like reduction (k = 1: value and index) reading its input as dense.
* :func:`gather_rows` — an index tensor whose stride is ignored.
"""

import os

import torch
import triton
import triton.language as tl

from stridecheck.guard import stride_guard

DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"

# --- rows: correct, and the founding bug's shape -------------------------------------------------


@triton.jit
def _scale_rows_kernel(
    out_ptr, out_stride_0, out_stride_1, x_ptr, x_stride_0, x_stride_1, n_cols, BLOCK: tl.constexpr
):
    # out, x: [n_rows, n_cols]
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride_0 + cols * x_stride_1, mask=mask)
    tl.store(out_ptr + row * out_stride_0 + cols * out_stride_1, x * 2, mask=mask)


def scale_rows(x):
    """``2 * x`` for a 2-D ``x``; every stride honoured: right in every layout."""
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    _scale_rows_kernel[(n_rows,)](
        out, out.stride(0), out.stride(1), x, x.stride(0), x.stride(1), n_cols, BLOCK=triton.next_power_of_2(n_cols)
    )
    return out


def scale_rows_dense_only(x):
    """``2 * x``, reading ``x`` as if its inner stride were 1: wrong for a transposed ``x``."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = x.shape
    _scale_rows_kernel[(n_rows,)](
        out, out.stride(0), 1, x, x.stride(0), 1, n_cols, BLOCK=triton.next_power_of_2(n_cols)  # stridecheck: ignore[SC004] (assumes unit inner stride on purpose)
    )
    return out


@stride_guard(x="M N")
def guarded_scale_rows_dense_only(x):
    """The same, with a guard that refuses a non-unit inner stride before the launch."""
    return scale_rows_dense_only(x)


def scale_rows_by_width(x):
    """Rows stepped by the width: right only where ``stride(0) == n_cols`` (the founding bug's shape)."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n_rows, n_cols = x.shape
    _scale_rows_kernel[(n_rows,)](
        out, out.stride(0), 1, x, n_cols, x.stride(1), n_cols, BLOCK=triton.next_power_of_2(n_cols)  # stridecheck: ignore[SC004] (buggy on purpose)
    )
    return out


@triton.jit
def _add_into_kernel(y_ptr, y_stride_0, x_ptr, x_stride_0, x_stride_1, n_cols, BLOCK: tl.constexpr):
    # y += x; y: [n_rows, n_cols] with unit inner stride (assumed), x: [n_rows, n_cols]
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride_0 + cols * x_stride_1, mask=mask)
    y = tl.load(y_ptr + row * y_stride_0 + cols, mask=mask)
    tl.store(y_ptr + row * y_stride_0 + cols, y + x, mask=mask)


def add_into(y, x):
    """In place: ``y += x``; returns nothing. Correct for any ``x``, and any ``y`` whose inner
    stride is 1 (a kernel may assume that for a tensor it writes)."""
    n_rows, n_cols = y.shape
    _add_into_kernel[(n_rows,)](
        y, y.stride(0), x, x.stride(0), x.stride(1), n_cols, BLOCK=triton.next_power_of_2(n_cols)
    )


def add_into_with_x_stride(y, x):
    """In place, but ``y`` is addressed with ``x``'s row stride (SC005's shape)."""
    n_rows, n_cols = y.shape
    _add_into_kernel[(n_rows,)](
        y, x.stride(0), x, x.stride(0), x.stride(1), n_cols, BLOCK=triton.next_power_of_2(n_cols)  # stridecheck: ignore[SC005] (buggy on purpose)
    )


@triton.jit
def _fill_rows_kernel(out_ptr, out_stride_0, value, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + row * out_stride_0 + cols, value, mask=cols <= n_cols)  # one column too many


def fill_rows_off_by_one(out, value):
    n_rows, n_cols = out.shape
    _fill_rows_kernel[(n_rows,)](out, out.stride(0), value, n_cols, BLOCK=triton.next_power_of_2(n_cols + 1))


# --- bug kind 1: a row stride taken from a size-1 dimension ---------------------------------


@triton.jit
def _scale_heads_kernel(
    out_ptr,  # [B * T, H, D] contiguous
    q_ptr,  # [B, T, H, D] as rows b * T + t
    q_row_stride,
    q_head_stride,
    cos_ptr,  # [T, D] contiguous
    seq_len,
    n_heads,
    head_dim,
    BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    t = row % seq_len
    heads = tl.arange(0, BLOCK_H)[:, None]
    dims = tl.arange(0, BLOCK_D)[None, :]
    mask = (heads < n_heads) & (dims < head_dim)
    q = tl.load(q_ptr + row * q_row_stride + heads * q_head_stride + dims, mask=mask)
    c = tl.load(cos_ptr + t * head_dim + dims, mask=dims < head_dim)
    tl.store(out_ptr + row * n_heads * head_dim + heads * head_dim + dims, q * c, mask=mask)


def _scale_heads(q, cos, row_stride_of):
    batch, n_heads, seq_len, head_dim = q.shape
    # Rows are (b, t) pairs in a [B, T, H, D] view; .contiguous() makes that view dense.
    qt = q.transpose(1, 2).contiguous()
    cos = cos.contiguous()
    out = torch.empty(batch * seq_len, n_heads, head_dim, dtype=q.dtype, device=q.device)
    _scale_heads_kernel[(batch * seq_len,)](
        out, qt, row_stride_of(qt), qt.stride(2), cos, seq_len, n_heads, head_dim,
        BLOCK_H=triton.next_power_of_2(n_heads), BLOCK_D=triton.next_power_of_2(head_dim),
    )
    return out.view(batch, seq_len, n_heads, head_dim).transpose(1, 2)


def scale_heads(q, cos):
    """``q * cos[t]`` for q ``[B, H, T, D]``, cos ``[T, D]``. BUG: rows ``b * T + t`` are stepped
    by ``stride(1)`` of the ``[B, T, H, D]`` view — the row step only while ``T > 1`` forces a
    copy; at ``T = 1`` a contiguous q is already "contiguous" there, and dimension 1 has size 1."""
    return _scale_heads(q, cos, lambda qt: qt.stride(1))


def scale_heads_fixed(q, cos):
    """The same with the row step of a dense ``[B, T, H, D]`` view: ``H * D``."""
    return _scale_heads(q, cos, lambda qt: qt.shape[2] * qt.shape[3])


def scale_heads_reference(q, cos):
    return q * cos[None, None]


# --- bug kind 2: an in-place side effect on an input that depends on the layout ----------


@triton.jit
def _row_loss_kernel(
    loss_ptr,  # [n_rows]
    x_ptr,  # [n_rows, n_cols], unit inner stride
    x_stride_0,
    target_ptr,  # [n_rows]
    target_stride,
    n_cols,
    ignore_index,
    ZERO_IGNORED: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    y = tl.load(target_ptr + row * target_stride)
    x = tl.load(x_ptr + row * x_stride_0 + cols, mask=mask, other=-float("inf"))
    if y == ignore_index:
        if ZERO_IGNORED:
            # The "trick": the row's slot is reused as scratch space by a later pass.
            tl.store(x_ptr + row * x_stride_0 + cols, tl.zeros([BLOCK], dtype=x.dtype), mask=mask)
        tl.store(loss_ptr + row, 0.0)
    else:
        m = tl.max(x, axis=0)
        lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
        x_y = tl.sum(tl.where(cols == y, x, 0.0), axis=0)
        tl.store(loss_ptr + row, lse - x_y)


def _row_loss(logits, target, zero_ignored, ignore_index=-100):
    # The kernel needs a unit inner stride: a copy where it is not 1.
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    n_rows, n_cols = logits.shape
    loss = torch.empty(n_rows, dtype=logits.dtype, device=logits.device)
    _row_loss_kernel[(n_rows,)](
        loss, logits, logits.stride(0), target, target.stride(0), n_cols, ignore_index,
        ZERO_IGNORED=zero_ignored, BLOCK=triton.next_power_of_2(n_cols),
    )
    return loss


def row_loss(logits, target):
    """Per-row cross-entropy, 0 for ``target == -100``. BUG: zeroes the caller's logits rows of
    ignored targets — only where its inner stride is 1 (else a copy's rows)."""
    return _row_loss(logits, target, zero_ignored=True)


def row_loss_fixed(logits, target):
    return _row_loss(logits, target, zero_ignored=False)


def row_loss_reference(logits, target):
    return torch.nn.functional.cross_entropy(logits, target, ignore_index=-100, reduction="none")


# --- bug kind 3: a kernel that ignores strides entirely ------------------------------------


@triton.jit
def _mul_flat_kernel(out_ptr, a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask), mask=mask)  # stridecheck: ignore[SC003] (buggy on purpose)


def mul_flat(a, b):
    """``a * b`` by one flat index for all three tensors. BUG: right only when both are dense in
    the same order (``empty_like`` copies ``a``'s strides to ``out``, the kernel ignores them)."""
    out = torch.empty_like(a)
    _mul_flat_kernel[(triton.cdiv(a.numel(), 64),)](out, a, b, a.numel(), BLOCK=64)
    return out


def mul_flat_fixed(a, b):
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty(a.shape, dtype=a.dtype, device=a.device)
    _mul_flat_kernel[(triton.cdiv(a.numel(), 64),)](out, a, b, a.numel(), BLOCK=64)
    return out


# --- bug kind 4: a top-k-like reduction that ignores its input's strides --------------


@triton.jit
def _row_top1_kernel(value_ptr, index_ptr, x_ptr, x_stride_0, x_stride_1, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride_0 + cols * x_stride_1, mask=cols < n_cols, other=-float("inf"))
    best = tl.max(x, axis=0)
    # The first column holding the maximum, as torch.max gives it.
    index = tl.min(tl.where(x == best, cols, BLOCK), axis=0)
    tl.store(value_ptr + row, best)
    tl.store(index_ptr + row, index.to(tl.int64))


def _row_top1(x, x_stride_0, x_stride_1):
    n_rows, n_cols = x.shape
    values = torch.empty(n_rows, dtype=x.dtype, device=x.device)
    indices = torch.empty(n_rows, dtype=torch.int64, device=x.device)
    _row_top1_kernel[(n_rows,)](values, indices, x, x_stride_0, x_stride_1, n_cols, BLOCK=triton.next_power_of_2(n_cols))
    return values, indices


def row_top1(x):
    """The largest value of each row and its column. BUG: reads ``x`` as dense rows."""
    return _row_top1(x, x.shape[1], 1)  # stridecheck: ignore[SC004] (buggy on purpose)


def row_top1_fixed(x):
    return _row_top1(x, x.stride(0), x.stride(1))


def row_top1_reference(x):
    return tuple(torch.max(x, dim=1))


# --- bug kind 5: an index tensor whose stride is ignored ------------------------------------


@triton.jit
def _gather_rows_kernel(
    out_ptr, x_ptr, x_stride_0, x_stride_1, index_ptr, index_stride, n_src_rows, n_cols, BLOCK: tl.constexpr
):
    # out[i, :] = x[index[i], :]; out: [n_index, n_cols] contiguous
    i = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    src = tl.load(index_ptr + i * index_stride).to(tl.int64)
    # An index out of range selects zeros, as bounds-checked gathers do (never a wild address).
    valid = (src >= 0) & (src < n_src_rows)
    row = tl.where(valid, src, 0)
    x = tl.load(x_ptr + row * x_stride_0 + cols * x_stride_1, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + i * n_cols + cols, tl.where(valid, x, 0.0), mask=cols < n_cols)


def _gather_rows(x, index, index_stride):
    n_cols = x.shape[1]
    out = torch.empty(index.shape[0], n_cols, dtype=x.dtype, device=x.device)
    _gather_rows_kernel[(index.shape[0],)](
        out, x, x.stride(0), x.stride(1), index, index_stride, x.shape[0], n_cols, BLOCK=triton.next_power_of_2(n_cols)
    )
    return out


def gather_rows(x, index):
    """``x[index]`` for a 1-D ``index``. BUG: ``index`` is read as dense (its stride ignored)."""
    return _gather_rows(x, index, 1)


def gather_rows_fixed(x, index):
    return _gather_rows(x, index, index.stride(0))


def gather_rows_reference(x, index):
    return torch.index_select(x, 0, index)
