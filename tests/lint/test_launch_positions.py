"""Launch spans and texts read from ``ast`` are those libcst gives (the launch side read libcst's
tree before; findings, messages and ``--fix`` edits are built from them).

libcst is the oracle here: its ``PositionProvider`` (character columns, an expression's own
parentheses left out) and its text of a node (``code_for_node``, own parentheses in, the
indentation of the enclosing block left off continuation lines)."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from stridecheck.lint.launches import collect
from stridecheck.lint.model import Span

SOURCES = {
    "tuples": """
        def f(x, n):
            k[(n, 2)](x)
            k[(n, 2,)](x)
            k[( n, 2, )](x)
            k[(  # rows
                n,
                2,  # heads
            )](x)
            k[(n,)](x, (n, 2), ((n, 2)), (n,))
        """,
    "parentheses": """
        def f(x, n):
            k[(n + 1)]((x), (n + 1), ((n * 2)), n + (1), (n) + 1, c=(n - 1))
            k[g]((n + 1))
            k[g]((n + 1),)
            k[g](x for x in y)
            k[g]((x for x in y))
        """,
    "non_ascii": """
        def f(x, n):
            s = "é"; k[g]("éé", x, n + 1, "ü" * n)
            k[g](x,	n * 2)  # a tab
        """,
    "continued": """
        class Op:
            def forward(self, x, n):
                if n:
                    k[(
                        triton.cdiv(n, 4),
                        2,
                    )](
                        x,
                        (
                            n
                            * 2  # twice
                        ),
                        w=(n +
                           1),
                    )
        """,
    "grid_from_lambda": """
        def f(x, M):
            grid = lambda META: (  # noqa
                (
                    META["S"]
                    * triton.cdiv(M, META["B"])
                ),
            )
            if M:
                for _ in range(2):
                    k[grid](x, M)
        """,
    "star_and_keywords": """
        def f(x, n, rest):
            k[g](x, w=n, *rest)
            k[g](*(x, n), **{"a": n, "b": (n + 1)})
            k[g](**dict(a=(n * 2), b=x))  # a call: its keywords are not read
        """,
    "checks": """
        def f(x, n):
            assert x.shape[0] == (n + 1), "rows"
            if x.size(1) != (
                n * 2
            ):
                raise ValueError
            torch._check((n) == x.size(0))
            k[g](x, n)
        """,
}


# Sources whose lines are not all plain indentation, written out (textwrap.dedent would change them).
RAW_SOURCES = {
    # a backslash line join inside an argument's own parentheses: kept verbatim, indentation too
    "join_in_parentheses": "def f(a, n):\n    k[g](n, (a \\\n            .stride(1)), a)\n",
    "join_then_newline": (
        "def f(a, n):\n    k[g](n, (a \\\n     \n        .stride(1)), ('x' \\\n        'y'))\n"
    ),
    # a body on its header's line (joined by `\`): the block is the header's
    "suite_after_join": "def f(a, n):\n    if a: \\\n        k[g](n, (a\n            .stride(1)), a)\n",
    "suite_after_join_nested": (
        "def f(a, n):\n    for i in n:\n        if a: n = 1; \\\n            k[g](n, (a\n                .stride(1)), a)\n"
    ),
    "with_suite_after_join": "def f(a, n):\n    with a: \\\n        k[g](n, (a\n            .stride(1)), a)\n",
    "statement_after_join": "def f(a, n):\n    z = 1; \\\n        k[g](n, (a\n            .stride(1)), a)\n",
    "header_comment_ends_in_backslash": (
        "def f(a, n):\n    if a:  # c \\\n        k[g](n, (a\n            .stride(1)), a)\n"
    ),
    # a statement that starts after a string of several lines, on that string's last line
    "after_string": 'def f(a, n):\n    s = """\n"""; k[g](n, (\n        a.stride(1)), a)\n',
    # the line above starts inside a string that holds `#`: no comment there
    "hash_in_string_tail": 'def f(a, n):\n    s = """\n#"""; k[g](n, (\n        a.stride(1)), a)\n',
    "hash_in_string_tail_tuple": 'def f(a, n):\n    s = """\n#"""; k[g](n, (a,\n), a)\n',
    "hash_in_string_tail_comment": (
        'def f(a, n):\n    s = """\n#"""; k[g](n, (a,  # c\n), (  # c\n        a.stride(1)), a)\n'
    ),
}

# A form feed in the indentation: libcst's columns on that line (and, when the feed is in the
# block's first statement, on the block's other lines) are one too many or too few; ``ast``'s
# are right, so only texts are compared. The block's indentation is its first statement's.
FORM_FEED_SOURCES = {
    "not_first": "def f(a, n):\n    n = 1\n\x0c    k[g](n, (a\n        .stride(1)), a)\n",
    "not_first_mid": "def f(a, n):\n    n = 1\n  \x0c    k[g](n, (a\n        .stride(1)), a)\n",
    "first": "def f(a, n):\n\x0c    k[g](n, (a\n        .stride(1)), a)\n",
    "first_then_other": "def f(a, n):\n\x0c    n = 1\n    k[g](n, (a\n        .stride(1)), a)\n",
}


def _libcst_launches(src: str):
    """(grid text, [(arg span, arg text)]) of each launch, as libcst reads them."""
    module = cst.parse_module(src)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lines = src.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def dotted(node):
        parts = []
        while isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        if isinstance(node, cst.Name):
            return ".".join([node.value, *reversed(parts)])
        return None

    def span(node):
        r = positions[node]
        return Span(r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    def text(node):
        d = dotted(node)
        if d is not None:
            return d
        if getattr(node, "lpar", None):
            return module.code_for_node(node).strip()
        r = positions[node]
        a = starts[r.start.line - 1] + r.start.column
        b = starts[r.end.line - 1] + r.end.column
        return " ".join(src[a:b].split()) if r.end.line > r.start.line else src[a:b]

    out = []

    class Launches(cst.CSTVisitor):
        def visit_Call(self, call):
            if not isinstance(call.func, cst.Subscript):
                return
            index = call.func.slice[0].slice
            grid = text(index.value) if isinstance(index, cst.Index) else None
            values = []
            for a in call.args:
                v = a.value
                if a.star == "*" and isinstance(v, cst.Tuple):
                    values.extend(e.value for e in v.elements)
                elif a.star == "**" and isinstance(v, cst.Dict):
                    values.extend(e.value for e in v.elements)
                elif not a.star:
                    values.append(v)
            out.append((span(call), grid, [(span(v), text(v)) for v in values]))

    module.visit(Launches())
    return out


def _ast_launches(src: str):
    info = collect(ast.parse(src), src, module_name="m")
    return [
        (launch.span, launch.grid_text, [(a.span, a.text) for a in (*launch.args, *launch.kwargs.values())])
        for launch in info.launches
    ]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_spans_and_texts_are_libcst_s(name):
    src = textwrap.dedent(SOURCES[name])
    want = _libcst_launches(src)
    got = _ast_launches(src)
    assert len(got) == len(want) > 0
    # keyword arguments come after positional ones in the model: compare as sets per launch
    for (g_span, g_grid, g_args), (w_span, w_grid, w_args) in zip(got, want):
        assert g_span == w_span
        assert g_grid == w_grid
        assert sorted(g_args, key=_key) == sorted(w_args, key=_key)


@pytest.mark.parametrize("name", sorted(RAW_SOURCES))
def test_raw_spans_and_texts_are_libcst_s(name):
    src = RAW_SOURCES[name]
    want = [(s, g, sorted(a, key=_key)) for s, g, a in _libcst_launches(src)]
    got = [(s, g, sorted(a, key=_key)) for s, g, a in _ast_launches(src)]
    assert len(want) == 1
    assert got == want


@pytest.mark.parametrize("name", sorted(FORM_FEED_SOURCES))
def test_texts_under_form_feed_are_libcst_s(name):
    src = FORM_FEED_SOURCES[name]
    want = [(g, sorted(t for _, t in a)) for _, g, a in _libcst_launches(src)]
    got = [(g, sorted(t for _, t in a)) for _, g, a in _ast_launches(src)]
    assert len(want) == 1
    assert got == want


def test_form_feed_columns_count_characters():
    # `\f` is one character of the line: `n` in `\f    k[g](n, ...` is its 10th (libcst says 9th).
    src = FORM_FEED_SOURCES["not_first"]
    (launch,) = collect(ast.parse(src), src).launches
    assert launch.args[0].span == Span(3, 11, 3, 12)
    assert launch.args[1].span == Span(3, 15, 4, 19)


def _key(arg):
    span, text = arg
    return span.line, span.column, span.end_line, span.end_column, text


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_other_line_endings(newline):
    # `\r` alone ends lines too (Python splits there): launch hints are found on the right lines.
    src = textwrap.dedent(SOURCES["continued"]).replace("\n", newline)
    got, want = _ast_launches(src), _libcst_launches(src)
    assert [(s, g, sorted(a, key=_key)) for s, g, a in got] == [(s, g, sorted(a, key=_key)) for s, g, a in want]


def test_width_checks_are_libcst_s():
    src = textwrap.dedent(SOURCES["checks"])
    (launch,) = collect(ast.parse(src), src).launches
    checks = [(c.tensor, c.dim, c.against, c.span) for c in launch.width_checks]
    assert checks == [
        ("x", 0, "(n + 1)", Span(3, 12, 3, 33)),
        ("x", 1, "(\n    n * 2\n)", Span(4, 8, 6, 6)),  # the block's indentation left off
        ("x", 0, "n", Span(8, 18, 8, 34)),  # `(n) == x.size(0)`: the parentheses of `n` are in
    ]


def test_summary_counts_statements_as_libcst_counts_them():
    # A function of at most 12 statements is summarised; `a; b` on one line counts once, except
    # in a body written on the def's own line.
    body = "".join(f"    a{i} = 1; b{i} = 2\n" for i in range(11))
    src = "import torch\ndef alloc(x):\n" + body + "    return torch.empty(3)\n\ndef g(x):\n    k[g](alloc(x))\n"
    info = collect(ast.parse(src), src)
    assert info.allocators == ("alloc",)
    src = "import torch\n" + "".join(f"def f{i}(x): a = 1; return torch.empty(3)\n" for i in range(2)) + "k[g](f0(y))\n"
    assert collect(ast.parse(src), src).allocators == ("f0", "f1")
