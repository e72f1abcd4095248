"""SC003's flat write: a flat kernel (every address of a pointer ``ptr + offs``, one run of
elements) storing into a tensor whose layout a caller decides, unchecked (an ``out=`` the caller
supplies). The run is the tensor's elements only while they are packed: ``out=big[::2]`` is written
into its gaps and past its end. Each form the launcher or a caller settles, and the near miss that
stays a finding."""

from __future__ import annotations

from tests.lint.test_precision_kinds import lint

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(src_ptr, dst_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=valid) * scale, mask=valid)


'''
STORE_LINE = 11


def _ops(body: str) -> dict[str, str]:
    return {"pkg/__init__.py": "", "pkg/ops.py": KERNEL + body}


def _launch(name="_launch"):
    return f'''
def {name}(src, out, scale):
    n = src.numel()
    _scale_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
'''


def test_caller_supplied_out_from_a_public_entry_point_is_reported(tmp_path):
    body = _launch() + '''

def scale_out(src, scale, out):
    """Public: `out` is the user's."""
    _launch(src.contiguous(), out, scale)
    return out
'''
    assert lint(tmp_path, _ops(body), codes=("SC003",)) == [("ops.py", STORE_LINE, "SC003")]


def test_optional_out_on_one_path_and_a_strided_view_passed_is_reported(tmp_path):
    # `out` is the caller's on one path (an allocation on the other); a caller in view passes
    # `big[::2]`: live.
    body = '''
def scale(src, scale, out=None):
    src = src.contiguous()
    if out is None:
        out = torch.empty_like(src)
    n = src.numel()
    _scale_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
    return out


def _use(big, src):
    return scale(src, 2.0, out=big[::2])
'''
    assert lint(tmp_path, _ops(body), codes=("SC003",)) == [("ops.py", STORE_LINE, "SC003")]


def test_out_checked_contiguous_by_the_launcher_is_clean(tmp_path):
    body = '''
def scale_out(src, scale, out):
    assert out.is_contiguous()
    src = src.contiguous()
    n = src.numel()
    _scale_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
    return out
'''
    assert lint(tmp_path, _ops(body), codes=("SC003",)) == []


def test_call_under_an_is_contiguous_branch_is_clean_and_its_else_is_not(tmp_path):
    # The caller launches on `out` only where `out.is_contiguous()` holds (a temporary and a copy
    # otherwise): packed where the launch runs. Launching on it in the other branch is the bug.
    settled = _launch() + '''

def scale_out(src, scale, out):
    if out.is_contiguous():
        _launch(src.contiguous(), out, scale)
    else:
        tmp = torch.empty(out.shape, dtype=out.dtype, device=out.device)
        _launch(src.contiguous(), tmp, scale)
        out.copy_(tmp)
    return out
'''
    assert lint(tmp_path / "a", _ops(settled), codes=("SC003",)) == []
    swapped = settled.replace("if out.is_contiguous():", "if not out.is_contiguous():")
    assert lint(tmp_path / "b", _ops(swapped), codes=("SC003",)) == [("ops.py", STORE_LINE, "SC003")]


def test_call_after_a_failing_contiguity_test_is_clean(tmp_path):
    body = _launch() + '''

def scale_out(src, scale, out):
    if not out.is_contiguous():
        raise ValueError("out must be contiguous")
    _launch(src.contiguous(), out, scale)
    return out
'''
    assert lint(tmp_path, _ops(body), codes=("SC003",)) == []


def test_out_made_like_an_input_is_dense_and_clean(tmp_path):
    # `torch.empty_like(x)` is dense whatever `x` is: the flat run is exactly its elements.
    body = '''
def scale(src, scale):
    out = torch.empty_like(src)
    n = src.numel()
    _scale_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
    return out
'''
    assert lint(tmp_path, _ops(body), codes=("SC003",)) == []


def test_offsets_built_from_loaded_strides_are_not_flat(tmp_path):
    # The output offset accumulates positions times strides read from a tensor: the kernel walks
    # the output's own layout.
    files = {"pkg/__init__.py": "", "pkg/ops.py": '''
import torch
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, sizes_ptr, strides_ptr, NDIM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rem = offs
    dst = tl.zeros([BLOCK], dtype=tl.int64)
    for r in range(NDIM):
        d = NDIM - 1 - r
        size = tl.load(sizes_ptr + d)
        dst += (rem % size) * tl.load(strides_ptr + d)
        rem = rem // size
    tl.store(y_ptr + dst, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def copy_out(x, out):
    x = x.contiguous()
    sizes = torch.tensor(out.shape, device=x.device)
    strides = torch.tensor(out.stride(), device=x.device)
    n = x.numel()
    _copy_kernel[(triton.cdiv(n, 64),)](x, out, n, sizes, strides, NDIM=out.dim(), BLOCK=64)
    return out
'''}
    assert lint(tmp_path, files, codes=("SC003",)) == []


def test_flat_reads_of_a_caller_tensor_are_not_judged(tmp_path):
    # Only the store is judged: a flat read of an unchecked input is usually fed contiguous
    # tensors further up (the rule's preview tier covers size steps, not flat runs).
    body = '''
def scale_into(src, scale, out):
    out = torch.empty(src.shape, device=src.device)
    n = src.numel()
    _scale_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
    return out
'''
    assert lint(tmp_path, _ops(body), preview=True, codes=("SC003",)) == []


def test_launch_under_a_contiguity_flag_is_clean_and_its_other_arm_is_not(tmp_path):
    # `needs_tmp = not out.is_contiguous() or ...`, then the launch on `out` only where it is false.
    settled = '''
def scale_out(src, scale, out):
    src = src.contiguous()
    n = src.numel()
    needs_tmp = (not out.is_contiguous()) or (out.dtype != src.dtype)
    if needs_tmp:
        out.copy_(src * scale)
    else:
        _scale_kernel[(triton.cdiv(n, 64),)](src, out, n, scale, BLOCK=64)
    return out
'''
    assert lint(tmp_path / "a", _ops(settled), codes=("SC003",)) == []
    swapped = settled.replace("if needs_tmp:", "if not needs_tmp:")
    assert lint(tmp_path / "b", _ops(swapped), codes=("SC003",)) == [("ops.py", STORE_LINE, "SC003")]


def test_a_store_at_a_loaded_index_is_not_a_flat_run(tmp_path):
    # `ready + slot + offs` with a slot read from a table: a scatter, not a flat walk.
    files = {"pkg/__init__.py": "", "pkg/ops.py": '''
import torch
import triton
import triton.language as tl


@triton.jit
def _mark_kernel(slots_ptr, ready_ptr, BLOCK: tl.constexpr):
    slot = tl.load(slots_ptr + tl.program_id(0))
    offs = tl.arange(0, BLOCK)
    tl.store(ready_ptr + slot + offs, 1, mask=offs == 0)


def mark(slots, ready):
    _mark_kernel[(slots.numel(),)](slots, ready, BLOCK=16)
'''}
    assert lint(tmp_path, files, codes=("SC003",)) == []
