"""Default-tier false findings of issue 18, one kind each (the blind judgement of
docs/precision.md): the form the launcher or kernel settles, and a near miss that stays a finding."""

from __future__ import annotations

from stridecheck.lint import analysis

from tests.lint.test_rules_launch import codes as findings_at
from tests.lint.test_rules_launch import lint_tree

OPTS = analysis.AnalysisOptions()


def lint(tmp_path, files: dict[str, str], preview: bool = False, codes=("SC001", "SC002", "SC003")):
    """(file name, line, code) of the findings of ``files`` linted as one tree (rules ``codes``),
    default tier only unless ``preview``."""
    return sorted(findings_at(lint_tree(tmp_path, files, preview, rules=codes)))


# ----------------------------------------------------------------------------- contiguous by comprehension

ROWS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _mul_kernel(x_ptr, y_ptr, o_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m)
    y = tl.load(y_ptr + row * n_cols + cols, mask=m)
    tl.store(o_ptr + row * n_cols + cols, x * y, mask=m)


def mul(x, y):
{prep}
    o = torch.empty_like(x)
    _mul_kernel[(x.shape[0],)](x, y, o, x.shape[1], BLOCK=128)
    return o
'''


def test_contiguous_through_unpacked_comprehension(tmp_path):
    # Every name unpacked from a generator of `.contiguous()` copies is packed, and so is a
    # tensor allocated like one of them.
    for prep in ("    x, y = (t.contiguous() for t in (x, y))",
                 "    x, y = [t.contiguous() for t in (x, y)]"):
        assert lint(tmp_path, {"mul.py": ROWS.replace("{prep}", prep)}, preview=True) == []


def test_comprehension_near_misses_stay(tmp_path):
    # Swapped names: `y` would be read after `x` was rebound; a filter: the items do not line up.
    for prep in ("    x, y = (t.contiguous() for t in (y, x))",
                 "    x, y = (t.contiguous() for t in (x, y) if t is not None)",
                 "    x, y = (t.t() for t in (x, y))"):
        got = lint(tmp_path, {"mul.py": ROWS.replace("{prep}", prep)}, preview=True)
        assert [c for _, _, c in got].count("SC003") >= 1, prep


# ----------------------------------------------------------------------------- a unit-stride vector

VECTOR = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _order(tile, n_tiles):
    return tile % n_tiles


@triton.jit
def _gather_kernel(ids_ptr, x_ptr, o_ptr, n_ids, n_cols, stride_xm, stride_om, BLOCK_M: tl.constexpr):
    n_tiles = tl.cdiv(n_ids, BLOCK_M)
    for t in range(0, n_tiles):
        tile = _order(t, n_tiles)
        offs = tile * BLOCK_M + tl.arange(0, BLOCK_M)
        ids = tl.load(ids_ptr + offs)
        cols = tl.arange(0, 64)
        v = tl.load(x_ptr + ids[:, None] * stride_xm + cols[None, :], mask=cols[None, :] < n_cols)
        tl.store(o_ptr + offs[:, None] * stride_om + cols[None, :], v, mask=cols[None, :] < n_cols)


def gather(ids, x):
{check}
    o = torch.empty((ids.shape[0], x.shape[1]), device=x.device, dtype=x.dtype)
    _gather_kernel[(1,)](ids, x, o, ids.shape[0], x.shape[1], x.stride(0), o.stride(0), BLOCK_M=32)
    return o
'''


def test_unit_stride_check_of_a_vector_packs_it(tmp_path):
    # The kernel reads `ids` as one flat run (sizes only, no stride); the launcher pins its first
    # stride to 1: a vector with a unit stride is packed.
    for check in ("    assert ids.stride(0) == 1", "    if ids.stride(0) != 1:\n        raise ValueError('ids')"):
        assert lint(tmp_path, {"gather.py": VECTOR.replace("{check}", check)}) == []


def test_vector_near_misses_stay(tmp_path):
    # No check, or a check of another stride: `ids` comes unchecked from a public entry point.
    for check in ("    pass", "    assert ids.stride(-1) == 1", "    assert x.stride(0) == 1"):
        got = lint(tmp_path, {"gather.py": VECTOR.replace("{check}", check)})
        assert ("gather.py", 17, "SC003") in got, (check, got)


# ----------------------------------------------------------------------------- contiguous where the branch runs

BRANCH = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _kl_kernel(logp_ptr, ref_ptr, out_ptr, L, BETA: tl.constexpr):
    b = tl.program_id(0)
    t = tl.program_id(1)
    logp = tl.load(logp_ptr + b * L + t)
    loss = -logp
    if BETA != 0.0:
        ref = tl.load(ref_ptr + b * L + t)
        loss += BETA * (ref - logp)
    tl.store(out_ptr + b * L + t, loss)


def kl_loss(logp, ref, beta):
    assert logp.is_contiguous()
{check}
    B, L = logp.shape
    out = torch.empty_like(logp)
    _kl_kernel[(B, L)](logp, ref, out, L, BETA=beta)
    return out
'''


def test_contiguity_checked_under_the_kernels_branch(tmp_path):
    # The kernel reads `ref` only under `if BETA != 0.0:`, the launch binds BETA to `beta`, and
    # the launcher checks `ref` wherever `beta != 0.0`.
    for check in ("    assert (ref is not None and ref.is_contiguous()) if beta != 0.0 else True",
                  "    assert True if beta == 0.0 else ref.is_contiguous()",
                  "    if beta != 0:\n        assert ref.is_contiguous()",
                  "    if beta == 0.0:\n        pass\n    elif not ref.is_contiguous():\n        raise ValueError('ref')"):
        assert lint(tmp_path, {"kl.py": BRANCH.replace("{check}", check)}) == [], check


def test_branch_near_misses_stay(tmp_path):
    # Checked under another condition, under the opposite one, or for another name.
    for check in ("    assert ref.is_contiguous() if beta > 0.0 else True",
                  "    assert ref.is_contiguous() if beta == 0.0 else True",
                  "    scale = beta\n    if scale != 0.0:\n        assert ref.is_contiguous()\n    beta = 2 * scale",
                  "    if beta != 0.0:\n        print(ref.is_contiguous())"):
        got = lint(tmp_path, {"kl.py": BRANCH.replace("{check}", check)})
        assert ("kl.py", 14, "SC003") in got, (check, got)


# ----------------------------------------------------------------------------- a registry that checks first

REGISTRY = '''
import torch
import triton
import triton.language as tl

from .registry import ops


@triton.jit
def _double_kernel(x_ptr, o_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * d + cols, mask=cols < d)
    tl.store(o_ptr + row * d + cols, v * 2, mask=cols < d)


def _supported(x, scale: float) -> bool:
    del scale
    if x.device.type != "cuda" or {test}:
        return False
    return x.shape[-1] > 0


def _launch(x):
    o = torch.empty_like(x)
    _double_kernel[(x.shape[0],)](x, o, x.shape[-1], BLOCK=128)
    return o


@ops.double.register_impl("triton", supports_args=_supported)
def double_triton({params}) -> torch.Tensor:
    return _launch(x)
'''


def test_registered_with_a_contiguity_predicate(tmp_path):
    # The dispatcher asks `_supported(x, scale)` before it calls `double_triton(x, scale)`.
    src = REGISTRY.replace("{test}", "not x.is_contiguous()").replace("{params}", "x, scale: float")
    assert lint(tmp_path, {"pkg/__init__.py": "", "pkg/registry.py": "ops = None\n", "pkg/double.py": src}) == []


def test_registry_near_misses_stay(tmp_path):
    # The predicate does not check contiguity, checks it only on one arm, or speaks of a
    # parameter the function has at another position.
    for test, params in (("x.ndim == 0", "x, scale: float"),
                         ("not (x.is_contiguous() or x.ndim == 1)", "x, scale: float"),
                         ("not x.is_contiguous()", "scale, x")):
        src = REGISTRY.replace("{test}", test).replace("{params}", params)
        got = lint(tmp_path, {"pkg/__init__.py": "", "pkg/registry.py": "ops = None\n", "pkg/double.py": src})
        assert ("double.py", 13, "SC003") in got, (test, params, got)


# ----------------------------------------------------------------------------- strides equal through a helper

META = '''
def strides_of(x, ndim):
    if x is None:
        return (0,) * ndim
    else:
        s = x.stride()
        assert len(s) == ndim
        return s


def shape_of(x, ndim):
    return tuple(x.shape)
'''

ATTN = '''
import torch
import triton
import triton.language as tl

from .meta import shape_of, strides_of


@triton.jit
def _attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr,
                 stride_qz, stride_qh, stride_qm, stride_qd,
                 stride_kz, stride_kh, stride_kn, stride_kd,
                 stride_vz, stride_vh, stride_vn, stride_vd,
                 stride_oz, stride_oh, stride_om, stride_od,
                 BLOCK: tl.constexpr, D: tl.constexpr):
    z = tl.program_id(0)
    h = tl.program_id(1)
    rows = tl.arange(0, BLOCK)
    d = tl.arange(0, D)
    kv = z * stride_kz + h * stride_kh
    q = tl.load(q_ptr + z * stride_qz + h * stride_qh + rows[:, None] * stride_qm + d[None, :] * stride_qd)
    k = tl.load(k_ptr + kv + rows[:, None] * stride_kn + d[None, :] * stride_kd)
    v = tl.load(v_ptr + kv + rows[:, None] * stride_vn + d[None, :] * stride_vd)
    o = q * k + v
    tl.store(o_ptr + z * stride_oz + h * stride_oh + rows[:, None] * stride_om + d[None, :] * stride_od, o)


def attn(q, k, v):
    o = torch.empty_like(q)
{check}
    _attn_kernel[(q.shape[0], q.shape[1])](
        q, k, v, o,
        *strides_of(q, 4), *strides_of(k, 4), *strides_of(v, 4), *strides_of(o, 4),
        BLOCK=16, D=64,
    )
    return o
'''


def _attn(tmp_path, check):
    files = {"pkg/__init__.py": "", "pkg/meta.py": META, "pkg/attn.py": ATTN.replace("{check}", check)}
    return [x for x in lint(tmp_path, files) if x[2] == "SC002"]


def test_strides_asserted_equal_through_a_helper(tmp_path):
    # `strides_of` (another module, which never mentions triton) returns `x.stride()`; the first
    # two strides of `k` and `v` are asserted equal, so `v` stepped by `k`'s z and h strides is right.
    for check in ("    assert strides_of(k, 4)[:2] == strides_of(v, 4)[:2]",
                  "    assert strides_of(v, 4) == strides_of(k, 4)",
                  "    assert k.stride()[:2] == v.stride()[:2]"):
        assert _attn(tmp_path, check) == [], check


def test_strides_through_a_helper_near_misses_stay(tmp_path):
    # A helper returning shapes; other arguments; one dimension only; no check.
    for check in ("    assert shape_of(k, 4)[:2] == shape_of(v, 4)[:2]",
                  "    assert strides_of(k, 4)[:2] == strides_of(v, 3)[:2]",
                  "    assert strides_of(k, 4)[:1] == strides_of(v, 4)[:1]",
                  "    pass"):
        got = _attn(tmp_path, check)
        assert ("attn.py", 13, "SC002") in got, (check, got)


def test_strides_asserted_equal_through_a_local_helper(tmp_path):
    src = ATTN.replace("from .meta import shape_of, strides_of", META)
    ok = src.replace("{check}", "    assert strides_of(k, 4)[:2] == strides_of(v, 4)[:2]")
    assert [x for x in lint(tmp_path, {"attn.py": ok}) if x[2] == "SC002"] == []
    shapes = src.replace("{check}", "    assert shape_of(k, 4)[:2] == shape_of(v, 4)[:2]")
    assert [x[2] for x in lint(tmp_path, {"attn.py": shapes})].count("SC002") == 2


# ----------------------------------------------------------------------------- a block index times the block length

BLOCKS = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _pick_kernel(table_ptr, blocks_ptr, out_ptr, stride_t, n_pos, n_blocks, BLOCK_N: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    for i in range(0, tl.minimum(n_blocks, tl.cdiv(n_pos, BLOCK_N))):
        start = tl.load(blocks_ptr + r * n_blocks + i) * BLOCK_N
        first = tl.load(table_ptr + r * stride_t + start)
{other}
        tl.store(out_ptr + (r * n_blocks + i) * BLOCK_N + offs, slots + first, mask=offs < n_pos)


def pick(table, blocks):
    out = torch.empty((table.shape[0], blocks.shape[1], 16), device=table.device, dtype=table.dtype)
    _pick_kernel[(table.shape[0],)](table, blocks.contiguous(), out, table.stride(0), table.shape[1],
                                    blocks.shape[1], BLOCK_N=16)
    return out
'''


def test_block_index_times_block_length_is_a_position(tmp_path):
    # `start` (a loaded block index times BLOCK_N) is the whole innermost index of the first
    # load, and the second load walks `table`'s innermost dimension with `start + offs`: a
    # position in that dimension, not an outer dimension stepped by a size.
    for other in ("        slots = tl.load(table_ptr + r * stride_t + start + offs, mask=start + offs < n_pos)",
                  "        pos = start + offs\n        slots = tl.load(table_ptr + r * stride_t + pos, mask=pos < n_pos)"):
        assert lint(tmp_path, {"pick.py": BLOCKS.replace("{other}", other)}) == [], other


def test_block_position_near_misses_stay(tmp_path):
    # No address walks `start + offs`, one of another pointer does, or the arange has another
    # length: nothing shows the product is a position in `table`'s innermost dimension.
    for other in ("        slots = offs",
                  "        slots = tl.load(out_ptr + start + offs)",
                  "        slots = tl.load(table_ptr + r * stride_t + start + tl.arange(0, 2 * BLOCK_N))"):
        got = lint(tmp_path, {"pick.py": BLOCKS.replace("{other}", other)})
        assert ("pick.py", 12, "SC001") in got, (other, got)


# -- a pointer a @triton.jit helper builds under a constexpr branch and returns

HELPER_ARMS = '''
import triton
import triton.language as tl


@triton.jit
def _c_ptrs(c_ptr, lid, offs, stride_cm, EM, sort_c: tl.constexpr):
    if sort_c:
        ptrs = c_ptr + lid * EM * stride_cm + offs * stride_cm
    else:
        ptrs = c_ptr + offs * stride_cm
    return ptrs


@triton.jit
def _kernel(c_ptr, EM, stride_cm, SORT: tl.constexpr):
    lid = tl.program_id(0)
    offs = tl.arange(0, 16)
    c_ptrs = _c_ptrs(c_ptr, lid, offs, stride_cm, EM, SORT)
    tl.store(c_ptrs, 1.0)
'''


def test_a_helpers_returned_pointer_keeps_the_branch_it_was_built_under(tmp_path):
    # The store exists with the helper's `if sort_c:` address only where the launch compiles that
    # arm in (SORT=True), and with the `else` address only where it does not: a launch passing
    # SORT=False never steps `c_ptr` by `lid * EM * stride_cm`.
    path = tmp_path / "ops.py"
    path.write_text(HELPER_ARMS)
    model = analysis.build_module_model(HELPER_ARMS, path=str(path), module="ops", options=OPTS)
    kernel = next(k for k in model.kernels if k.name == "_kernel")
    arms = {}
    for a in kernel.accesses:
        if a.pointer != "c_ptr":
            continue
        sort = [c for c in a.conditions if c.param == "SORT"]
        assert len(sort) == 1, a.conditions
        arms[sort[0].truth] = {t.text for t in a.terms}
    assert "lid * EM * stride_cm" in arms[True]
    assert "lid * EM * stride_cm" not in arms[False] and "offs * stride_cm" in arms[False]


# -- a byte offset rebased for a 2-byte view: `(block * stride_block + OFFSET) // 2`

U16_META = '''
import triton
import triton.language as tl


@triton.jit
def _meta_kernel(cache_u16_ptr, table_ptr, out_ptr, stride_cache_block,
                 META_OFFSET: tl.constexpr, FIELDS: tl.constexpr, BLOCK_SIZE: tl.constexpr, HEADS: tl.constexpr):
    pos = tl.program_id(0)
    hid = tl.program_id(1) % HEADS
    block_num = tl.load(table_ptr + pos // BLOCK_SIZE).to(tl.int64)
    slot = pos % BLOCK_SIZE
    base_u16 = (block_num * stride_cache_block + META_OFFSET) // 2 + hid * (FIELDS * BLOCK_SIZE)
    tl.store(out_ptr + pos, tl.load(cache_u16_ptr + base_u16 + slot))
'''


def test_a_stride_inside_a_floor_divided_sum_stays_a_stride(tmp_path):
    # A record format the kernel lays out inside a cache block addressed by the block's stride:
    # the division rebases the byte offset for a 2-byte view, and the block stride still steps
    # the pointer (the address is not "stepped by sizes and no stride").
    path = tmp_path / "ops.py"
    path.write_text(U16_META)
    model = analysis.build_module_model(U16_META, path=str(path), module="ops", options=OPTS)
    kernel = next(k for k in model.kernels if k.name == "_meta_kernel")
    (access,) = [a for a in kernel.accesses if a.pointer == "cache_u16_ptr"]
    steps = [(t.step.kind.name, t.step.params) for t in access.terms]
    assert ("STRIDE", ("stride_cache_block",)) in steps, steps
