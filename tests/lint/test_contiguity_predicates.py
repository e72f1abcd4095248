"""Contiguity established by a predicate function (``is_strictly_contiguous(t)``, ``is_contiguous(t)``)
as by ``t.is_contiguous()``: in the launcher, in every caller of it, and what must not count."""

from __future__ import annotations

import ast
import textwrap

import pytest

from stridecheck.lint.launches import collect
from tests.lint.test_rules_launch import GATHER_KERNEL, lint_tree


def _launch(src: str):
    src = textwrap.dedent(src)
    info = collect(ast.parse(src), src, module_name="pkg.ops", path=None)
    assert len(info.launches) == 1, info.launches
    return info.launches[0]


PREDICATES = ["is_strictly_contiguous(x)", "is_contiguous(x)", "torch_utils.is_strictly_contiguous(x)",
              "vllm.utils.torch_utils.is_contiguous(x)"]


@pytest.mark.parametrize("pred", PREDICATES)
@pytest.mark.parametrize("form", ["assert {p}", "assert {p}, 'packed'", "if not {p}:\n        raise ValueError('no')",
                                  "torch._check({p})", "assert {p} and y.is_contiguous()"])
def test_predicate_in_the_launcher_makes_the_tensor_contiguous(pred, form):
    launch = _launch(f"def f(x, y):\n    {form.format(p=pred)}\n    _k[(1,)](x, y)\n")
    x, y = launch.args
    assert x.contiguous and x.contiguous_in_module
    assert y.contiguous == ("y.is_contiguous()" in form)


@pytest.mark.parametrize(
    "prelude",
    [
        "assert not is_strictly_contiguous(x)",
        "assert is_strictly_contiguous(x) or flag",  # one arm of an `or` holds on its own: neither
        "assert flag or torch_utils.is_contiguous(x)",
        "if is_strictly_contiguous(x):\n        raise ValueError('packed')",  # raises when it holds
        "assert is_strictly_contiguous(y)",  # another tensor
        "assert is_strictly_contiguous(x[0])",  # a view of x, not x
        "assert is_strictly_contiguous(x, y)",  # not the one-tensor predicate
        "assert is_strictly_contiguous(t=x)",
        "assert x.is_contiguous(torch.channels_last)",  # another layout
        "assert is_channels_last_contiguous(x)",  # another predicate
        "if flag:\n        assert is_strictly_contiguous(x)",  # on one path only
        "is_strictly_contiguous(x)",  # computed, never checked
    ],
)
def test_what_does_not_make_the_tensor_contiguous(prelude):
    launch = _launch(f"def f(x, y, flag):\n    {prelude}\n    _k[(1,)](x, y)\n")
    x = launch.args[0]
    assert not x.contiguous and not x.contiguous_in_module


def test_predicate_in_every_caller_makes_the_parameter_contiguous_in_module():
    src = textwrap.dedent(
        """
        def _fwd(x, w):
            _k[(1,)](x, w)

        def one(x, w):
            assert is_strictly_contiguous(x)
            return _fwd(x, w)

        def two(x, w):
            if not torch_utils.is_contiguous(x):
                raise ValueError("x must be packed")
            _fwd(x, w)
        """
    )
    info = collect(ast.parse(src), src, module_name="pkg.ops", path=None)
    x, w = info.launches[0].args
    assert x.contiguous_in_module and not x.contiguous  # the callers checked it, the launcher did not
    assert not w.contiguous_in_module


@pytest.mark.parametrize("second", [
    "assert is_strictly_contiguous(w)",  # the other tensor
    "assert not is_strictly_contiguous(x)",
    "assert is_strictly_contiguous(x) or w is None",
    "pass",
])
def test_one_caller_without_the_predicate_leaves_it_unknown(second):
    src = textwrap.dedent(
        f"""
        def _fwd(x, w):
            _k[(1,)](x, w)

        def one(x, w):
            assert is_strictly_contiguous(x)
            return _fwd(x, w)

        def two(x, w):
            {second}
            _fwd(x, w)
        """
    )
    info = collect(ast.parse(src), src, module_name="pkg.ops", path=None)
    assert not info.launches[0].args[0].contiguous_in_module


def _gather_sources(caller_check: str) -> str:
    # The launcher passes a size product as the slot stride of `pool`; only its callers check `pool`.
    return GATHER_KERNEL + textwrap.dedent(
        f'''

        def _gather(pool, slots):
            n_slots, heads, dim = pool.shape
            out = torch.empty(slots.numel(), heads, dim)
            _gather_kernel[(slots.numel(),)](out, pool, heads * dim, slots, heads * dim, BLOCK=64)
            return out


        def gather(pool, slots):
            {caller_check}
            return _gather(pool, slots)
        '''
    )


@pytest.mark.parametrize("check, fires", [
    ("assert is_strictly_contiguous(pool)", False),
    ("assert torch_utils.is_strictly_contiguous(pool)", False),
    ("assert pool.is_contiguous()", False),
    ("assert is_strictly_contiguous(slots)", True),
    ("assert not is_strictly_contiguous(pool)", True),
    ("assert is_strictly_contiguous(pool) or slots is None", True),
    ("pass", True),
])
def test_sc004_follows_the_predicate_in_the_only_caller(tmp_path, check, fires):
    found = lint_tree(tmp_path, {"m.py": _gather_sources(check)})
    assert [f.code for f in found] == (["SC004"] if fires else [])
