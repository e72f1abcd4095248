"""The linker: a kernel index over the tree, launch targets resolved across modules, arguments
bound to parameters as Python binds a call."""

from __future__ import annotations

import ast
import textwrap


from stridecheck.lint.launches import collect
from stridecheck.lint.linker import Tree, bind
from stridecheck.lint.model import Kernel, Launch, ModuleModel, OriginKind, Param, ParamKind, Span

SPAN = Span(1, 1, 1, 1)


def _kernel(name: str, *params: str) -> Kernel:
    """A kernel with the given parameters (``x_ptr``-like names are pointers, ``BLOCK`` constexpr)."""
    out = []
    for i, p in enumerate(params):
        if p.endswith("_ptr"):
            kind = ParamKind.POINTER
        elif "stride" in p:
            kind = ParamKind.STRIDE
        elif p.isupper():
            kind = ParamKind.CONSTEXPR
        else:
            kind = ParamKind.SIZE
        out.append(Param(p, i, kind, SPAN, constexpr=p.isupper()))
    return Kernel(name, SPAN, out)


def _model(path: str, src: str, kernels=(), module: str | None = None) -> ModuleModel:
    src = textwrap.dedent(src)
    info = collect(ast.parse(src), src, module_name=module, path=path)
    return ModuleModel(path, module, list(kernels), info.launches, info.imports, info.kernel_aliases)


K = _kernel("_k", "x_ptr", "stride_x", "n", "BLOCK")


def _bound(tree: Tree, model: ModuleModel, kernel: Kernel):
    launches = tree.launches_of(model, kernel)
    assert len(launches) == 1, launches
    return {k: v.text for k, v in launches[0].bound.items()}


def test_same_module_positional_and_keyword_binding():
    m = _model("pkg/ops.py", "def f(x):\n    _k[(1,)](x, x.stride(0), n=x.shape[1], BLOCK=64, num_warps=4)\n", [K])
    tree = Tree([m])
    assert _bound(tree, m, K) == {"x_ptr": "x", "stride_x": "x.stride(0)", "n": "x.shape[1]", "BLOCK": "64"}


def test_from_relative_import_across_modules(tmp_path):
    kernels = _model("src/pkg/kernels.py", "", [K], module="pkg.kernels")
    ops = _model("src/pkg/ops.py", "from .kernels import _k\ndef f(x):\n    _k[(1,)](x, 1, 2)\n", module="pkg.ops")
    tree = Tree([kernels, ops])
    assert _bound(tree, kernels, K) == {"x_ptr": "x", "stride_x": "1", "n": "2"}
    assert tree.launches_of(kernels, K)[0].module is ops


def test_import_module_as_alias_and_attribute_launch():
    kernels = _model("src/pkg/kernels.py", "", [K], module="pkg.kernels")
    ops = _model("src/pkg/ops.py", "import pkg.kernels as K\ndef f(x):\n    K._k[(1,)](x, 1, 2)\n", module="pkg.ops")
    tree = Tree([kernels, ops])
    assert len(tree.launches_of(kernels, K)) == 1


def test_resolution_by_path_when_module_names_are_unknown():
    kernels = _model("repo/pkg/kernels.py", "", [K])
    ops = _model("repo/pkg/ops.py", "from pkg.kernels import _k\nfrom . import kernels\ndef f(x):\n    _k[(1,)](x, 1, 2)\n    kernels._k[(1,)](x, 3, 4)\n")
    tree = Tree([kernels, ops])
    assert len(tree.launches_of(kernels, K)) == 2


def test_reexport_through_package_init():
    kernels = _model("src/pkg/kernels.py", "", [K], module="pkg.kernels")
    init = _model("src/pkg/__init__.py", "from .kernels import _k\n", module="pkg")
    ops = _model("src/app.py", "from pkg import _k\ndef f(x):\n    _k[(1,)](x, 1, 2)\n", module="app")
    tree = Tree([kernels, init, ops])
    assert len(tree.launches_of(kernels, K)) == 1


def test_autotuned_alias_and_self_attribute_and_local_variable():
    impl = _kernel("_k_impl", "x_ptr", "n")
    m = _model(
        "m.py",
        """
        _k = triton.autotune(configs=[], key=["n"])(_k_impl)

        class Op:
            def __init__(self):
                self.kernel = _k

            def __call__(self, x):
                self.kernel[(1,)](x, x.numel())

        def f(x):
            kern = _k
            kern[(1,)](x, n=x.numel())
        """,
        [impl],
    )
    tree = Tree([m])
    assert len(tree.launches_of(m, impl)) == 2


def test_ambiguous_module_path_is_not_guessed():
    a = _model("a/kernels.py", "", [K])
    b = _model("b/kernels.py", "", [_kernel("_k", "y_ptr")])
    ops = _model("c/ops.py", "from kernels import _k\ndef f(x):\n    _k[(1,)](x, 1, 2)\n")
    tree = Tree([a, b, ops])
    assert tree.launches_of(a, K) == [] and tree.bound_launches() == []


def test_unknown_target_is_skipped():
    m = _model("m.py", "def f(x):\n    other[(1,)](x)\n    subprocess.run(['ls'])\n", [K])
    assert Tree([m]).bound_launches() == []


def _launch(args=(), kwargs=None, star=False) -> Launch:
    from stridecheck.lint.model import ArgOrigin

    mk = lambda t: ArgOrigin(OriginKind.OTHER, t, SPAN)  # noqa: E731
    return Launch("_k", SPAN, [mk(a) for a in args], {k: mk(v) for k, v in (kwargs or {}).items()}, star_args=star)


def test_bind_rejects_what_python_would_reject():
    assert bind(_launch(["a", "b", "c", "d", "e"]), K) is None  # too many positional
    assert bind(_launch(["a"], {"nonsense": "b"}), K) is None  # unknown keyword
    assert bind(_launch(["a"], {"num_warps": "4", "stream": "s"}), K) is not None  # launch options


def test_bind_keeps_the_positional_argument_of_a_parameter_given_twice():
    # Python refuses the call, but the positional argument is where the launch's author went
    # wrong (a kernel whose parameters were reordered under a positional call site): judged there.
    b = bind(_launch(["a"], {"x_ptr": "b"}), K)
    assert b is not None and b["x_ptr"].text == "a"


def test_bind_after_unresolved_star_args_keeps_keywords_only():
    b = bind(_launch(["a"], {"BLOCK": "64", "whatever": "1"}, star=True), K)
    assert {k: v.text for k, v in b.items()} == {"x_ptr": "a", "BLOCK": "64"}


def test_stride_names_pair_with_pointers_by_convention():
    from stridecheck.lint.stride_pairs import owner_candidates, pointer_base, stride_named

    assert pointer_base("x_ptr") == "x" and pointer_base("X") == "x" and pointer_base("in_ptr0") == "in"
    assert owner_candidates("stride_am") == ["am", "a"]
    assert owner_candidates("stride_k_head") == ["k_head", "k"]
    assert owner_candidates("x_row_stride") == ["x_row", "x"]
    assert owner_candidates("sx0") == ["x0", "x"]
    assert "w" not in owner_candidates("stride_w_mx_e")  # `mx_e` is not a dimension name
    assert "b" not in owner_candidates("stride_bsn")  # at most one trailing dimension letter
    assert stride_named("cache_stride_0") and stride_named("sx0") and not stride_named("n_cols")


def test_pairing_by_initials_and_by_use():
    from stridecheck.lint.model import Access, Index, IndexSource, Step, StepKind, Term
    from stridecheck.lint.stride_pairs import pair_strides

    k = _kernel("_k", "b_ptr", "b_scale_ptr", "stride_bsn", "stride_row", "out_ptr")
    k.params[2].kind = k.params[3].kind = ParamKind.STRIDE

    def term(param):
        return Term(Index("i", frozenset({IndexSource.PROGRAM_ID})), Step(StepKind.STRIDE, param, (param,)), SPAN, "i")

    k.accesses = [
        Access("load", "b_scale_ptr", [term("stride_bsn")], SPAN),
        Access("store", "out_ptr", [term("stride_row")], SPAN),
    ]
    assert pair_strides(k) == {"stride_bsn": "b_scale_ptr", "stride_row": "out_ptr"}
    # A name the use contradicts is not trusted: `stride_d` stepping only `q` is not `d_ptr`'s.
    k2 = _kernel("_k2", "q_ptr", "d_ptr", "stride_d")
    k2.accesses = [Access("load", "q_ptr", [term("stride_d")], SPAN)]
    assert pair_strides(k2) == {"stride_d": "q_ptr"}
