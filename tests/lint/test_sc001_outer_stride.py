"""SC001 on ``j * SIZE * stride``: a tile or chunk start along the dimension ``stride`` steps is
silent; an outer stride rebuilt from an inner one (the launch passes no usable outer stride) is
reported. The evidence is the launch's ``t.stride(d)`` bindings and the kernel's use of them."""

from __future__ import annotations

from tests.lint.test_rules_kernel import HEADER, findings, line_of

# A K loop advanced by a tile times the K stride, the dimension its aranges already step (a
# form that must stay silent whatever else changes).
K_LOOP = HEADER + '''
@triton.jit
def mm(a_ptr, o_ptr, stride_am, stride_ak, stride_om, stride_ok, K, BLOCK_M: tl.constexpr,
       BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid = tl.program_id(0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = tl.arange(0, BLOCK_K)
    a = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K * SPLIT_K)):
        acc += tl.load(a)
        a += (BLOCK_K * SPLIT_K) * stride_ak
    tl.store(o_ptr + offs_m[:, None] * stride_om + offs_k[None, :] * stride_ok, acc)


def run(a, o, split_k):
    mm[(1,)](a, o, a.stride(0), a.stride(1), o.stride(0), o.stride(1), a.shape[1],
             BLOCK_M=16, BLOCK_K=16, SPLIT_K=split_k)
'''

# A chunk start: a loaded position rounded down to the chunk, times the sequence stride.
CHUNK = HEADER + '''
@triton.jit
def cs(x_ptr, cu_ptr, o_ptr, chunk_size, stride_x_seqlen, stride_x_head, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    end = tl.load(cu_ptr + b + 1)
    pid_c = (end - 1) // chunk_size
    x_ptr += pid_c * chunk_size * stride_x_seqlen + h * stride_x_head
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs * stride_x_seqlen))


def run(x, cu, out):
    cs[(1, 1)](x, cu, out, 64, x.stride(0), x.stride(1), BLOCK=16)
'''

# A paged cache: the page base rebuilt as block * PAGE * slot stride.
PAGED = HEADER + '''
@triton.jit
def dec(v_ptr, table_ptr, o_ptr, stride_vz, stride_vn, stride_vd, PAGE: tl.constexpr,
        BLOCK: tl.constexpr, D: tl.constexpr):
    i = tl.program_id(0)
    blk = tl.load(table_ptr + i)
    offs_n = tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    v = tl.load(v_ptr + blk * PAGE * stride_vn + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd)
    tl.store(o_ptr + offs_d, tl.sum(v, 0))


def run(v_cache, table, out):
    dec[(1,)](v_cache, table, out, 0, v_cache.stride(1), v_cache.stride(2),
              PAGE=v_cache.shape[1], BLOCK=16, D=16)
'''


def test_k_loop_advance_by_tile_times_own_stride_is_silent():
    assert findings(K_LOOP, "SC001", preview=None) == []


def test_chunk_start_along_the_outermost_dimension_is_silent():
    assert findings(CHUNK, "SC001", preview=None) == []


def test_chunk_start_reported_when_the_launch_passes_no_outer_stride():
    # x is [batch, seqlen, heads]: stride(1) steps the sequence, and the batch stride is missing.
    src = CHUNK.replace("x.stride(0), x.stride(1)", "x.stride(1), x.stride(2)")
    assert [t for _, t in findings(src, "SC001", preview=None)] == ["pid_c * chunk_size * stride_x_seqlen"]


def test_chunk_start_without_a_launch_needs_an_outer_stride_in_the_signature():
    alone = CHUNK[:CHUNK.index("def run")]
    assert [t for _, t in findings(alone, "SC001", preview=None)] == ["pid_c * chunk_size * stride_x_seqlen"]
    # The head stride declared first and used: the sequence is not the outermost stride passed.
    swapped = alone.replace("chunk_size, stride_x_seqlen, stride_x_head,", "chunk_size, stride_x_head, stride_x_seqlen,")
    assert findings(swapped, "SC001", preview=None) == []


def test_page_base_rebuilt_from_the_slot_stride_is_reported():
    assert findings(PAGED, "SC001", preview=None) == [(line_of(PAGED, "v = tl.load"), "blk * PAGE * stride_vn")]


def test_page_base_reported_when_the_passed_page_stride_is_never_used():
    src = PAGED.replace("(v_cache, table, out, 0,", "(v_cache, table, out, v_cache.stride(0),")
    assert [t for _, t in findings(src, "SC001", preview=None)] == ["blk * PAGE * stride_vn"]


def test_page_base_reported_without_a_launch_when_the_page_stride_is_unused():
    alone = PAGED[:PAGED.index("def run")]
    assert [t for _, t in findings(alone, "SC001", preview=None)] == ["blk * PAGE * stride_vn"]



# The split-K slice of an output picked by a loaded index times the slice stride. The kernel
# asserts a ratio of strides with `tl.cdiv`, which alone reads like a size bound.
SPLIT_K_SLICE = HEADER + '''
@triton.jit
def k(Y, Idx, stride_y_k, stride_y_m, stride_y_n, M, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_k = tl.load(Idx)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    tl.device_assert(stride_y_k // stride_y_m == tl.cdiv(stride_y_k, stride_y_m))
    ptrs = Y + pid_k * stride_y_k + offs_m[:, None] * stride_y_m + offs_n[None, :] * stride_y_n
    tl.store(ptrs, 0.0, mask=offs_m[:, None] < M)


def run(y, idx):
    k[(1, 2)](y, idx, *y.stride(), y.shape[1], BLOCK_M=16, BLOCK_N=16)
'''


def test_stride_bound_from_a_starred_stride_tuple_is_a_stride():
    assert findings(SPLIT_K_SLICE, "SC001", preview=None) == []


def test_shape_bound_from_a_starred_shape_is_still_reported():
    # `*y.shape` fills stride_y_k with y.size(0): a shape passed as a stride, reported at the launch.
    src = SPLIT_K_SLICE.replace("*y.stride(), y.shape[1],", "*y.shape,")
    assert findings(src, "SC004", preview=None) == [(line_of(src, "k[(1, 2)]"), "y.shape")]


# A page laid out by the kernel: E token records, then E scales at offset E * RECORD.
PAGE_FORMAT = HEADER + '''
@triton.jit
def put(cache_ptr, slot_ptr, x_ptr, block_stride, page_slots, record, scale_bytes, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    slot = tl.load(slot_ptr + i)
    page = slot // page_slots
    pos = slot % page_slots
    offs = tl.arange(0, BLOCK)
    base = cache_ptr + page * block_stride
    tl.store(base + pos * record + offs, tl.load(x_ptr + i * BLOCK + offs), mask=offs < record)
    scale_at = base + page_slots * record + pos * scale_bytes
    tl.store(scale_at + offs, 0, mask=offs < scale_bytes)


def run(cache, slots, x, page_slots, record, scale_bytes):
    put[(x.shape[0],)](cache, slots, x, cache.stride(0), page_slots, record, scale_bytes, BLOCK=64)
'''


def test_slot_offsets_inside_a_page_format_the_kernel_lays_out_are_silent():
    assert findings(PAGE_FORMAT, "SC001", preview=None) == []


def test_slot_offsets_without_a_region_of_the_kernels_own_are_reported():
    # No scale region after the records: `pos * record` stands for the slot stride of the cache.
    src = PAGE_FORMAT.replace("    scale_at = base + page_slots * record + pos * scale_bytes\n",
                              "    scale_at = base + pos * scale_bytes\n")
    assert sorted(t for _, t in findings(src, "SC001", preview=None)) == ["pos * record", "pos * scale_bytes"]


def test_slot_offsets_reported_when_the_page_is_not_started_by_a_passed_stride():
    # The page itself is stepped by a size: nothing passed says where a page starts.
    src = PAGE_FORMAT.replace("    base = cache_ptr + page * block_stride\n",
                              "    base = cache_ptr + page * (page_slots * (record + scale_bytes)) + i * block_stride\n")
    assert sorted(t for _, t in findings(src, "SC001", preview=None)) == [
        "page_slots * record", "pos * record", "pos * scale_bytes"]
