"""The guarded launcher as a Python object: methods, signatures, pickling, stacking, generators, coroutines, partials."""

from __future__ import annotations

import functools
import inspect
import pickle

import pytest
import torch

from stridecheck import StrideGuardError, Tensor, stride, stride_guard


class _Launchers:
    @stride_guard(x="N", out=Tensor("N", writes=True))
    @staticmethod
    def static(x, out):
        return ("static", x.shape[0])

    @stride_guard(x="N")
    @classmethod
    def klass(cls, x):
        return (cls.__name__, x.shape[0])

    @stride_guard(x="M N")
    def method(self, x, *, scale=2):
        return (type(self).__name__, x.shape[0] * scale)


def test_staticmethod_keeps_its_binding():
    # Fixed: the guard returned a plain function, which the class made an instance method, so
    # `obj.static(x, out)` passed `self` as x.
    x, out = torch.zeros(3), torch.zeros(3)
    assert _Launchers.static(x, out) == ("static", 3)
    assert _Launchers().static(x, out) == ("static", 3)
    with pytest.raises(StrideGuardError, match=r"^static: out is written but two of its elements share memory"):
        _Launchers().static(torch.zeros(3), torch.zeros(3, 2)[:, 0].as_strided((3,), (0,)))


def test_classmethod_is_guarded():
    # Fixed: refused with "can only wrap a function or a Triton kernel".
    assert _Launchers.klass(torch.zeros(4)) == ("_Launchers", 4)
    assert _Launchers().klass(torch.zeros(4)) == ("_Launchers", 4)
    with pytest.raises(StrideGuardError, match=r"^klass: x has 2 dims"):
        _Launchers.klass(torch.zeros(2, 2))


def test_method_self_and_keyword_only_default():
    assert _Launchers().method(torch.zeros(2, 3)) == ("_Launchers", 4)
    assert _Launchers().method(torch.zeros(2, 3), scale=5) == ("_Launchers", 10)
    with pytest.raises(StrideGuardError, match=r"^method: x dim 1 \(the last\) has stride 2"):
        _Launchers().method(torch.zeros(2, 6)[:, ::2])


@stride_guard(x="V", vocab_size="V", x_stride=stride("x", 0))
def _bind_int(x, vocab_size, x_stride=None):
    return "ok"


def test_pickle_and_signature_of_a_guarded_function():
    assert pickle.loads(pickle.dumps(_bind_int)) is _bind_int
    sig = inspect.signature(_bind_int)
    assert str(sig) == "(x, vocab_size, x_stride=None)"
    assert str(inspect.signature(_bind_int, follow_wrapped=False)) == "(x, vocab_size, x_stride=None)"
    assert _bind_int.__name__ == "_bind_int" and _bind_int.__wrapped__.__name__ == "_bind_int"


def test_repeated_decoration_checks_both_contracts():
    @stride_guard(x="N")
    @stride_guard(x=Tensor("N", dtype=torch.float32))
    def f(x):
        return "ok"

    assert f(torch.zeros(3)) == "ok"
    with pytest.raises(StrideGuardError, match=r"x has dtype int64 but must be float32"):
        f(torch.zeros(3, dtype=torch.int64))
    with pytest.raises(StrideGuardError, match=r"x has 2 dims"):
        f(torch.zeros(3, 3))


def test_generator_launcher_checks_at_call_time():
    @stride_guard(x="N")
    def steps(x):
        yield from range(x.shape[0])

    assert list(steps(torch.zeros(3))) == [0, 1, 2]
    with pytest.raises(StrideGuardError, match=r"^steps: x has 2 dims"):
        steps(torch.zeros(3, 3))  # before any next()


def test_default_none_tensor_and_required():
    @stride_guard(x="N", out=Tensor("N", writes=True), bias=Tensor("N", required=True))
    def f(x, bias, out=None):
        return "ok"

    assert f(torch.zeros(3), torch.zeros(3)) == "ok"
    with pytest.raises(StrideGuardError, match=r"^f: bias is None but is required by the guard; pass it$"):
        f(torch.zeros(3), None)


def _scaled(x, y, scale):
    return ("ok", scale)


class _CallableLauncher:
    def __call__(self, x):
        return "ok"


def test_partials_and_callable_objects_are_named_in_messages():
    # Fixed: messages named them by repr (`functools.partial(<function _scaled at 0x7f...>, ...)`,
    # `<..._CallableLauncher object at 0x7f...>`).

    g = stride_guard(x="N", y="N")(functools.partial(_scaled, scale=2))
    assert g(torch.zeros(2), torch.zeros(2)) == ("ok", 2)
    assert g.__name__ == "_scaled"
    with pytest.raises(StrideGuardError, match=r"^_scaled: y dim 0 is 3 but must be N = 2"):
        g(torch.zeros(2), torch.zeros(3))
    h = stride_guard(x="N M")(_CallableLauncher())
    assert h(torch.zeros(2, 2)) == "ok"
    with pytest.raises(StrideGuardError, match=r"^_CallableLauncher: x has 1 dims"):
        h(torch.zeros(2))


def test_a_guarded_coroutine_function_is_still_one():
    # Fixed: the wrapper was a plain function returning the coroutine, so
    # inspect.iscoroutinefunction (asyncio frameworks, pytest-asyncio) said False.
    import asyncio

    @stride_guard(x="N", y="N")
    async def launch(x, y):
        await asyncio.sleep(0)
        return x.shape[0]

    assert inspect.iscoroutinefunction(launch)
    assert asyncio.run(launch(torch.zeros(3), torch.zeros(3))) == 3
    with pytest.raises(StrideGuardError, match=r"^launch: y dim 0 is 4 but must be N = 3"):
        asyncio.run(launch(torch.zeros(3), torch.zeros(4)))
