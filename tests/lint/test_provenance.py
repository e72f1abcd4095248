"""Layout provenance across functions (issue 18): where a tensor that reaches a kernel came from
decides whether a layout assumption is reported, and in which tier. Packed in a caller, an
allocating ``__init__`` or a decorator: silent; a strided view on the way: live; a public entry
point's argument unchecked: certain latent; the rest: preview. Each test lints a small tree."""

from __future__ import annotations

import pytest

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _rows_kernel(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def _row_sums(x):
    out = torch.empty(x.shape[0], device=x.device)
    _rows_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
'''


def sc003(findings):
    return [(f.path, f.preview, f.message) for f in findings if f.code == "SC003"]


@pytest.mark.parametrize(
    "caller, expected",
    [
        ("def row_sums(x):\n    return _row_sums(x.contiguous())\n", None),  # packed by the caller
        ("def row_sums(x):\n    return _row_sums(torch.empty(4, 8))\n", None),  # allocated
        ("def row_sums(x):\n    return _row_sums(x[:, :8])\n", "live"),  # a strided view
        ("def row_sums(x):\n    return _row_sums(x)\n", "latent"),  # a public entry point's argument
        ("def _row_sums2(x):\n    return _row_sums(x)\n", "preview"),  # private, its callers out of view
    ],
)
def test_the_callers_decide_the_layout_and_the_tier(lint_files, caller, expected):
    found = sc003(lint_files({"pkg/__init__.py": "", "pkg/kernels.py": KERNEL,
                              "pkg/api.py": "import torch\nfrom pkg.kernels import _row_sums\n\n\n" + caller},
                             preview=True))
    if expected is None:
        assert found == []
        return
    assert len(found) == 1
    path, preview, message = found[0]
    assert path == "pkg/kernels.py" and preview == (expected == "preview")
    if expected == "live":
        assert "strided view" in message and "row_sums" in message
    if expected == "latent":
        assert "public entry point" in message and "`row_sums`" in message


def test_a_caller_in_a_file_without_triton_beside_the_kernel_is_read(lint_files):
    # `api.py` never mentions triton: the engine does not model it; the tree reads it for its
    # calls when a layout is asked of `_row_sums`'s argument.
    found = lint_files({"pkg/__init__.py": "", "pkg/kernels.py": KERNEL,
                        "pkg/api.py": "from pkg.kernels import _row_sums\n\n\ndef f(x):\n    return _row_sums(x.contiguous())\n"},
                       preview=True)
    assert sc003(found) == []


def test_an_autograd_function_and_a_decorator_settle_the_layout(lint_files):
    api = '''
import torch
from pkg.kernels import _row_sums


def ensure_contiguous(fn):
    return fn


class RowSums(torch.autograd.Function):
    @staticmethod
    @ensure_contiguous
    def forward(ctx, x):
        return _row_sums(x)


def row_sums(x):
    return RowSums.apply(x)
'''
    found = lint_files({"pkg/__init__.py": "", "pkg/kernels.py": KERNEL, "pkg/api.py": api}, preview=True)
    assert sc003(found) == []
    # Without the decorator, `forward` of an autograd Function is an entry point of its own.
    found = lint_files({"pkg/__init__.py": "", "pkg/kernels.py": KERNEL,
                        "pkg/api.py": api.replace("    @ensure_contiguous\n", "")}, preview=True)
    assert [(p, prev) for p, prev, _ in sc003(found)] == [("pkg/kernels.py", False)]


def test_an_attribute_every_assignment_of_which_allocates_is_packed(lint_files):
    src = KERNEL[:KERNEL.index("def _row_sums")] + '''

class Pool:
    def __init__(self, n, d):
        self.buf = torch.zeros(n, d)

    def sums(self):
        out = torch.empty(self.buf.shape[0])
        _rows_kernel[(self.buf.shape[0],)](out, self.buf, self.buf.shape[1], BLOCK=64)
        return out
'''
    assert sc003(lint_files({"m.py": src}, preview=True)) == []
    reassigned = src.replace("    def sums(self):", "    def swap(self, x):\n        self.buf = x\n\n    def sums(self):")
    assert len(sc003(lint_files({"n.py": reassigned}, preview=True))) == 1


def test_empty_like_keeps_the_strides_of_its_source(lint_files):
    src = KERNEL.replace(
        "    out = torch.empty(x.shape[0], device=x.device)\n    _rows_kernel[(x.shape[0],)](out, x,",
        "    y = torch.empty_like(x)\n    out = torch.empty(x.shape[0], device=x.device)\n    _rows_kernel[(x.shape[0],)](out, y,",
    ).replace("def _row_sums(x):", "def row_sums(x):")
    found = sc003(lint_files({"m.py": src}, preview=True))
    assert len(found) == 1 and not found[0][1] and "made like `x`" in found[0][2]


DEAD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _mod_kernel(x_ptr, shift_ptr, out_ptr, n_cols, x_stride, HAS_SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride + cols, mask=cols < n_cols)
    if HAS_SHIFT:
        x += tl.load(shift_ptr + row * n_cols + cols, mask=cols < n_cols)
    tl.store(out_ptr + row * x_stride + cols, x, mask=cols < n_cols)


def modulate(x, shift):
    out = torch.empty_like(x)
    _mod_kernel[(x.shape[0],)](x, shift, out, x.shape[1], x.stride(0), HAS_SHIFT=FLAG, BLOCK=128)
    return out
'''


@pytest.mark.parametrize("flag, reported", [("False", False), ("True", True), ("shift is not None", True)])
def test_code_a_launch_compiles_away_is_not_judged(lint_files, flag, reported):
    found = lint_files({"m.py": DEAD.replace("FLAG", flag)}, preview=True)
    assert any(f.code == "SC003" and "shift_ptr" in f.message for f in found) is reported


PUBLIC_ROWS = KERNEL.replace("def _row_sums(x):", "def row_sums(x):")


@pytest.mark.parametrize(
    "files, tier, evidence",
    [
        # a public function nothing in its package calls: its users' tensors reach the kernel
        ({}, "default", "public entry point nothing in its package calls"),
        # named elsewhere in the package through a path the call graph does not follow (a table of
        # functions): its callers exist, out of sight
        ({"pkg/table.py": "from pkg import kernels\n\nOPS = {'rows': kernels.row_sums}\n"}, "preview", "is used at"),
        # a mention in the package's tests is not a caller
        ({"pkg/tests/test_rows.py": "from pkg.kernels import row_sums\n\nrow_sums(None)\n"}, "default",
         "public entry point"),
        # re-exported by the package's `__init__.py` (an export, not a use)
        ({"pkg/__init__.py": "from pkg.kernels import (\n    row_sums,\n)\n__all__ = ['row_sums']\n"}, "default",
         "public entry point nothing in its package calls"),
        # called by a backend table in an `__init__.py`
        ({"pkg/backend/__init__.py": "class Backend:\n    def rows(self, x):\n        from pkg.kernels import row_sums\n"
                                     "        return row_sums(x)\n"}, "preview", "backend/__init__.py:4"),
        # imported under another name, and called by it
        ({"pkg/ops.py": "from pkg.kernels import row_sums as rows\n\n\nOPS = {'rows': rows}\n"}, "preview",
         "ops.py:1"),
        # named in a log message, a comment, a docstring, and as another library's op: no use
        ({"pkg/ops.py": 'import torch\n\n\ndef other(x):\n    """Like `row_sums`, in C++."""\n'
                        '    print("row_sums", x)  # row_sums is the reference\n'
                        '    return torch.ops.pkg.row_sums(x)\n'}, "default", "public entry point nothing"),
        # handed to a registration: an operator of the package's users
        ({"pkg/ops.py": "import torch\nfrom pkg.kernels import row_sums\n\n"
                        "torch.library.custom_op('pkg::rows', mutates_args=())(row_sums)\n"}, "default", "registered"),
    ],
)
def test_a_public_function_without_callers_in_view(lint_files, files, tier, evidence):
    tree = {"pkg/__init__.py": "", "pkg/backend/__init__.py": "", "pkg/kernels.py": PUBLIC_ROWS, **files}
    found = sc003(lint_files(tree, preview=True))
    assert len(found) == 1, found
    _, preview, message = found[0]
    assert preview == (tier == "preview") and evidence in message, message


def test_a_private_module_is_not_an_entry_point(lint_files):
    found = sc003(lint_files({"pkg/__init__.py": "", "pkg/_impl.py": PUBLIC_ROWS}, preview=True))
    assert len(found) == 1 and found[0][1], found  # preview: its callers are out of view
    assert "private module" in found[0][2]


def test_a_registered_alternative_body_is_judged_by_the_entry_it_registers_for(lint_files):
    # `@register(entry, backend=...)`: the body runs where `entry` is called, with its arguments.
    api = '''
import torch
from pkg.kernels import _row_sums


def register(entry, backend=None):
    def wrap(fn):
        return fn
    return wrap


def row_sums(x):
    return x.sum(-1)


@register(row_sums, backend="triton")
def row_sums_triton(x):
    return _row_sums(x)


def model_step(x):
    return row_sums(CALL)
'''
    for call, expected in (("x.contiguous()", []), ("x[:, :8]", [False])):
        found = sc003(lint_files({"pkg/__init__.py": "", "pkg/kernels.py": KERNEL,
                                  "pkg/api.py": api.replace("CALL", call)}, preview=True))
        assert [p for _, p, _ in found] == expected, (call, found)


def test_a_namespace_directory_inside_a_package_is_part_of_the_package(lint_files):
    # `pkg/srt/` and `pkg/srt/layers/` have no `__init__.py`: namespace packages inside `pkg`. A
    # use of the public launcher elsewhere in `pkg` is a caller out of the analysis' sight, not an
    # entry point.
    api = "import torch\nfrom pkg.srt.layers.rows import row_sums\n\n\ndef total(x):\n    return row_sums(x).sum()\n"
    tree = {"pkg/__init__.py": "", "pkg/srt/layers/rows.py": PUBLIC_ROWS, "pkg/api/__init__.py": "",
            "pkg/api/deep/__init__.py": "", "pkg/api/deep/ops.py": api}
    found = sc003(lint_files(tree, preview=True))
    assert len(found) == 1 and found[0][1], found  # preview
    assert "row_sums` is used at" in found[0][2] and "deep/ops.py" in found[0][2]


DROPPED = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _pair_kernel(out_ptr, s_ptr, stride_s, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(s_ptr + offs * stride_s, mask=offs < n)
    b = tl.load(s_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, a + b, mask=offs < n)


def NAME(s):
    PRELUDE
    out = torch.empty(s.shape[0], device=s.device)
    _pair_kernel[(1,)](out, s, s.stride(0), s.shape[0], BLOCK=1024)
    return out
'''


@pytest.mark.parametrize(
    "name, prelude, caller, expected",
    [
        ("pair", "pass", "", "default"),  # a public entry point's argument, unchecked
        ("pair", "s = s.contiguous()", "", None),  # packed where it launches: the stride is 1
        ("_pair", "pass", "", "preview"),  # private, its callers out of view
        ("_pair", "pass", "def use(x):\n    return _pair(x[:, 0])\n", "default"),  # a strided view reaches it
        ("_pair", "pass", "def use(x):\n    return _pair(torch.zeros(8))\n", None),  # allocated by the caller
    ],
)
def test_a_stride_dropped_by_one_access_is_tiered_by_the_layout(lint_files, name, prelude, caller, expected):
    src = DROPPED.replace("NAME", name).replace("PRELUDE", prelude) + ("\n\n" + caller if caller else "")
    found = [f for f in lint_files({"m.py": src}, preview=True) if f.code == "SC005"]
    if expected is None:
        assert found == [], found
        return
    assert len(found) == 1 and "implicit 1" in found[0].message, found
    assert found[0].preview == (expected == "preview"), found[0].message


CACHE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _store_kernel(cache_ptr, cache_stride_0, col_ptr, logits_ptr, n_vocab, BLOCK: tl.constexpr):
    req = tl.program_id(0).to(tl.int64)
    col = tl.load(col_ptr).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    vals = tl.load(logits_ptr + req * n_vocab + offs, mask=offs < n_vocab)
    tl.store(cache_ptr + req * cache_stride_0 + col * n_vocab + offs, vals, mask=offs < n_vocab)


def _store(cache, col, logits):
    logits = logits.contiguous()
    _store_kernel[(logits.shape[0],)](cache, cache.stride(0), col, logits, logits.shape[1], BLOCK=1024)
'''


@pytest.mark.parametrize(
    "caller, tier",
    [
        # allocated from the logits' own extents: the step is the stride
        ("def step(logits, col):\n    cache = torch.empty(logits.shape[0], 4, logits.shape[1])\n"
         "    _store(cache, col, logits)\n", None),
        # allocated one column wider, from constants: the founding bug
        ("def step(logits, col):\n    cache = torch.zeros(8, 4, 1025)\n    _store(cache, col, logits)\n", "default"),
        # handed in by an entry point's user
        ("def step(cache, logits, col):\n    _store(cache, col, logits)\n", "default"),
        # a pool's buffer, whose layout nothing in view shows
        ("class Pool:\n    def step(self, logits, col):\n        _store(self.pool.buffer(0), col, logits)\n", "preview"),
    ],
)
def test_sc001_is_tiered_by_how_the_callers_make_the_tensor(lint_files, caller, tier):
    found = [f for f in lint_files({"m.py": CACHE + "\n\n" + caller}, preview=True) if f.code == "SC001"]
    if tier is None:
        assert found == [], found
        return
    assert len(found) == 1, found
    assert found[0].preview == (tier == "preview"), found[0].message


def test_a_library_attribute_of_the_same_name_is_not_a_use(lint_files):
    # `tl.store` in the kernel is not a use of the package's public `store`.
    src = PUBLIC_ROWS.replace("def row_sums(x):", "def store(x):")
    found = sc003(lint_files({"pkg/__init__.py": "", "pkg/kernels.py": src + "\n\ndef f(p):\n    tl.store(p, 0)\n"},
                             preview=True))
    assert len(found) == 1 and not found[0][1] and "nothing in its package calls" in found[0][2], found


def test_sc001_judges_only_the_launches_that_compile_the_access(lint_files):
    # The size step sits under `if SORTED:`; the launch that passes a strided view sets it False,
    # so only the packed launch compiles it.
    src = CACHE.replace("    tl.store(cache_ptr + req * cache_stride_0 + col * n_vocab + offs, vals, mask=offs < n_vocab)",
                        "    if SORTED:\n        tl.store(cache_ptr + req * cache_stride_0 + col * n_vocab + offs, vals,"
                        " mask=offs < n_vocab)").replace("BLOCK: tl.constexpr):", "BLOCK: tl.constexpr, SORTED: tl.constexpr):")
    src = src[:src.index("def _store(")]
    launchers = (
        "def a(logits, col):\n    cache = torch.empty(logits.shape[0], 4, logits.shape[1])\n"
        "    _store_kernel[(logits.shape[0],)](cache, cache.stride(0), col, logits, logits.shape[1], BLOCK=1024, SORTED=True)\n"
        "\n\ndef b(logits, col, big):\n    cache = big[:, :, :logits.shape[1]]\n"
        "    _store_kernel[(logits.shape[0],)](cache, cache.stride(0), col, logits, logits.shape[1], BLOCK=1024, SORTED=FLAG)\n"
    )
    quiet = launchers.replace("FLAG", "False")
    assert [f for f in lint_files({"m.py": src + quiet}, preview=True) if f.code == "SC001"] == []
    found = [f for f in lint_files({"m.py": src + launchers.replace("FLAG", "True")}, preview=True) if f.code == "SC001"]
    assert len(found) == 1 and not found[0].preview, found


LIKE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(out_ptr, x_ptr, stride_x, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols)
    tl.store(out_ptr + row * n_cols + cols, x * 2, mask=cols < n_cols)


def _scale(x):
    out = torch.empty_like(x)
    _scale_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=1024)
    return out
'''


@pytest.mark.parametrize(
    "view, reported",
    [
        ("x[:, :8]", False),  # a slice has gaps: `empty_like` of it is contiguous
        ("x.t()", True),  # a transpose is dense: `empty_like` keeps its strides
    ],
)
def test_empty_like_of_a_view_keeps_its_strides_only_when_dense(lint_files, view, reported):
    src = LIKE + f"\n\ndef scale(x):\n    return _scale({view})\n"
    found = [f for f in lint_files({"m.py": src}, preview=True) if f.code == "SC003"]
    assert bool(found) == reported, [f.message for f in found]
