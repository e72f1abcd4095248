"""False default findings of SC005, SC007 and SC003 fixed by kind (issue 18, linter precision):
each kind has a case that must stay silent and, where one exists, a near miss that must stay.
(test_precision_kinds.py holds the SC001, SC002 and SC003 kinds.)"""

from __future__ import annotations

import pytest

from tests.lint.test_rules_launch import lint_tree


def _found(tmp_path, files, code, preview=True):
    if isinstance(files, str):
        files = {"mod.py": files}
    return [(f.span.line, f.code) for f in lint_tree(tmp_path, files, preview=preview) if f.code == code]


def _default(tmp_path, files, code):
    return _found(tmp_path, files, code, preview=False)


# -- a stride pinned by a check in another dimension of the pointer's tensor

SCALE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, s_ptr, n_cols, stride0, stride1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride0 + cols * stride1, mask=mask)
    s = tl.load(s_ptr + cols * stride1, mask=mask)
    tl.store(x_ptr + row * stride0 + cols * stride1, x * s, mask=mask)


def scale(x, weight):
    n_rows, n_cols = x.shape
    s0, s1 = x.stride(0), x.stride(1)
{check}
    _scale_kernel[(n_rows,)](x, weight, n_cols, x.stride(0), x.stride(1), BLOCK=128)
'''


@pytest.mark.parametrize("check", [
    "    if not weight.stride(0) == s1:\n        raise ValueError('weight')",
    "    assert weight.stride(0) == x.stride(1)",
    "    assert x.stride(1) == weight.stride(0)",
], ids=["if-raise-through-a-name", "assert", "assert-reversed"])
def test_a_stride_of_the_pointer_checked_equal_to_the_passed_one(tmp_path, check):
    assert _found(tmp_path, SCALE.replace("{check}", check), "SC005") == []


@pytest.mark.parametrize("check", [
    "",
    "    if not weight.stride(0) == s0:\n        raise ValueError('weight')",  # another stride of x
    "    if weight.stride(0) != s1:\n        print('weight')",  # no raise
], ids=["none", "other-stride", "no-raise"])
def test_near_miss_keeps_the_borrowed_stride(tmp_path, check):
    assert _found(tmp_path, SCALE.replace("{check}", check), "SC005") == [(13, "SC005")]


# -- a mask bound on a loop counter that only a pointer advance carries

LOOP_ROWS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _rows_kernel(a_ptr, out_ptr, M, K: tl.constexpr, stride_am, stride_ak: tl.constexpr,
                 stride_om, stride_ok: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    first = tl.program_id(1)
    step = tl.num_programs(1)
    a_ptrs = a_ptr + first * stride_am + cols * stride_ak
    o_ptrs = out_ptr + first * stride_om + cols * stride_ok
    if K % BLOCK == 0:
        in_cols = True
    else:
        in_cols = cols < K
    for r in range(first, M, step):
        a = tl.load(a_ptrs, mask=in_cols & (r < M), other=0)
        tl.store(o_ptrs, a, mask=in_cols)
        a_ptrs += step * stride_am
        o_ptrs += step * stride_om


def rows(a, out):
    M, K = a.shape
    _rows_kernel[(triton.cdiv(K, 128), 64)](a, out, M, K, stride_am=a.stride({am}), stride_ak=a.stride({ak}),
                                            stride_om=out.stride(0), stride_ok=out.stride(1), BLOCK=128)
'''


def test_a_loop_counter_bound_does_not_bound_the_column_term(tmp_path):
    assert _found(tmp_path, LOOP_ROWS.replace("{am}", "0").replace("{ak}", "1"), "SC005") == []


def test_an_arange_bound_in_the_loop_still_bounds_its_term(tmp_path):
    # `cols < M` bounds the column term itself: a.stride(1) for an index bounded by M is flagged.
    src = LOOP_ROWS.replace("in_cols & (r < M)", "cols < M").replace("{am}", "0").replace("{ak}", "1")
    assert _found(tmp_path, src, "SC005") == [(28, "SC005")]


# -- an address built under a constexpr branch every launch turns off, read after the branch

PAGED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _paged_kernel(out_ptr, k_ptr, table_ptr, stride_k0, stride_k1, stride_k2, stride_o0,
                  PAGE: tl.constexpr, HEAD: tl.constexpr, FLAT: tl.constexpr = False):
    tok = tl.program_id(0)
    head = tl.program_id(1)
    d = tl.arange(0, HEAD)
    if FLAT:
        blk = tl.load(table_ptr + tok)
        k_offset = blk * stride_k0 + head * stride_k1 + d
    else:
        blk = tl.load(table_ptr + tok // PAGE)
        k_offset = blk * stride_k0 + (tok % PAGE) * stride_k1 + head * stride_k2 + d
    k = tl.load(k_ptr + k_offset)
    tl.store(out_ptr + tok * stride_o0 + head * HEAD + d, k)


def gather(k, table, out):
    n_tok, n_heads = out.shape[0], k.shape[2]
    _paged_kernel[(n_tok, n_heads)](out, k, table, k.stride(0), k.stride(1), k.stride(2), out.stride(0),
                                    PAGE=k.shape[1], HEAD=k.shape[3]{flat})
'''


@pytest.mark.parametrize("flat", [", FLAT=False", ""], ids=["passed-false", "default-false"])
def test_an_address_of_a_dead_constexpr_arm_is_not_judged(tmp_path, flat):
    assert _found(tmp_path, PAGED.replace("{flat}", flat), "SC005") == []


def test_an_address_of_a_live_constexpr_arm_is_judged(tmp_path):
    # FLAT=True: heads are stepped by k.stride(1) while the grid bounds them by k.shape[2].
    assert _found(tmp_path, PAGED.replace("{flat}", ", FLAT=True"), "SC005") == [(25, "SC005")]


def test_an_address_made_after_the_branch_from_its_values_keeps_the_condition(tmp_path):
    src = PAGED.replace("k = tl.load(k_ptr + k_offset)", "k_ptrs = k_ptr + k_offset\n    k = tl.load(k_ptrs)")
    assert _found(tmp_path, src.replace("{flat}", ", FLAT=False"), "SC005") == []
    assert _found(tmp_path, src.replace("{flat}", ", FLAT=True"), "SC005") == [(26, "SC005")]



# -- `*t.stride()` of a tensor whose rank the launcher writes out binds every stride

SOFTMAX = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(S, stride_s0, stride_s1, P, stride_p0, stride_p1, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    s = tl.load(S + row * stride_s0 + cols * stride_s1, mask=mask, other=-float("inf"))
    e = tl.exp(s - tl.max(s, 0))
    tl.store(P + row * stride_s0 + cols * stride_s1, e / tl.sum(e, 0), mask=mask)


def refine(x, steps, group):
    idx = torch.empty((x.shape[0], x.shape[1] * 2), dtype=torch.int32, device=x.device)
    scores = torch.empty_like(idx, dtype=x.dtype)
    probs = {probs}
    for _ in range(steps):
        _softmax_kernel[(scores.shape[0],)](scores, *scores.stride(), probs, *probs.stride(), scores.shape[1],
                                            BLOCK=128)
        best = scores.view(-1, group, scores.shape[-1]).min(1, keepdim=True)[0]
        scores = best.repeat(1, group, 1).view(-1, best.shape[-1])
    return probs
'''


def test_two_packed_allocations_of_one_shape_share_strides(tmp_path):
    assert _found(tmp_path, SOFTMAX.replace("{probs}", "torch.empty_like(scores)"), "SC005") == []


def test_a_view_stored_with_a_packed_tensors_strides_is_found(tmp_path):
    # `probs` a column slice of a wider buffer: its row stride is not `scores`'.
    src = SOFTMAX.replace("{probs}", "torch.empty((x.shape[0], x.shape[1] * 4), device=x.device)[:, ::2]")
    assert _default(tmp_path, src, "SC005") == [(14, "SC005")]


# -- a check admitting a packed tensor or its last-two-dims transpose packs the batch dimension

GROUPED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _grouped_kernel(a_ptr, b_ptr, d_ptr, ids_ptr, M, N, K, B_K_MAJOR: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK + tl.arange(0, BLOCK)
    cols = tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK)
    batch = tl.load(ids_ptr + pid * BLOCK).to(tl.int64)
    a = tl.load(a_ptr + rows[:, None] * K + ks[None, :])
    b = tl.load(b_ptr + batch * K * N + ks[:, None] * (1 if B_K_MAJOR else N) + cols[None, :] * (K if B_K_MAJOR else 1))
    tl.store(d_ptr + rows[:, None] * N + cols[None, :], tl.dot(a, b), mask=cols[None, :] < N)


def grouped(a, b, d, ids):
    g, n, k = b.shape
    assert a.is_contiguous() and {layout}
    assert d.is_contiguous() and ids.is_contiguous()
{size_check}
    M, K = a.shape
    _grouped_kernel[(triton.cdiv(M, 64),)](a, b, d, ids, M, n, K, B_K_MAJOR=b.is_contiguous(), BLOCK=64)


def grouped_nn(a, b, d, ids):
    grouped(a, b.mT, d, ids)
'''
_EITHER = "(b.is_contiguous() or b.mT.is_contiguous())"
_SIZES = "    assert a.size(1) == k and d.size(1) == n"


def _sc003(tmp_path, layout, size_check):
    src = GROUPED.replace("{layout}", layout).replace("{size_check}", size_check)
    return _found(tmp_path, src, "SC003")


@pytest.mark.parametrize("layout", [_EITHER, "(b.transpose(-1, -2).is_contiguous() or b.is_contiguous())"],
                         ids=["mT", "transpose"])
def test_either_layout_of_the_last_two_dims_packs_the_batch(tmp_path, layout):
    assert _sc003(tmp_path, layout, _SIZES) == []


@pytest.mark.parametrize("layout,size_check", [
    (_EITHER, ""),  # K is a's extent: nothing ties it to b's
    ("(b.is_contiguous() or b.transpose(0, 1).is_contiguous())", _SIZES),  # the batch dimension moves
    ("(b.is_contiguous() or d.mT.is_contiguous())", _SIZES),  # another tensor
], ids=["no-size-check", "batch-transposed", "other-tensor"])
def test_near_miss_keeps_the_batch_step(tmp_path, layout, size_check):
    assert (15, "SC003") in _sc003(tmp_path, layout, size_check)


# -- program ids the grid bounds, read through a helper's None default or a remainder

ROWS3 = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _load_row(Q, stride_q_b, stride_q_t, stride_q_h, H: tl.constexpr, D: tl.constexpr, pid_t=None):
    if pid_t is None:
        idx_t = tl.program_id(1)
    else:
        idx_t = pid_t
    idx_bh = tl.program_id(0)
    idx_h = idx_bh % H
    return tl.load(Q + (idx_bh // H) * stride_q_b + idx_t * stride_q_t + idx_h * stride_q_h + tl.arange(0, D))


@triton.jit
def _outer_kernel(Q, stride_q_b, stride_q_t, stride_q_h, stride_q_d, O, stride_o_b, n_t,
                  H: tl.constexpr, D: tl.constexpr):
    idx_bh = tl.program_id(0)
    for t in range(n_t):
        row = _load_row(Q, stride_q_b, stride_q_t, stride_q_h, H, D{pid})
        tl.store(O + idx_bh * stride_o_b + tl.arange(0, D), row)


def outer(q, o):
    q = q.view(q.shape[0], q.shape[1], q.shape[2], q.shape[3])
    B, T, H, D = q.shape
    _outer_kernel[(B * H, B)](q, *q.stride(), o, o.stride(0), T, H=H, D=D)
'''


def test_a_helper_argument_settles_its_none_branch(tmp_path):
    # `pid_t=t` passed: `tl.program_id(1)` (an axis the grid sizes by B) never steps the rows.
    assert _found(tmp_path, ROWS3.replace("{pid}", ", pid_t=t"), "SC005") == []


def test_a_helper_none_default_keeps_its_branch(tmp_path):
    # `pid_t` left None: rows are stepped by program id 1, bounded by B (dimension 0 of q).
    assert _found(tmp_path, ROWS3.replace("{pid}", ""), "SC005") == [(30, "SC005")]


HEADS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _heads_kernel(Q, stride_q_b, stride_q_h, O, stride_o_b, H: tl.constexpr, D: tl.constexpr):
    idx_bh = tl.program_id(1) * H + tl.program_id(0) % H
    idx_b = idx_bh // H
    idx_h = {head}
    row = tl.load(Q + idx_b * stride_q_b + idx_h * stride_q_h + tl.arange(0, D))
    tl.store(O + idx_bh * stride_o_b + tl.arange(0, D), row)


def heads(q, o):
    B, H, D = q.shape
    _heads_kernel[(H * 2, B)](q, q.stride(0), q.stride(1), o, o.stride(0), H=H, D=D)
'''


def test_a_remainder_is_not_bounded_by_the_grid(tmp_path):
    assert _found(tmp_path, HEADS.replace("{head}", "idx_bh % H"), "SC005") == []


def test_a_program_id_the_grid_bounds_is_still_compared(tmp_path):
    # Heads stepped by program id 1, which the grid sizes by B (dimension 0 of q).
    assert _found(tmp_path, HEADS.replace("{head}", "tl.program_id(1)"), "SC005") == [(18, "SC005")]


def test_a_pointer_advanced_by_a_value_of_either_arm_is_still_judged(tmp_path):
    # Both arms step heads by `stride_k1`; `k_ptr += k_offset` does not carry the arms apart, so
    # the address must not take the body's condition (FLAT=False would drop it, and the defect).
    src = PAGED.replace(
        "        k_offset = blk * stride_k0 + (tok % PAGE) * stride_k1 + head * stride_k2 + d",
        "        k_offset = blk * stride_k0 + head * stride_k1 + d",
    ).replace("k = tl.load(k_ptr + k_offset)", "k_ptr += k_offset\n    k = tl.load(k_ptr)")
    assert _found(tmp_path, src.replace("{flat}", ", FLAT=False"), "SC005") == [(26, "SC005")]


# -- two views made alike from one tensor, by the callers two calls up: equal strides

SLICES_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _pair_kernel(k_ptr, v_ptr, o_ptr, stride_kn, stride_kh, stride_vn, stride_vh, HEAD: tl.constexpr):
    n = tl.program_id(0)
    h = tl.program_id(1)
    d = tl.arange(0, HEAD)
    off = n * stride_kn + h * stride_kh + d
    k = tl.load(k_ptr + off)
    v = tl.load(v_ptr + off)
    tl.store(o_ptr + (n * tl.num_programs(1) + h) * HEAD + d, k + v)


def pair(k, v, out):
    n, h, d = k.shape
    _pair_kernel[(n, h)](k, v, out, k.stride(0), k.stride(1), v.stride(0), v.stride(1), HEAD=d)
'''

SLICES_MIDDLE = '''
def combine(cache_k, cache_v, out):
    from .kern import pair

    pair(cache_k, cache_v, out)
'''

SLICES_CALLER = '''
import torch
from pkg.mid import combine


class Layer:
    def run(self, state, out):
        cache_k = state.buffers[self.layer][:, 0:self.heads, :]
        cache_v = {v}
        return combine(cache_k, cache_v, out)
'''


def _slices(tmp_path, v):
    return _default(tmp_path, {"pkg/__init__.py": "", "pkg/kern.py": SLICES_KERNEL, "pkg/mid.py": SLICES_MIDDLE,
                               "pkg/layer.py": SLICES_CALLER.replace("{v}", v)}, "SC005")


@pytest.mark.parametrize("v", [
    "state.buffers[self.layer][:, self.heads:2 * self.heads, :]",
    "state.buffers[self.layer][:, self.heads:, :]",
], ids=["bounded", "open"])
def test_two_slices_of_one_tensor_share_strides_through_two_callers(tmp_path, v):
    assert _slices(tmp_path, v) == []


@pytest.mark.parametrize("v", [
    "state.values[self.layer][:, self.heads:2 * self.heads, :]",  # another tensor
    "state.buffers[self.layer][:, self.heads::2, :]",  # every other head: twice the stride
    "state.buffers[self.layer].transpose(0, 1)[:, 0:self.heads, :]",  # another view chain
    "state.buffers[self.layer][:, self.heads:, :].reshape(-1, self.heads, 64)",  # reshaped
], ids=["other-tensor", "stepped-slice", "transposed", "reshaped"])
def test_near_miss_slices_that_may_differ_keep_the_borrowed_stride(tmp_path, v):
    assert _slices(tmp_path, v) == [(11, "SC005")]


def test_a_base_rebound_between_the_slices_keeps_the_borrowed_stride(tmp_path):
    caller = SLICES_CALLER.replace("{v}", "buf[:, self.heads:, :]").replace(
        "        cache_k = state.buffers[self.layer][:, 0:self.heads, :]\n",
        "        buf = state.buffers[0]\n        cache_k = buf[:, 0:self.heads, :]\n        buf = state.buffers[1]\n")
    files = {"pkg/__init__.py": "", "pkg/kern.py": SLICES_KERNEL, "pkg/mid.py": SLICES_MIDDLE, "pkg/layer.py": caller}
    assert _default(tmp_path, files, "SC005") == [(11, "SC005")]
    same = caller.replace("        buf = state.buffers[1]\n", "")
    assert _default(tmp_path, files | {"pkg/layer.py": same}, "SC005") == []


def test_callers_that_import_the_launcher_in_their_body_are_followed(tmp_path):
    caller = SLICES_CALLER.replace("{v}", "state.buffers[self.layer][:, self.heads:, :]").replace(
        "from pkg.mid import combine\n", "").replace(
        "    def run(self, state, out):\n", "    def run(self, state, out):\n        from pkg.mid import combine\n\n")
    files = {"pkg/__init__.py": "", "pkg/kern.py": SLICES_KERNEL, "pkg/mid.py": SLICES_MIDDLE, "pkg/layer.py": caller}
    assert _default(tmp_path, files, "SC005") == []
    other = caller.replace("state.buffers[self.layer][:, self.heads:, :]", "state.values[self.layer][:, self.heads:, :]")
    assert _default(tmp_path, files | {"pkg/layer.py": other}, "SC005") == [(11, "SC005")]


# -- `*t.stride()` whose count the launcher shows by a rank check, a full() allocation, or the
#    literal arm of a conditional: the arguments after it are bound

STARS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _stars_kernel(r_ptr, stride_r0, stride_r1, x_ptr, stride_x0, stride_x1, f_ptr, stride_f0, stride_f1,
                  k_ptr, stride_kn, stride_kd, v_ptr, stride_vn, stride_vd, D: tl.constexpr):
    n = tl.program_id(0)
    d = tl.arange(0, D)
    k = tl.load(k_ptr + n * stride_kn + d * stride_kd)
    v = tl.load(v_ptr + n * stride_kn + d * stride_kd)
    tl.store(x_ptr + n * stride_x0 + d * stride_x1, k + v)


def stars(r, x, k, other):
    assert x.ndim == 2
    n, dk = k.shape
    f = torch.full((n, 4), 0.0, device=k.device)
    v = {v}
    _stars_kernel[(n,)](
        r, *(r.stride() if r is not None else (0, 0)),
        x, *x.stride(),
        f, *f.stride(),
        k, *k.stride(), v, *v.stride(), D=dk)
'''


def test_stars_of_a_rank_the_launcher_shows_bind_what_follows(tmp_path):
    assert _default(tmp_path, STARS.replace("{v}", "torch.empty_like(k)"), "SC005") == []


def test_near_miss_stars_bind_a_foreign_stride(tmp_path):
    assert _default(tmp_path, STARS.replace("{v}", "other"), "SC005") == [(13, "SC005")]


# -- flat scratch the kernel alone writes and reads back (SC003)

SCRATCH = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _partial_kernel(x_ptr, part_ptr, out_ptr, n_parts, row_len, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * row_len + offs)
{body}


def partial_sums(x, part, out, n_parts):
{launcher}
    _partial_kernel[(n_parts,)](x, part, out, n_parts, x.shape[1], BLOCK=64)
    return out
'''

WRITE_THEN_READ = '''    tl.store(part_ptr + pid * row_len + offs, x)
    tl.debug_barrier()
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for other in range(0, n_parts):
        acc += tl.load(part_ptr + other * row_len + offs)
    tl.store(out_ptr + pid * row_len + offs, acc)'''


def _scratch(tmp_path, body=WRITE_THEN_READ, launcher="    x = x.contiguous()\\n    out = torch.empty_like(x)"):
    src = SCRATCH.replace("{body}", body).replace("{launcher}", launcher.replace("\\n", "\n"))
    return [(line, code) for line, code in _default(tmp_path, src, "SC003")]


def test_flat_scratch_written_then_read_back_by_the_kernel_is_not_default(tmp_path):
    assert _scratch(tmp_path) == []


@pytest.mark.parametrize("body", [
    # in place: the kernel reads what the caller put there first
    "    y = tl.load(part_ptr + pid * row_len + offs)\n    tl.store(part_ptr + pid * row_len + offs, x + y)",
    # a second pass stores again: the tensor is an output the caller reads
    WRITE_THEN_READ + "\n    tl.store(part_ptr + pid * row_len + offs, acc)",
], ids=["in-place", "stored-after-read"])
def test_near_miss_a_tensor_whose_contents_leave_the_kernel_stays(tmp_path, body):
    assert _scratch(tmp_path, body=body) == [(12, "SC003")]


@pytest.mark.parametrize("launcher", [
    # a strided view of a wider tensor: flat writes overrun its rows into the rest
    "    x = x.contiguous()\\n    out = torch.empty_like(x)\\n    part = part[:, :64]",
], ids=["strided-view"])
def test_near_miss_scratch_that_is_a_strided_view_stays(tmp_path, launcher):
    assert _scratch(tmp_path, launcher=launcher) == [(12, "SC003")]


def test_near_miss_scratch_handed_to_another_kernel_stays(tmp_path):
    src = SCRATCH.replace("{body}", WRITE_THEN_READ).replace(
        "{launcher}", "    x = x.contiguous()\n    out = torch.empty_like(x)").replace(
        "    return out\n",
        "    _reader_kernel[(n_parts,)](part, part.stride(0), out)\n    return out\n\n\n"
        "@triton.jit\ndef _reader_kernel(p_ptr, stride_p, o_ptr):\n"
        "    i = tl.program_id(0)\n    tl.store(o_ptr + i, tl.load(p_ptr + i * stride_p))\n")
    assert _default(tmp_path, src, "SC003") == [(12, "SC003")]
