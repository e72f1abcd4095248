"""Launch sites and their launchers: what each launch argument is, as far as the launcher shows.

Entry point (called by ``stridecheck.lint.access_model.build_module_model``)::

    collect(tree, source, module_name=None, path=None) -> LaunchInfo

* ``tree``: the file's ``ast.Module`` (the one the kernel side reads: each file is parsed once).
* ``source``: the file's text (``ast.parse(source)`` gave ``tree``); a file with no ``](`` and no
  ``.run(`` has no launch, and then only its imports and kernel aliases are read (a handful of
  top-level statements), plus the summary of small allocating functions when it has any.
* ``module_name``: the dotted module name (``ModuleModel.module``) used to resolve relative imports;
  ``path`` tells whether the module is a package ``__init__``. Without ``module_name`` a relative
  import is kept with its leading dots and the linker resolves it from the model's path.

It returns a :class:`LaunchInfo` with ``launches`` (every ``kernel[grid](...)`` and
``kernel.run(...)`` in a function, method or at module level, ``kernel`` also written
``torch.library.wrap_triton(kernel)``; one at module level has no launcher), ``imports`` (local name -> dotted
name) and ``kernel_aliases`` (variable -> the name it holds, for ``k = _kernel``,
``k = triton.autotune(...)(_impl)``, ``self.kernel = _kernel``). Nothing here knows which names are
kernels: the linker resolves targets against the index of kernels of the whole tree.

Provenance is tracked per launcher, statement by statement, in order: facts established on both
arms of an ``if`` (or on the arm that does not raise/return) survive it; a loop body may not run,
so its facts survive only where they agree with the facts before it. A fact is:

* a tensor variable is *contiguous* (``.contiguous()``; a fresh ``torch.empty/zeros/ones/full/
  rand*/arange/tensor`` or ``t.new_*`` without a non-default ``memory_format``; ``torch.*_like(t)``
  or ``t.clone()`` only when ``t`` is itself contiguous or ``memory_format=torch.contiguous_format``
  is given, since their default ``preserve_format`` keeps ``t``'s strides; ``view``/``reshape`` of a
  contiguous tensor; a dominating ``assert t.is_contiguous()`` or
  ``if not t.is_contiguous(): raise``, or the same with a predicate function given the tensor,
  ``is_contiguous(t)``/``is_strictly_contiguous(t)``), *fresh* (allocated in the launcher);
* an integer variable came from ``t.shape[i]``/``t.size(i)``/tuple unpacking of ``t.shape``
  (``n, v = logits.shape``), ``t.stride(i)``, ``t.numel()``, a product of sizes, or a literal;
* a width check: ``assert``/``if ...: raise`` comparing ``t.size(i)``/``t.shape[i]`` with something,
  or a whole shape (``list(t.shape)``, ``tuple(t.shape[1:])``, ``t.size()``) for equality with a
  list/tuple (a literal, or a name bound to one on every path), each listed dimension against its
  element; only comparisons that hold by themselves count (each conjunct of a true ``and``, none
  of an ``or``), and a path where ``t is None`` takes nothing away from checks of ``t``;
* a unit stride: ``assert t.stride(k) == 1`` / ``t.stride()[k] == 1`` (``ArgOrigin.unit_strides``);
* the extents a tensor is known to cover (``ArgOrigin.vetted``): every extent when the launcher
  allocates it (a view of the allocation too: ``x.new_empty(M, K).as_strided(...)``,
  ``y.view(...)``/``y.as_strided(y.size(), ...)`` of an allocated ``y``) or checks it, the tensor
  it was assigned from (``dX = dY``), and what both arms of ``a if c else b`` cover.

Beyond the launcher (``ArgOrigin.contiguous_in_module`` only; ``contiguous`` stays the launcher's own
fact): a parameter is contiguous at entry when every call of the launcher in the module (two levels
of callers) passes a contiguous tensor, when a decorator makes the arguments contiguous
(``@input_guard``, ``@ensure_contiguous``), or, for ``ctx.saved_tensors``, when the autograd
``forward`` of the same class saved a contiguous tensor.

Spans and texts are those libcst reports (this module read libcst's tree until the linter dropped
libcst for speed; findings and ``--fix`` edits depend on them, byte for byte): columns count
characters (``ast`` counts UTF-8 bytes), an expression's span leaves out its own parentheses (a
parenthesised tuple or a generator expression included, whose ``ast`` range holds them), and the
text of a parenthesised expression is its source with those parentheses, verbatim but for the
indentation of its block on continuation lines (a line joined by a backslash kept as written;
:class:`_Source`). A test compares them with libcst's on awkward sources
(``tests/lint/test_launch_positions.py``). One difference is kept on purpose: on a line indented
with a form feed libcst's columns are off by one, these count the form feed as one character.

Cost: one walk over the statements of the functions that hold a launch; a second, over the
statements alone, only where a launch's text spans lines or a comment sits among its arguments.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from dataclasses import dataclass, field, replace

from stridecheck.lint.callgraph import kept, public_entry, strided_subscript, walk
from stridecheck.lint.model import ArgOrigin, Launch, OriginKind, Span, WidthCheck, product_key, value_key

__all__ = ["LaunchInfo", "collect", "dotted"]

_NO_SPAN = Span(1, 1, 1, 1)
_LAUNCH_HINT = re.compile(r"\]\s*\(|\.run\s*\(")
_ALLOC_HINT = re.compile(r"\b(?:empty|zeros|ones|full|new_\w+|\w+_like)\(")

# Allocation functions whose result is a new, contiguous tensor unless a memory_format says otherwise.
_FRESH_CONTIGUOUS = frozenset(
    {
        "empty", "zeros", "ones", "full", "rand", "randn", "randint", "randperm", "arange",
        "tensor", "linspace", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor",
    }
)
# Allocations that keep the layout of their source by default (memory_format=torch.preserve_format).
# Allocations given their strides: `torch.empty_strided(size, stride)`, Inductor's `empty_strided_cuda`.
_STRIDED_ALLOC = frozenset({"empty_strided", "empty_strided_cuda", "empty_strided_cpu", "empty_strided_xpu"})
# Allocations whose positional arguments (or one tuple of them) are the size.
_SIZED_ALLOC = frozenset({"empty", "zeros", "ones", "rand", "randn", "full", "new_empty", "new_zeros", "new_ones",
                          "new_full"})
_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like"})
# Views and conversions that are contiguous when their source is (a reshape of a packed tensor is packed).
_KEEPS_CONTIGUITY = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "to",
                               "float", "half", "bfloat16", "int", "long", "cuda", "cpu", "type"})
# Views that keep every element of their source (what was allocated or checked stays so).
_SAME_EXTENT_VIEWS = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "unflatten",
                                "contiguous", "to", "float", "half", "bfloat16"})
# Views whose strides are not those of a packed tensor of their shape.
_STRIDED_VIEWS = frozenset({"transpose", "permute", "t", "narrow", "select", "expand", "expand_as", "movedim",
                            "as_strided", "unfold", "diagonal"})
# Results that share storage with their source, with other strides (the source's "family").
_VIEWS = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "transpose", "permute",
                    "t", "T", "mT", "narrow", "select", "expand", "expand_as", "unflatten", "movedim",
                    "as_strided", "unfold", "split", "chunk", "diagonal", "contiguous", "to", "detach"})

_ANY_VIEW = _VIEWS | _SAME_EXTENT_VIEWS


@dataclass(slots=True)
class LaunchInfo:
    launches: list[Launch] = field(default_factory=list)
    imports: dict[str, str] = field(default_factory=dict)
    kernel_aliases: dict[str, str] = field(default_factory=dict)
    allocators: tuple[str, ...] = ()  # module functions that return a fresh contiguous tensor
    contiguous_returns: tuple[str, ...] = ()  # module functions that return a contiguous tensor


@dataclass(frozen=True, slots=True)
class _Tensor:
    contiguous: bool = False
    fresh: bool = False
    family: str | None = None  # the variable whose storage it views (itself when unknown)
    like_of: str | None = None  # torch.*_like(t) / t.clone(): t
    alloc_call: str | None = None  # returned by an imported function (resolved by the linker)
    opaque: bool = False  # returned by a call we know nothing of (a table of data pointers, a view...)
    view: bool = False  # a slice, transpose, permute, expand... made in the launcher: strided for sure
    inner: bool = False  # ... whose innermost stride is not 1 (`x.t()`, `x.unbind(-1)`, `x[..., 0]`)
    dtype: str | None = None  # "int64", "int32", ... when the allocation or a conversion shows it
    strides: frozenset = frozenset()  # (dim, value key) the allocation fixes (`empty_strided(s, (1, k))`)
    ndim: int | None = None  # the rank, where the allocation or view writes its sizes out


_ANY = frozenset({"*"})  # vetted against every extent: allocated in the launcher
_ALL_DIMS = frozenset({None})  # every stride pinned: the tensor is None on this path


def _intersect(a: frozenset, b: frozenset, top: frozenset) -> frozenset:
    """``a & b`` where ``top`` (``_ANY``, ``_ALL_DIMS``) stands for every element."""
    return b if a == top else a if b == top else a & b


class _State:
    """Facts known at one point of a launcher."""

    __slots__ = ("tensors", "ints", "seqs", "checks", "aliases", "vetted", "seq_paths", "units", "rebound",
                 "known", "same", "when", "replaced")

    def __init__(self):
        self.tensors: dict[str, _Tensor] = {}
        self.ints: dict[str, ArgOrigin] = {}
        self.seqs: dict[str, ast.expr] = {}  # name -> tuple/list/dict/lambda expression
        self.checks: dict[tuple, WidthCheck] = {}
        self.aliases: dict[str, str] = {}
        # tensor -> the tensors whose extents it is known to match (`*`: allocated here, or checked)
        self.vetted: dict[str, frozenset[str]] = {}
        # name -> the tuple/list literals it may hold, one per path (`g_expect = (H, L)` on one arm
        # of an `if`, `(H, L, K)` on the other): what a whole-shape comparison with it checks.
        self.seq_paths: dict[str, tuple[ast.expr, ...]] = {}
        # tensor -> the dimensions whose stride a check pins to 1 (`_ALL_DIMS` where it is None)
        self.units: dict[str, frozenset] = {}
        self.rebound: frozenset = frozenset()  # names assigned in the function so far
        self.replaced: frozenset = frozenset()  # ... on every path (a subset of `rebound`)
        # tensor -> (dim as written, value key) pairs: a stride an allocation or a check fixes
        # (`torch.empty_strided(s, (1, k))`, `assert t.stride(-2) == head_dim`); see `value_key`.
        self.known: dict[str, frozenset] = {}
        # tensor -> (other tensor, dim or None for every dim) whose strides a check shows equal
        # (`assert a.stride() == b.stride()`, `if a.stride(0) != b.stride(0): raise`).
        self.same: dict[str, frozenset] = {}
        # tensor -> the conditions on a launcher name under which it is contiguous (`if beta != 0:
        # assert ref.is_contiguous()`), as (name, test, truth, value): see `_condition_key`.
        self.when: dict[str, frozenset] = {}

    def copy(self) -> "_State":
        s = _State()
        s.tensors = dict(self.tensors)
        s.ints = dict(self.ints)
        s.seqs = dict(self.seqs)
        s.checks = dict(self.checks)
        s.aliases = dict(self.aliases)
        s.vetted = dict(self.vetted)
        s.seq_paths = dict(self.seq_paths)
        s.units = dict(self.units)
        s.rebound = self.rebound
        s.replaced = self.replaced
        s.known = dict(self.known)
        s.same = dict(self.same)
        s.when = dict(self.when)
        return s

    def kill(self, name: str) -> None:
        self.rebound = self.rebound | {name}
        self.replaced = self.replaced | {name}
        self.tensors.pop(name, None)
        self.ints.pop(name, None)
        self.ints.pop(f"ndim:{name}", None)
        self.seqs.pop(name, None)
        self.aliases.pop(name, None)
        self.vetted.pop(name, None)
        self.seq_paths.pop(name, None)
        self.units.pop(name, None)
        self.known.pop(name, None)
        # A fixed stride whose value names `name` (`stride:name:0`, `shape:name:1`) spoke of the old value.
        for t, pairs in list(self.known.items()):
            if pairs != _ALL_DIMS and any(_key_mentions(k, name) for _, k in pairs):
                self.known[t] = frozenset(p for p in pairs if not _key_mentions(p[1], name))
        for t, facts in list(self.tensors.items()):
            if facts.strides and any(_key_mentions(k, name) for _, k in facts.strides):
                self.tensors[t] = replace(facts, strides=frozenset(p for p in facts.strides
                                                                   if not _key_mentions(p[1], name)))
        if self.when:
            # A condition on `name` spoke of its old value.
            self.when.pop(name, None)
            for t, keys in list(self.when.items()):
                if any(k[0] == name for k in keys):
                    self.when[t] = frozenset(k for k in keys if k[0] != name)
        if self.same:
            self.same.pop(name, None)
            for other, pairs in list(self.same.items()):
                kept = pairs if pairs == _ALL_DIMS else frozenset(
                    p for p in pairs if p is None or p.split("@")[0] != name)
                if kept != pairs:
                    self.same[other] = kept

    @staticmethod
    def meet(states: list["_State"]) -> "_State":
        """Facts that hold on every path."""
        first, rest = states[0], states[1:]
        out = first.copy()
        for s in rest:
            for attr in ("ints", "seqs", "checks", "aliases"):
                mine = getattr(out, attr)
                theirs = getattr(s, attr)
                for key in list(mine):
                    if key not in theirs or theirs[key] is not mine[key] and theirs[key] != mine[key]:
                        del mine[key]
            for key in list(out.tensors):
                a, b = out.tensors[key], s.tensors.get(key)
                if b is None:
                    del out.tensors[key]
                elif a != b:
                    out.tensors[key] = _Tensor(
                        contiguous=a.contiguous and b.contiguous,
                        fresh=a.fresh and b.fresh,
                        family=a.family if a.family == b.family else None,
                        like_of=a.like_of if a.like_of == b.like_of else None,
                        strides=a.strides & b.strides,
                        ndim=a.ndim if a.ndim == b.ndim else None,
                    )
            for attr, top in (("vetted", _ANY), ("units", _ALL_DIMS), ("known", _ALL_DIMS), ("same", _ALL_DIMS),
                              ("when", _ALL_DIMS)):
                mine, theirs = getattr(out, attr), getattr(s, attr)
                for key in list(mine):
                    b = theirs.get(key)
                    if b is None:
                        del mine[key]
                    else:
                        mine[key] = _intersect(mine[key], b, top)
            out.rebound = out.rebound | s.rebound
            out.replaced = out.replaced & s.replaced
            for key in list(out.seq_paths):
                b = s.seq_paths.get(key)
                if b is None:
                    del out.seq_paths[key]
                else:
                    out.seq_paths[key] = out.seq_paths[key] + tuple(e for e in b if e not in out.seq_paths[key])
        return out


# ----------------------------------------------------------------------------- small helpers


_SIZED_ALLOC = frozenset({"empty", "zeros", "ones", "rand", "randn", "new_empty", "new_zeros", "new_ones"})


def _rank_of_sizes(call: ast.Call) -> int | None:
    """How many sizes ``f(a, b, c)`` / ``f((a, b, c))`` writes out (``torch.empty``, ``x.view``,
    ``x.repeat``); None where a starred or a sequence variable hides the count."""
    args = call.args
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    elif len(args) == 1 and not isinstance(args[0], (ast.Constant, ast.BinOp, ast.Subscript)):
        return None  # `torch.empty(shape)`: a sequence, or one size; not told apart
    if not args or any(isinstance(a, ast.Starred) for a in args):
        return None
    return len(args)


def dotted(node) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None. ``None``/``True``/``False`` read as names
    (``"None"``), as libcst reads them: kernel aliases and argument texts depend on it."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    leaf = _name(node)
    if leaf is None:
        return None
    parts.append(leaf)
    return ".".join(reversed(parts))


def _name(node) -> str | None:
    """The identifier of a bare name; ``None``/``True``/``False`` count (libcst's ``Name``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or node.value is True or node.value is False):
        return repr(node.value)
    return None


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _int_literal(node) -> int | None:
    if isinstance(node, ast.Constant):
        v = node.value
        return v if type(v) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_literal(node.operand)
        return None if v is None else -v
    return None


class _Arg:
    """One argument of a call in source order (libcst's ``Arg``): ``star`` is "", "*" or "**"."""

    __slots__ = ("star", "keyword", "value")

    def __init__(self, star: str, keyword: str | None, value):
        self.star = star
        self.keyword = keyword
        self.value = value


def _args(call: ast.Call) -> list[_Arg]:
    """Positional, starred and keyword arguments in the order they are written (``ast`` keeps
    positional and keyword ones in two lists; ``f(x=1, *rest)`` interleaves them)."""
    out = [_Arg("*", None, a.value) if isinstance(a, ast.Starred) else _Arg("", None, a) for a in call.args]
    if call.keywords:
        kws = [_Arg("**", None, k.value) if k.arg is None else _Arg("", k.arg, k.value) for k in call.keywords]
        if out and any(a.star for a in out):
            pairs = [((a.lineno, a.col_offset), x) for a, x in zip(call.args, out)]
            pairs += [((k.lineno, k.col_offset), x) for k, x in zip(call.keywords, kws)]
            pairs.sort(key=lambda p: p[0])
            out = [x for _, x in pairs]
        else:
            out += kws
    return out


def _nargs(call: ast.Call) -> int:
    return len(call.args) + len(call.keywords)


def _first_arg(call: ast.Call):
    """The value of the first argument as written (positional, starred or keyword)."""
    return _args(call)[0].value


def _kwarg(call: ast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _positional(call: ast.Call) -> list:
    return [a for a in call.args if not isinstance(a, ast.Starred)]


def _method(call: ast.Call):
    """``obj.name(...)`` -> (obj, name)."""
    if isinstance(call.func, ast.Attribute):
        return call.func.value, call.func.attr
    return None


# Predicate functions that hold only for a contiguous tensor, called as `f(t)`:
# `vllm.utils.torch_utils.is_strictly_contiguous(t)` (contiguous and strides equal to the packed
# ones, size-1 dimensions included), a module's own `is_contiguous(t)` helper.
_CONTIGUITY_PREDICATES = frozenset({"is_contiguous", "is_strictly_contiguous"})


def _contiguity_checked(call: ast.Call) -> str | None:
    """The tensor whose contiguity ``call`` tests, when true: ``t.is_contiguous()`` or a predicate
    function given the tensor as its only argument (``is_strictly_contiguous(t)``,
    ``torch_utils.is_contiguous(t)``); else None. ``t.is_contiguous(torch.channels_last)`` asks
    about another layout, so a memory format as the argument is no tensor."""
    m = _method(call)
    if m is not None and m[1] == "is_contiguous" and not _nargs(call):
        return dotted(m[0])
    fname = dotted(call.func)
    if fname is None or fname.rsplit(".", 1)[-1] not in _CONTIGUITY_PREDICATES:
        return None
    if len(call.args) != 1 or call.keywords or isinstance(call.args[0], ast.Starred):
        return None
    name = dotted(call.args[0])
    if name is None or name.startswith("torch.") or name.endswith("_format") or "channels_last" in name:
        return None
    return name


def _is_contiguous_format(node) -> bool | None:
    """None: no memory_format given; True: torch.contiguous_format; False: another format."""
    if node is None:
        return None
    d = dotted(node) or ""
    return d.endswith("contiguous_format")


def _elements(node) -> list:
    """Elements of a tuple/list/set display, a star's operand in place of the star (``Element.value``)."""
    return [e.value if isinstance(e, ast.Starred) else e for e in node.elts]


def _plain_elements(node) -> list:
    """Elements of a tuple/list display that are not starred (libcst's ``Element``)."""
    return [e for e in node.elts if not isinstance(e, ast.Starred)]


_SMALL = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Pass, ast.Break,
          ast.Continue, ast.Delete, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Assert) + (
    (ast.TypeAlias,) if hasattr(ast, "TypeAlias") else ())
_EXITS = (ast.Raise, ast.Return, ast.Continue, ast.Break)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_STRINGS = (str, bytes)


# ----------------------------------------------------------------------------- positions


_NEWLINE = re.compile(r"\r\n|\r|\n")
_COMMENT_OR_QUOTE = re.compile(r"[#'\"]")


class _Source:
    """libcst's positions and node texts, computed from ``ast`` positions and the source text.

    Lines are split where Python splits them (``\\n``, ``\\r\\n``, ``\\r``); a column is a count of
    characters (``ast`` counts UTF-8 bytes). Only the few nodes that become spans are converted.
    """

    def __init__(self, source: str, tree: ast.Module | None = None):
        self.source = source
        self.tree = tree
        self._statements: list[tuple[int, int, str]] | None = None  # (start, end offset, indent)
        self._statement_starts: list[int] | None = None
        self._starts: list[int] | None = None
        self._lines: list[str] | None = None

    @property
    def starts(self) -> list[int]:
        """The offset of each line's first character (computed when a position is first asked)."""
        if self._starts is None:
            self._starts = [0] + [m.end() for m in _NEWLINE.finditer(self.source)]
        return self._starts

    def line(self, n: int) -> str:
        if self._lines is None:
            src = self.source
            self._lines = src.split("\n") if "\r" not in src else _NEWLINE.split(src)
        lines = self._lines
        return lines[n - 1] if 0 < n <= len(lines) else ""

    def column(self, line: int, byte_col: int) -> int:
        text = self.line(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def offsets(self, node) -> tuple[int, int]:
        """Character offsets of the node's ``ast`` range in the source."""
        starts = self.starts
        return (starts[node.lineno - 1] + self.column(node.lineno, node.col_offset),
                starts[node.end_lineno - 1] + self.column(node.end_lineno, node.end_col_offset))

    def line_of(self, offset: int) -> int:
        """The 1-based line of a source offset."""
        return bisect.bisect_right(self.starts, offset)

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 0-based character column) of a source offset."""
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i]

    # -- tokens around a range

    def skip_forward(self, pos: int) -> int:
        """The first offset at or after ``pos`` that is not whitespace, a comment or a line join."""
        src, n = self.source, len(self.source)
        while pos < n:
            c = src[pos]
            if c in " \t\f\r\n":
                pos += 1
            elif c == "\\" and pos + 1 < n and src[pos + 1] in "\r\n":
                pos += 1
            elif c == "#":
                while pos < n and src[pos] not in "\r\n":
                    pos += 1
            else:
                break
        return pos

    def skip_back(self, pos: int) -> int:
        """The offset just after the last token that ends at or before ``pos``."""
        src = self.source
        p = pos - 1
        while p >= 0:
            c = src[p]
            if c in " \t\f":
                p -= 1
            elif c in "\r\n":
                p -= 1
                if c == "\n" and p >= 0 and src[p] == "\r":
                    p -= 1
                # the line above may end in a comment
                ls = max(src.rfind("\n", 0, p + 1), src.rfind("\r", 0, p + 1)) + 1
                hash_at = self.comment_start(ls, p + 1)
                if hash_at >= 0:
                    p = hash_at - 1
            elif c == "\\" and p + 1 < len(src) and src[p + 1] in "\r\n":
                p -= 1
            else:
                break
        return p + 1

    def closing(self, at: int) -> int:
        """The offset of the bracket that closes the one at ``at`` (-1 when none)."""
        src, n = self.source, len(self.source)
        depth = 0
        i = at
        while i < n:
            c = src[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    return i
            elif c == "#":
                while i < n and src[i] not in "\r\n":
                    i += 1
                continue
            elif c in "'\"":
                i = _string_end(src, i)
                continue
            i += 1
        return -1

    def parenthesised(self, node) -> tuple[int, int] | None:
        """(offset of ``(``, of ``)``) when the ``ast`` range of a tuple or generator expression
        is enclosed in parentheses (``ast`` counts them in; libcst leaves them out)."""
        s, e = self.offsets(node)
        src = self.source
        if e - s >= 2 and src[s] == "(" and src[e - 1] == ")" and self.closing(s) == e - 1:
            return s, e - 1
        return None

    def bracketed(self, node) -> bool:
        """Whether a tuple is written in its own parentheses (``x[(a, b)]`` and not ``x[a, b]``)."""
        return self.parenthesised(node) is not None

    def range_of(self, node) -> tuple[int, int]:
        """Character offsets of libcst's range of ``node`` (its own parentheses left out)."""
        if isinstance(node, (ast.Tuple, ast.GeneratorExp)):
            paren = self.parenthesised(node)
            if paren is not None:
                start = self.skip_forward(paren[0] + 1)
                end = self.skip_back(paren[1])
                return start, max(start, end)
        return self.offsets(node)

    def span(self, node) -> Span:
        s, e = self.range_of(node)
        line, col = self.position(s)
        end_line, end_col = self.position(e)
        return Span(line, col + 1, end_line, end_col + 1)

    def comment_start(self, line_start: int, line_end: int, anchor: int | None = None) -> int:
        """The offset of the ``#`` that starts a comment in ``source[line_start:line_end]`` (one
        line), -1 when none. The line may start inside a string of several lines (``#\"\"\"; x``):
        it is read from ``anchor``, a token's start at or before it (by default the start of the
        last statement that begins at or before it)."""
        src = self.source
        if src.find("#", line_start, line_end) < 0:
            return -1
        i = self._statement_before(line_start) if anchor is None else anchor
        while True:
            m = _COMMENT_OR_QUOTE.search(src, i, line_end)
            if m is None:
                return -1
            i = m.start()
            if src[i] != "#":
                i = _string_end(src, i)
            elif i >= line_start:
                return i
            else:
                m = _NEWLINE.search(src, i, line_end)
                if m is None:
                    return -1
                i = m.end()

    def _statement_before(self, offset: int) -> int:
        """The start of the last statement that begins at or before ``offset`` (0 when none): a
        token's start, outside any string or comment."""
        self._index_statements()
        starts = self._statement_starts
        i = bisect.bisect_right(starts, offset) - 1
        return starts[i] if i >= 0 else 0

    def _index_statements(self) -> None:
        """Each statement's offsets and the indentation of its block, as libcst reads it: a block
        is indented by its first statement's line's leading whitespace (a form feed included)
        when that statement starts its own logical line; a body on its header's logical line
        (``if x: a``, ``if x: \\`` then ``a``) is in the header's block."""
        if self._statements is not None:
            return
        out: list[tuple[int, int, str]] = []
        if self.tree is not None:
            self._index_body(self.tree.body, "", None, out)
        out.sort(key=lambda t: t[0])
        self._statements = out
        self._statement_starts = [t[0] for t in out]

    def _index_body(self, body, outer: str, header, out: list) -> None:
        if not body:
            return
        indent = outer if header is not None and self._on_header_line(body[0], header) else None
        if indent is None:
            first = body[0]
            line = first.decorator_list[0].lineno if getattr(first, "decorator_list", None) else first.lineno
            text = self.line(line)
            indent = text[: len(text) - len(text.lstrip(" \t\f"))]
        starts = self.starts
        for stmt in body:
            s = starts[stmt.lineno - 1] + self.column(stmt.lineno, stmt.col_offset)
            e = starts[stmt.end_lineno - 1] + self.column(stmt.end_lineno, stmt.end_col_offset)
            out.append((s, e, indent))
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if inner:
                    self._index_body(inner, indent, stmt, out)
            for handler in getattr(stmt, "handlers", ()):
                self._index_body(handler.body, indent, handler, out)
            cases = getattr(stmt, "cases", None)
            if cases:
                # the cases are a block of their own, always on lines of their own
                text = self.line(cases[0].pattern.lineno)
                case_indent = text[: len(text) - len(text.lstrip(" \t\f"))]
                for case in cases:
                    self._index_body(case.body, case_indent, case.pattern, out)

    def _on_header_line(self, first, header) -> bool:
        """Whether statement ``first`` continues the logical line of ``header`` (a statement,
        handler or case pattern before it): written after the colon, or on a line joined to the
        previous one by a backslash (not one in a comment)."""
        if getattr(first, "decorator_list", None):
            return False  # a compound statement: on a line of its own
        line = first.lineno
        if self.line(line)[: self.column(line, first.col_offset)].strip(" \t\f"):
            return True
        above = self.line(line - 1)
        if not above.endswith("\\"):
            return False
        ls = self.starts[line - 2]
        return self.comment_start(ls, ls + len(above), self.offsets(header)[0]) < 0

    def indentation(self, offset: int) -> str:
        """The indentation of the block of the innermost statement around ``offset``: what libcst
        leaves off the lines of an expression of that statement that its brackets continue."""
        self._index_statements()
        statements = self._statements
        i = bisect.bisect_right(self._statement_starts, offset) - 1
        while i >= 0:
            _, e, indent = statements[i]
            if e >= offset:
                return indent
            i -= 1
        return ""

    def text(self, node, shared: tuple[int, int] | None = None) -> str:
        """libcst's text of an expression: with its own parentheses when it has any, verbatim but
        for the indentation ``indent`` of the enclosing block, which libcst leaves off the lines
        that continue the expression (it re-generates the node alone); else its range with the
        whitespace of several lines folded into single spaces.

        ``shared`` is a pair of parentheses that belong to the parent (a call of one argument)."""
        own = False
        paren = None
        if isinstance(node, (ast.Tuple, ast.GeneratorExp)):
            paren = self.parenthesised(node)
            if paren is not None and paren == shared:
                paren = None  # `f(x for x in y)`: the call's parentheses
        if paren is not None:
            own = True
            s, e = paren[0], paren[1] + 1
        else:
            s, e = self.offsets(node)
        src, n = self.source, len(self.source)
        while True:
            p = self.skip_back(s) - 1
            q = self.skip_forward(e)
            if p < 0 or q >= n or src[p] != "(" or src[q] != ")" or (p, q) == shared or self.closing(p) != q:
                break
            s, e = p, q + 1
            own = True
        if own:
            text = src[s:e]
            if "\n" in text or "\r" in text:
                indent = self.indentation(s)
                if indent:
                    text = _dedent_lines(text, indent)
            return text.strip()
        a, b = self.range_of(node)
        line, _ = self.position(a)
        end_line, _ = self.position(b)
        return " ".join(src[a:b].split()) if end_line > line else src[a:b]

    def call_parens(self, call: ast.Call) -> tuple[int, int] | None:
        e = self.offsets(call)[1]
        f_end = self.offsets(call.func)[1]
        p = self.skip_forward(self.skip_back(f_end))
        # the func's own closing parentheses come first: `(k[g])(x)`
        while p < e and self.source[p] == ")":
            p = self.skip_forward(p + 1)
        if p < e and self.source[p] == "(" and self.source[e - 1] == ")":
            return p, e - 1
        return None

    def single_string(self, node) -> bool:
        """Whether a string constant is one literal (libcst's ``SimpleString``), not several
        written side by side (``"a" "b"``, a ``ConcatenatedString``)."""
        s, e = self.offsets(node)
        i = s
        src = self.source
        while i < e and src[i] not in "'\"":
            i += 1  # the prefix (r, b, u...)
        return i < e and _string_end(src, i) >= e


def _string_end(src: str, i: int) -> int:
    """The offset after the string literal whose opening quote is at ``i``."""
    q = src[i]
    n = len(src)
    if src.startswith(q * 3, i):
        end = src.find(q * 3, i + 3)
        while end > 0 and _escaped(src, end):
            end = src.find(q * 3, end + 1)
        return n if end < 0 else end + 3
    j = i + 1
    while j < n:
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == q or c in "\r\n":
            return j + 1
        j += 1
    return n


def _dedent_lines(text: str, indent: str) -> str:
    """``text`` with ``indent`` taken off the start of every line after the first that begins with
    it, outside string literals; a line joined to the one above by a backslash is kept as written
    (libcst keeps such a join, and what follows it, as plain whitespace)."""
    out = []
    i = last = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            i = _string_end(text, i)
            continue
        if c == "#":
            while i < n and text[i] not in "\r\n":
                i += 1
            continue
        if c == "\\" and i + 1 < n and text[i + 1] in "\r\n":
            i += 3 if text.startswith("\r\n", i + 1) else 2
            continue
        if c in "\r\n":
            i += 2 if text.startswith("\r\n", i) else 1
            if text.startswith(indent, i):
                out.append(text[last:i])
                i += len(indent)
                last = i
            continue
        i += 1
    out.append(text[last:])
    return "".join(out)


def _escaped(src: str, at: int) -> bool:
    k = at - 1
    count = 0
    while k >= 0 and src[k] == "\\":
        count += 1
        k -= 1
    return count % 2 == 1


def _subscript_elements(node: ast.Subscript, src: _Source) -> list:
    """The elements of a subscript as libcst splits them: ``x[a, b:c]`` has two, ``x[(a, b)]`` one."""
    s = node.slice
    if isinstance(s, ast.Tuple) and not src.bracketed(s):
        return [e.value if isinstance(e, ast.Starred) else e for e in s.elts]
    return [s]


def _sub_index(node: ast.Subscript, src: _Source):
    """The index of ``x[i]`` (one element, not a slice), else None."""
    elements = _subscript_elements(node, src)
    if len(elements) == 1 and not isinstance(elements[0], ast.Slice):
        return elements[0]
    return None


def _suite_length(fn, src: _Source) -> int:
    """The number of statements of a ``def`` body as libcst counts them: statements on one line
    joined by ``;`` count once, except in a body written on the ``def``'s own line."""
    body = fn.body
    out = 1
    for prev, cur in itertools.pairwise(body):
        if not (isinstance(prev, _SMALL) and isinstance(cur, _SMALL) and prev.end_lineno == cur.lineno):
            out += 1
    if out == len(body):
        return out
    first = body[0]
    if src.line(first.lineno).encode("utf-8")[: first.col_offset].strip():
        return len(body)  # `def f(x): a; return b`: the body follows the colon, not indentation
    return out


# ----------------------------------------------------------------------------- the collector


class _Collector:
    def __init__(self, source: str, module_name: str | None, is_package: bool, tree: ast.Module | None = None):
        self.src = _Source(source, tree)
        self._tests_contiguity = "is_contiguous" in source  # else no function binds a flag
        self.module_name = module_name
        self.is_package = is_package
        self.info = LaunchInfo()
        self._conflicting_aliases: set[str] = set()
        self._resolving: set[str] = set()
        self.collecting = False  # the first passes: gather call-site facts only, no launches
        self.call_lines: list[int] | None = None  # while collecting: lines calling a function of interest
        self._callers: set[str] = set()
        self._class: str | None = None
        self.signatures: dict[str, list[str]] = {}  # module function -> parameter names in order
        self.call_facts: dict[str, dict[str, list]] = {}  # function -> parameter -> facts at each call
        self.entry: dict[str, dict[str, _Tensor]] = {}  # function -> parameter -> facts at entry
        self.saved: dict[str | None, list] = {}  # class -> facts of ctx.save_for_backward(...) arguments
        self._returns: list | None = None  # while summarising a function: facts of its returns
        self.summaries: dict[str, _Tensor] = {}  # module function -> what every return of it is
        self.hint_lines: list[int] | None = None  # lines holding `](` / `.run(`; None: look everywhere
        self._shared: tuple[int, int] | None = None  # the parentheses of the launch being read
        self._fn: str | None = None
        self._guarded = False
        self._params: frozenset = frozenset()  # the current function's parameters
        self._public = False  # the current function is a public entry point
        self._depth = 0  # functions the current one is nested in
        self._class_bases: tuple[str, ...] = ()
        self._tensor_names: frozenset = frozenset()  # names it uses as tensors
        self._flags: dict = {}  # names bound once to a contiguity test (_contiguity_flags)
        self.defs: dict[str, ast.FunctionDef] = {}  # module functions by name
        self._posts: dict[str, list | None] = {}  # module function -> what it checks before returning a value
        self._expanding = 0  # predicate functions being read into a test (a bound on their nesting)

    # -- spans and text

    def span(self, node) -> Span:
        return self.src.span(node)

    def text(self, node) -> str:
        d = dotted(node)
        if d is not None:
            return d
        return self.src.text(node, self._shared)

    # -- imports and module-level aliases

    def _resolve_relative(self, relative: int, name: str) -> str:
        if not relative:
            return name
        if self.module_name is None:
            return "." * relative + name
        parts = self.module_name.split(".")
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
            package = parts
        else:
            package = parts if self.is_package else parts[:-1]
        base = package[: len(package) - (relative - 1)] if relative > 1 else package
        return ".".join([*base, name] if name else base)

    def add_import(self, stmt) -> None:
        imports = self.info.imports
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname is not None:
                    imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    imports.setdefault(head, head)
        elif isinstance(stmt, ast.ImportFrom):
            if any(a.name == "*" for a in stmt.names):
                return
            base = self._resolve_relative(stmt.level or 0, stmt.module or "")
            for alias in stmt.names:
                local = alias.asname if alias.asname is not None else alias.name
                full = f"{base}.{alias.name}" if base and not base.endswith(".") else f"{base}{alias.name}"
                imports[local] = full

    def add_alias(self, target: str, value) -> None:
        held = self._held_kernel(value)
        if held is None or held == target:
            return
        if target in self._conflicting_aliases:
            return
        old = self.info.kernel_aliases.get(target)
        if old is not None and old != held:
            del self.info.kernel_aliases[target]
            self._conflicting_aliases.add(target)
            return
        self.info.kernel_aliases[target] = held

    @staticmethod
    def _held_kernel(value) -> str | None:
        """``_k`` for ``_k``, ``triton.jit(_k)``, ``triton.autotune(...)(_k)``, ``jit(**kw)(_k)``."""
        d = dotted(value)
        if d is not None:
            return d
        if isinstance(value, ast.Call):
            pos = _positional(value)
            if len(pos) == 1 and _nargs(value) == 1:
                func = value.func
                name = dotted(func.func) if isinstance(func, ast.Call) else dotted(func)
                if name and name.split(".")[-1] in {"jit", "autotune", "heuristics", *_KERNEL_WRAPPERS}:
                    return dotted(pos[0])
        return None

    def module_level(self, body) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.add_import(stmt)
            elif isinstance(stmt, ast.Assign):
                if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self.add_alias(stmt.targets[0].id, stmt.value)
            elif isinstance(stmt, ast.If):
                self.module_level(stmt.body)
                self.module_level(stmt.orelse)  # an `elif` is an If there, as libcst's orelse If
            elif isinstance(stmt, ast.Try):
                self.module_level(stmt.body)
                other = []
                for h in stmt.handlers:
                    other.extend(h.body)
                other.extend(stmt.orelse)
                self.module_level(other)

    # -- functions

    def summarise(self, body) -> None:
        """Module functions every return of which is a contiguous tensor (``alloc_output(x)``
        returning ``x.new_empty(x.shape)`` or ``torch.empty_like(x, memory_format=...)``: a call of
        one is an allocation; ``dim_compress`` returning ``x.permute(...).contiguous()``). Only small
        functions, so that this stays cheap."""
        for stmt in body:
            if not isinstance(stmt, _DEFS) or len(stmt.body) > 12 and _suite_length(stmt, self.src) > 12:
                continue
            self._returns = []
            self._fn, self._guarded = stmt.name, False
            exits = self.block(stmt.body, _State(), False)
            returns, self._returns = self._returns, None
            if returns and exits and all(r is not None and r.contiguous for r in returns):
                fresh = all(r.fresh for r in returns)
                self.summaries[stmt.name] = _Tensor(contiguous=True, fresh=fresh)

    def functions(self, body, scan: bool) -> None:
        """Walk defs (top level, in classes, nested) and analyse those that may hold a launch."""
        for stmt in body:
            if isinstance(stmt, _DEFS):
                self.function(stmt, scan)
            elif isinstance(stmt, ast.ClassDef):
                saved_class, self._class = self._class, stmt.name
                saved_bases, self._class_bases = self._class_bases, tuple(dotted(b) or "" for b in stmt.bases)
                self.functions(stmt.body, scan)
                self._class, self._class_bases = saved_class, saved_bases
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.AsyncWith)):
                self.functions(stmt.body, scan)

    def function(self, fn, scan: bool) -> None:
        if not scan:
            return
        decorators = [
            (dotted(d.func if isinstance(d, ast.Call) else d) or "").split(".")[-1] for d in fn.decorator_list
        ]
        if any(name in ("jit", "autotune", "heuristics") for name in decorators):
            return  # a kernel: launches nothing
        lines = self.call_lines if self.collecting else self.hint_lines
        if lines is not None:
            if not _any_between(lines, fn.lineno, fn.end_lineno):
                if not self.collecting:
                    self._self_aliases(fn.body)
                return
            if self.collecting:
                self._callers.add(fn.name)
        self._fn = fn.name
        self._guarded = "stride_guard" in decorators
        self._public = self._depth == 0 and public_entry(fn.name, self._class, self._class_bases, decorators)
        state = _State()
        params = _param_names(fn)
        self._params = frozenset(params)
        self._tensor_names = self.tensor_names(fn)
        self._flags = _contiguity_flags(fn) if self._tests_contiguity else {}
        if any("contiguous" in d.lower() or d == "input_guard" for d in decorators):
            # A decorator that makes every tensor argument contiguous (`@input_guard`,
            # `@ensure_contiguous`): the parameters are contiguous at entry, except those it is
            # told to leave alone (`@input_guard(no_guard_contiguous=["x"])`).
            exempt = _exempted(fn.decorator_list)
            for name in params:
                if name not in exempt:
                    state.tensors[name] = _Tensor(contiguous=True, family=name)
        for name, facts in self.entry.get(fn.name, {}).items():
            state.tensors[name] = facts
        self.block(fn.body, state, scan and not self.collecting)

    def tensor_names(self, fn) -> frozenset:
        """Names the function uses as tensors: parameters annotated ``torch.Tensor`` (or
        ``Optional[...]`` of it), names whose ``.stride(``, ``.shape``, ``.size(``, ``.dtype``... it
        reads (a regular expression over its text: cheap, and a name too many only says a
        tensor is passed where one is)."""
        a = fn.args
        out = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)
               if x.annotation is not None and "Tensor" in (self.src.text(x.annotation) or "")}
        text = "\n".join(self.src.line(n) for n in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1))
        out.update(_TENSOR_USE.findall(text))
        return frozenset(out)

    def may_launch(self, node) -> bool:
        """Whether ``node``'s lines hold a ``](`` or ``.run(`` (a bisection on sorted lines)."""
        if self.hint_lines is None:
            return True
        return _any_between(self.hint_lines, node.lineno, node.end_lineno)

    def _self_aliases(self, stmts) -> None:
        """``self.kernel = _kernel`` in a method without launches (``__init__``)."""
        for stmt in stmts:
            if isinstance(stmt, ast.Assign):
                if len(stmt.targets) == 1:
                    d = dotted(stmt.targets[0])
                    if d is not None and d.startswith("self."):
                        self.add_alias(d, stmt.value)
            elif isinstance(stmt, (ast.If, ast.With, ast.AsyncWith)):
                self._self_aliases(stmt.body)

    def block(self, stmts, state: _State, scan: bool) -> bool:
        """Walk statements in order, updating ``state``; True when the block always exits."""
        for stmt in stmts:
            if isinstance(stmt, _SMALL):
                self.small(stmt, state, scan and self.may_launch(stmt))
                if isinstance(stmt, _EXITS):
                    return True
            elif isinstance(stmt, ast.If):
                self.if_(stmt, state, scan)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                if isinstance(stmt, ast.While):
                    if scan:
                        self.find_launches(stmt.test, state)
                else:
                    for name in _target_names(stmt.target):
                        state.kill(name)
                    if scan:
                        self.find_launches(stmt.iter, state)
                inner = state.copy()
                self.block(stmt.body, inner, scan)
                merged = _State.meet([state, inner])
                _assign_state(state, merged)
                if stmt.orelse:
                    self.block(stmt.orelse, state, scan)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    if scan:
                        self.find_launches(item.context_expr, state)
                    if item.optional_vars is not None:
                        for name in _target_names(item.optional_vars):
                            state.kill(name)
                if self.block(stmt.body, state, scan):
                    return True
            elif isinstance(stmt, ast.Try):
                self.block(stmt.body, state, scan)
                for h in stmt.handlers:
                    self.block(h.body, state.copy(), scan)
                if stmt.orelse:
                    self.block(stmt.orelse, state, scan)
                if stmt.finalbody:
                    self.block(stmt.finalbody, state, scan)
            elif isinstance(stmt, _DEFS):
                saved = (self._fn, self._guarded, self._public, self._params, self._tensor_names, self._flags)
                self._depth += 1
                self.function(stmt, scan)
                self._depth -= 1
                self._fn, self._guarded, self._public, self._params, self._tensor_names, self._flags = saved
                state.kill(stmt.name)
            elif isinstance(stmt, ast.ClassDef):
                self.functions(stmt.body, scan)
        return False

    def if_(self, stmt: ast.If, state: _State, scan: bool) -> None:
        if scan:
            self.find_launches(stmt.test, state)
        then_state = state.copy()
        self.assume(stmt.test, then_state, truth=True)
        then_exits = self.block(stmt.body, then_state, scan)
        else_state = state.copy()
        self.assume(stmt.test, else_state, truth=False)
        if then_exits:
            # `if <bad>: raise`: what follows runs only when the test was false.
            self.record_checks(stmt.test, else_state, truth=False)
        # An `elif` (an If alone in orelse) never counts as exiting, as an `else:` holding only an
        # `if` does not: neither ends the block as a whole.
        else_exits = self.block(stmt.orelse, else_state, scan) if stmt.orelse else False
        live = [s for s, ex in ((then_state, then_exits), (else_state, else_exits)) if not ex]
        merged = _State.meet(live) if live else state
        if len(live) == 2:
            for arm, truth in ((then_state, True), (else_state, False)):
                _contiguous_when(merged, arm, _condition_key(stmt.test, truth))
        _assign_state(state, merged)

    def assume(self, test, state: _State, truth: bool) -> None:
        """Facts implied by ``test`` being ``truth`` (``t.is_contiguous()``, ``is_strictly_contiguous(t)``
        and their negations; ``all(t.is_contiguous() for t in (a, b))``; ``x is None or
        x.is_contiguous()``; a predicate function of the module, by the checks it makes)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            self.assume(test.operand, state, not truth)
            return
        if isinstance(test, ast.Name) and test.id in self._flags:
            # `needs_tmp = not out.is_contiguous() or ...` once, then `if needs_tmp:`
            self.assume(self._flags[test.id], state, truth)
            return
        if isinstance(test, ast.BoolOp):
            if truth and isinstance(test.op, ast.And) or not truth and isinstance(test.op, ast.Or):
                for v in test.values:
                    self.assume(v, state, truth)
            else:
                rest = _none_guarded(test, truth)
                if rest is not None:
                    # `x is None or x.is_contiguous()`: where x is a tensor at all, the rest holds
                    # (where it is None, nothing reaches an address).
                    self.assume(rest, state, truth)
                elif truth and isinstance(test.op, ast.Or):
                    self._outer_packed(test, state)
            return
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_none(test.comparators[0])
                and isinstance(test.ops[0], (ast.Is, ast.IsNot))):
            if truth == isinstance(test.ops[0], ast.Is):
                name = dotted(test.left)
                if name is not None:
                    # On a path where `t is None`, None reaches no address: as after `t = None`, the
                    # path takes nothing away from what the other path establishes (`if t is not
                    # None: assert t.shape[1] == n` checks `t` wherever it is a tensor).
                    state.tensors[name] = _Tensor(contiguous=True, fresh=True, family=name)
                    state.vetted[name] = _ANY
                    state.units[name] = _ALL_DIMS
                    state.known[name] = _ALL_DIMS
                    state.same[name] = _ALL_DIMS
            elif isinstance(test.left, ast.Call):
                # `helper(x, n) is not None`: what the helper checks before it returns a value.
                expanded = self.expand(test.left, True)
                if expanded is not None:
                    self.assume(expanded, state, True)
            return
        if isinstance(test, ast.Call):
            expanded = self.expand(test, truth)
            if expanded is not None:
                self.assume(expanded, state, truth)
                return
        if truth and isinstance(test, ast.Call):
            name = _contiguity_checked(test)
            if name is not None:
                old = state.tensors.get(name, _Tensor(family=name))
                state.tensors[name] = replace(old, contiguous=True)

    def _outer_packed(self, test: ast.BoolOp, state: _State) -> None:
        """``t.is_contiguous() or t.mT.is_contiguous()`` holding: t is packed, or packed with its
        last two dimensions swapped. Either way each outer dimension's stride is the product of
        the extents after it (a batch of [N, K] matrices is N*K apart in both layouts)."""
        tensor = None
        for v in test.values:
            if not (isinstance(v, ast.Call) and not _nargs(v) and (m := _method(v)) is not None
                    and m[1] == "is_contiguous"):
                return
            node = m[0]
            if isinstance(node, ast.Attribute) and node.attr == "mT":
                node = node.value
            elif isinstance(node, ast.Call) and (mt := _method(node)) is not None and mt[1] == "transpose" \
                    and sorted(_int_literal(a) for a in node.args if _int_literal(a) is not None) == [-2, -1] \
                    and len(node.args) == 2:
                node = mt[0]
            name = self.tensor_name(node)
            if name is None or tensor not in (None, name):
                return
            tensor = name
        facts = state.tensors.get(tensor)
        rank = facts.ndim if facts is not None else None
        if rank is None:
            rank = next((o.ndim for o in state.ints.values()
                         if o.tensor == tensor and o.kind is OriginKind.SHAPE and o.ndim), None)
        if rank is None or rank < 3:
            return
        for d in range(rank - 2):
            key = product_key([f"shape:{tensor}:{j}" for j in range(d + 1, rank)])
            _add_known(state, tensor, d, key)
            _add_known(state, tensor, d - rank, key)

    # -- tests written through a helper or a generator

    def expand(self, call: ast.Call, truth: bool):
        """What ``call`` being ``truth`` says, as a plain test, or None:

        * ``all(<test of t> for t in (a, b, c))`` is the test for each of a, b, c (``and``);
          ``any(...)`` is their ``or``; either way round;
        * a function of this module called with plain arguments (``can_use_native(x, w, d)``,
          ``_token_stride(x, d) is not None``), when true: the tests it passes before it returns a
          value (each ``if <bad>: return None/False`` or ``raise``, each ``assert``, the terms of a
          returned ``and``), its parameters replaced by the arguments. Only what holds when it
          returns a value is known, so it is never read when false."""
        fname = dotted(call.func)
        if fname in ("all", "any") and len(call.args) == 1 and not call.keywords:
            gen = call.args[0]
            if not isinstance(gen, (ast.GeneratorExp, ast.ListComp)) or len(gen.generators) != 1:
                return None
            comp = gen.generators[0]
            if comp.ifs or comp.is_async or not isinstance(comp.target, ast.Name) \
                    or not isinstance(comp.iter, (ast.Tuple, ast.List)) or not comp.iter.elts \
                    or any(isinstance(e, ast.Starred) for e in comp.iter.elts):
                return None
            parts = [_substitute(gen.elt, {comp.target.id: e}) for e in comp.iter.elts]
            return ast.BoolOp(op=ast.And() if fname == "all" else ast.Or(), values=parts)
        if not truth or fname is None or "." in fname or self._expanding > 2:
            return None
        conds = self.post_conditions(fname)
        if not conds:
            return None
        fn = self.defs[fname]
        params = _param_names(fn)
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) \
                or len(call.args) > len(params):
            return None
        mapping = dict(zip(params, call.args))
        mapping.update((k.arg, k.value) for k in call.keywords if k.arg in params)
        known = [c for c in conds if _free_names(c) & set(params) <= set(mapping)]
        if not known:
            return None
        # An opaque last term: a false call says nothing (`not (a and b and ?)` decides no term).
        self._expanding += 1
        try:
            return ast.BoolOp(op=ast.And(), values=[_substitute(c, mapping) for c in known] + [ast.Name(id="?")])
        finally:
            self._expanding -= 1

    def post_conditions(self, name: str) -> list:
        """The tests module function ``name`` has passed whenever it returns a value other than
        None or False (read from its top-level statements, up to the first one that may return
        otherwise); only tests of its parameters and module names."""
        got = self._posts.get(name)
        if got is not None or name in self._posts:
            return got or []
        self._posts[name] = None
        fn = self.defs.get(name)
        if fn is None:
            return []
        conds = []
        for stmt in fn.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # the docstring
            if isinstance(stmt, ast.If) and not stmt.orelse and _fails(stmt.body):
                conds.append(ast.UnaryOp(op=ast.Not(), operand=stmt.test))
            elif isinstance(stmt, ast.Assert):
                conds.append(stmt.test)
            elif isinstance(stmt, ast.Return):
                v = stmt.value
                if isinstance(v, ast.BoolOp) and isinstance(v.op, ast.And):
                    conds.extend(v.values)
                elif isinstance(v, (ast.Compare, ast.UnaryOp, ast.Call)):
                    conds.append(v)
                break
            elif not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Expr, ast.Pass)):
                break  # a compound statement may return before the rest
        assigned = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        params = set(_param_names(fn))
        conds = [c for c in conds if not (_free_names(c) & (assigned - params))]
        self._posts[name] = conds
        return conds

    def record_checks(self, test, state: _State, truth: bool = True) -> None:
        """Width checks of ``test`` known to be ``truth`` (an assert's test: True; the test of an
        ``if`` whose body raises: False). Only comparisons that hold on their own count: each
        conjunct of an ``and`` that holds, not the arms of an ``or``."""
        for comp, holds in _comparisons(test, truth, self.expand):
            sides = [comp.left, *comp.comparators]
            refs = [self.size_ref(s, state) for s in sides]
            span = self.span(comp)
            for i, ref in enumerate(refs):
                if ref is None:
                    continue
                others = [self.text(s) for j, s in enumerate(sides) if j != i]
                tensor, dim = ref
                self._add_check(state, WidthCheck(tensor, dim, " ".join(others), span))
            if len(sides) == 2 and isinstance(comp.ops[0], ast.Eq if holds else ast.NotEq):
                self._record_rank(sides, state, span)
                self._record_unit_stride(sides, state)
                self._record_strides(sides, state)
                # `list(t.shape) != [N, C, W]: raise`, `tuple(t.shape[1:]) == expect`: each listed
                # dimension is checked against its element.
                for a, b in (sides, sides[::-1]):
                    ref = self.shape_ref(a)
                    if ref is None:
                        continue
                    for dim, against in self._listed_dims(ref[1], b, state):
                        self._add_check(state, WidthCheck(ref[0], dim, against, span))

    def _record_rank(self, sides, state: _State, span) -> None:
        """``t.ndim == 2`` / ``t.dim() == 2`` / ``len(t.stride()) == 2`` known to hold: ``t``'s rank,
        kept in ``state.ints`` under ``ndim:t`` (no name has a colon) as a shape origin of ``t``."""
        for a, b in (sides, sides[::-1]):
            k = _int_literal(b)
            if k is None or k < 1:
                continue
            node = None
            if isinstance(a, ast.Attribute) and a.attr == "ndim":
                node = a.value
            elif isinstance(a, ast.Call) and not _nargs(a) and isinstance(a.func, ast.Attribute) \
                    and a.func.attr in ("dim", "ndimension"):
                node = a.func.value
            elif isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "len" and len(a.args) == 1:
                ext = _extents_of(a.args[0])  # `len(t.shape)`, `len(t.size())`, `len(t.stride())`
                node = ext[0] if ext is not None else None
            tensor = self.tensor_name(node) if node is not None else None
            if tensor is not None:
                state.ints[f"ndim:{tensor}"] = ArgOrigin(OriginKind.SHAPE, self.text(a), span, tensor=tensor, ndim=k)

    def _record_unit_stride(self, sides, state: _State) -> None:
        """``t.stride(k) == 1`` / ``t.stride()[k] == 1`` known to hold: dimension ``k`` of ``t`` is unit-stride."""
        for a, b in (sides, sides[::-1]):
            if _int_literal(b) != 1:
                continue
            o = self.origin(a, state)
            if o.kind is OriginKind.STRIDE and o.tensor is not None and o.dim is not None:
                known = state.units.get(o.tensor, frozenset())
                if known != _ALL_DIMS:
                    state.units[o.tensor] = known | {o.dim}

    def _record_strides(self, sides, state: _State) -> None:
        """``a.stride(k) == v`` known to hold: stride ``k`` of ``a`` is ``v`` (another tensor's
        stride, a size, a literal); ``a.stride() == b.stride()``: the same strides throughout;
        ``a.stride()[:2] == b.stride()[:2]`` / ``a.stride() == (n, 1)``: dimension by dimension."""
        runs = [self._stride_run(s) for s in sides]
        for (a, b), (ra, rb) in ((sides, runs), (sides[::-1], runs[::-1])):
            if ra is None:
                o = self.origin(a, state)
                if o.kind is OriginKind.STRIDE and o.tensor is not None and o.dim is not None and not o.factors:
                    key = value_key(self.origin(b, state))
                    if key is not None:
                        _add_known(state, o.tensor, o.dim, key)
                continue
            tensor, start, stop, via = ra
            if via is False:
                continue  # a function of the module that does not return its argument's strides
            # Through an imported function (`safe_stride(k, 4)`), the fact is kept with the
            # function's name (`stride:k:0@pkg.utils.safe_stride`, `k@pkg...`), for the tree to
            # keep where that function returns its argument's strides (`Tree._verify_strides`).
            mark = via if via and via.startswith("@") else ""
            if rb is not None:
                other, ostart, ostop, ovia = rb
                if other == tensor or ovia != via:
                    continue
                if start == ostart == 0 and stop is None and ostop is None:
                    _add_same(state, tensor, other, mark)
                elif stop is not None and ostop is not None and stop - start == ostop - ostart:
                    for i in range(stop - start):
                        _add_known(state, tensor, start + i, f"stride:{other}:{ostart + i}{mark}")
            elif via:
                continue
            elif isinstance(b, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in b.elts):
                for i, e in enumerate(b.elts):
                    if stop is not None and start + i >= stop:
                        break
                    key = value_key(self.origin(e, state))
                    if key is not None:
                        _add_known(state, tensor, start + i, key)

    def _stride_run(self, node) -> tuple[str, int, int | None, str | bool | None] | None:
        """(tensor, first dim, end dim or None, via) for ``t.stride()``, ``tuple(t.stride())`` and
        ``t.stride()[a:b]`` (literal bounds, from the front); also for ``f(t, ...)`` and its
        slices, a function given the tensor first: ``via`` is then the imported function's full
        name, None for a function of this module that returns ``t.stride()`` (see
        :func:`returns_strides`), False for one that does not. Two runs through a function
        compare the strides only when its other arguments are the same (``via`` then holds them)."""
        node = _unwrap_sequence(node)
        start, stop = 0, None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            sl = node.slice
            start = _int_literal(sl.lower) if sl.lower is not None else 0
            stop = _int_literal(sl.upper) if sl.upper is not None else None
            if start is None or start < 0 or sl.step is not None or (sl.upper is not None and (stop is None or stop < 0)):
                return None
            node = node.value
        if isinstance(node, ast.Call) and not _nargs(node) and (m := _method(node)) is not None and m[1] == "stride":
            t = self.tensor_name(m[0])
            if t is not None:
                return t, start, stop, None
        if isinstance(node, ast.Call) and node.args and not any(isinstance(a, ast.Starred) for a in node.args) \
                and all(k.arg for k in node.keywords):
            fname = dotted(node.func)
            t = _name(node.args[0])
            if fname is None or t is None:
                return None
            rest = ", ".join([self.text(a) for a in node.args[1:]]
                             + [f"{k.arg}={self.text(k.value)}" for k in node.keywords])
            head, _, tail = fname.partition(".")
            if fname in self.defs:
                return t, start, stop, f"={fname}({rest})" if returns_strides(self.defs[fname]) else False
            if head in self.info.imports:
                full = self.info.imports[head] + ("." + tail if tail else "")
                return t, start, stop, f"@{full}({rest})"
        return None

    @staticmethod
    def _add_check(state: _State, check: WidthCheck) -> None:
        state.checks[(check.tensor, check.dim, check.against, check.span)] = check
        state.vetted[check.tensor] = _ANY

    def shape_ref(self, node) -> tuple[str, int] | None:
        """(tensor, first dim) when ``node`` is a run of a tensor's extents: ``t.shape``, ``t.size()``,
        ``t.shape[a:]``, any of them in ``list(...)``/``tuple(...)``/``torch.Size(...)``."""
        if isinstance(node, ast.Call) and (dotted(node.func) or "") in ("list", "tuple", "torch.Size") \
                and _nargs(node) == 1 and not node.keywords:
            node = _first_arg(node)
        start = 0
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            sl = node.slice
            start = _int_literal(sl.lower) if sl.lower is not None else 0
            if start is None or sl.upper is not None or sl.step is not None:
                return None
            node = node.value
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            name = self.tensor_name(node.value)
        elif isinstance(node, ast.Call) and not _nargs(node) and (m := _method(node)) is not None and m[1] == "size":
            name = self.tensor_name(m[0])
        else:
            return None
        return (name, start) if name else None

    def _listed_dims(self, start: int, node, state: _State):
        """(dim, text) for each element of the tuple/list ``node`` (a literal, or a name bound to
        one on every path: an element counts where every path has the same text), its first
        element at dimension ``start``."""
        if isinstance(node, (ast.Tuple, ast.List)):
            options = (node,)
        else:
            name = _name(node)
            options = state.seq_paths.get(name, ()) if name is not None else ()
        if not options:
            return
        texts = []
        for seq in options:
            if any(isinstance(e, ast.Starred) for e in seq.elts):
                return  # positions after a starred element are unknown
            texts.append([self.text(e) for e in seq.elts])
        if start < 0 and len({len(t) for t in texts}) != 1:
            return  # counted from the end, positions differ with the length
        for i in range(min(len(t) for t in texts)):
            if len({t[i] for t in texts}) == 1:
                yield start + i, texts[0][i]

    def size_ref(self, node, state: _State) -> tuple[str, int | None] | None:
        """(tensor, dim) when ``node`` is a tensor's extent (``t.size(-1)``, ``t.shape``)."""
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            name = self.tensor_name(node.value)
            return (name, None) if name else None
        o = self.origin(node, state)
        if o.kind is OriginKind.SHAPE and o.tensor is not None:
            return o.tensor, o.dim
        return None

    # -- statements

    def small(self, small, state: _State, scan: bool) -> None:
        if isinstance(small, (ast.Import, ast.ImportFrom)):
            self.add_import(small)
            return
        if isinstance(small, ast.Assert):
            test = small.test
            if isinstance(test, ast.IfExp):
                # `assert <check> if <cond> else True`: the check holds where the condition does.
                for body, other, truth in ((test.body, test.orelse, True), (test.orelse, test.body, False)):
                    if isinstance(other, ast.Constant) and other.value is True:
                        arm = state.copy()
                        self.assume(body, arm, truth=True)
                        _contiguous_when(state, arm, _condition_key(test.test, truth))
                return
            self.assume(test, state, truth=True)
            self.record_checks(test, state)
            return
        if scan:
            self.find_launches(small, state)
        if self.collecting:
            value = getattr(small, "value", None)
            if isinstance(value, ast.Call):
                self.record_call(value, state)
        if isinstance(small, ast.Return) and self._returns is not None:
            self._returns.append(self.tensor_facts(small.value, state) if small.value is not None else None)
        if isinstance(small, ast.Assign):
            value = small.value
            for target in small.targets:
                self.assign(target, value, state)
        elif isinstance(small, ast.AnnAssign) and small.value is not None:
            self.assign(small.target, small.value, state)
        elif isinstance(small, ast.AugAssign):
            for name in _target_names(small.target):
                if name in state.tensors and name not in state.ints:
                    continue  # `dh0 += ...` on a tensor works in place: same storage, same layout
                state.kill(name)
        elif isinstance(small, ast.Expr) and isinstance(small.value, ast.Call):
            call = small.value
            # torch._check(t.is_contiguous()) / torch._check(cond, msg)
            if (dotted(call.func) or "").endswith("_check") and _nargs(call):
                first = _first_arg(call)
                self.assume(first, state, truth=True)
                self.record_checks(first, state)
            elif (dotted(call.func) or "").split(".")[-1] == "assert_size_stride" and len(call.args) == 3:
                self.assert_size_stride(*call.args, state)

    def assert_size_stride(self, tensor, size, stride, state: _State) -> None:
        """Inductor's ``assert_size_stride(t, size, stride)``: ``t.shape == size`` (each dimension
        checked against its element) and ``t.stride() == stride``; packed strides make t contiguous."""
        name = self.tensor_name(tensor)
        if name is None:
            return
        shape = ast.copy_location(ast.Attribute(value=tensor, attr="shape", ctx=ast.Load()), tensor)
        test = ast.copy_location(ast.Compare(left=shape, ops=[ast.Eq()], comparators=[size]), size)
        ast.fix_missing_locations(test)
        self.record_checks(test, state)
        strides, packed = self.fixed_strides(size, stride, state)
        for d, k in strides:
            _add_known(state, name, d, k)
        for d, k in strides:
            if k == "1":
                got = state.units.get(name, frozenset())
                if got != _ALL_DIMS:
                    state.units[name] = got | {d}
        if packed:
            old = state.tensors.get(name, _Tensor(family=name))
            state.tensors[name] = replace(old, contiguous=True)

    def record_call(self, call: ast.Call, state: _State) -> None:
        """Facts of the tensors a module function is called with; ``ctx.save_for_backward(...)``."""
        fname = dotted(call.func)
        if fname is None:
            return
        if fname.endswith(".save_for_backward"):
            self.saved[self._class] = [
                None if a.star else self.tensor_facts(a.value, state) for a in _args(call)
            ]
            return
        params = self.signatures.get(fname)
        if params is None:
            return
        sites = self.call_facts.setdefault(fname, {})
        bound: dict[str, _Tensor | None] = {}
        for i, a in enumerate(_args(call)):
            if a.star:
                return  # positions unknown
            if a.keyword is not None:
                bound[a.keyword] = self.tensor_facts(a.value, state)
            elif i < len(params):
                bound[params[i]] = self.tensor_facts(a.value, state)
        for p in params:
            sites.setdefault(p, []).append(bound.get(p))

    def derive_entry(self) -> dict[str, dict[str, _Tensor]]:
        """A parameter is contiguous at entry when every call in the module passes a contiguous tensor."""
        entry: dict[str, dict[str, _Tensor]] = {}
        for fname, sites in self.call_facts.items():
            for p, facts in sites.items():
                if facts and all(f is not None and f.contiguous for f in facts):
                    entry.setdefault(fname, {})[p] = _Tensor(contiguous=True, family=p)
        return entry

    def assign(self, target, value, state: _State) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, value, state)
            return
        if isinstance(target, ast.Attribute):
            d = dotted(target)
            if d is not None and d.startswith("self."):
                self.add_alias(d, value)
            return
        if not isinstance(target, ast.Name):
            return
        name = target.id
        facts = self.tensor_facts(value, state)
        origin = self.origin(value, state)
        seq = value if isinstance(value, (ast.Tuple, ast.List, ast.Dict, ast.Lambda)) else None
        if isinstance(value, ast.Call) and (dotted(value.func) or "").split(".")[-1] in ("dict", "TensorDescriptor"):
            seq = value
        if _extents_of(value) is not None:
            seq = value  # `s = t.shape`: `s[2] * s[3]` are t's extents
        held = self._held_kernel(value)
        src = _name(value) if not _is_none(value) else None
        src_vetted = state.vetted.get(src, frozenset()) if src else None
        # What a view or a conditional covers, judged before `name` is rebound (`y = y.view(...)`).
        covered: frozenset[str] = frozenset()
        if isinstance(value, ast.Call) and (m := _method(value)) is not None and m[1] in _ANY_VIEW:
            covered = _ANY if self._allocated_view(value, m, state) else covered
        elif isinstance(value, ast.IfExp):
            # `torch.empty_like(q) if not inplace else q`: what both arms cover.
            a, b = self._vetting(value.body, name, state), self._vetting(value.orelse, name, state)
            covered = _intersect(a, b, _ANY)
        state.kill(name)
        if facts is None and isinstance(value, ast.Call) and origin.kind is OriginKind.OTHER:
            facts = _Tensor(family=name, opaque=True)
        if _is_none(value):
            # `dz = None` on the other arm of an allocation: None reaches no address, so it
            # takes nothing away from what the allocating arm establishes.
            facts = _Tensor(contiguous=True, fresh=True, family=name)
        if facts is not None:
            if facts.strides and any(_key_mentions(k, name) for _, k in facts.strides):
                # `b = torch.empty(b.shape[1], k).T`: the old `b`'s extent, not the new one's
                facts = replace(facts, strides=frozenset(p for p in facts.strides if not _key_mentions(p[1], name)))
            state.tensors[name] = facts
            if facts.fresh:
                state.vetted[name] = _ANY
        elif src is not None and src != name and src not in state.ints:
            # `dX = dY`: the same tensor under another name (an in-place launch).
            state.tensors[name] = _Tensor(family=self.family(src, state))
        if src is not None and src != name and src not in state.ints:
            fam = self.family(src, state)
            state.vetted[name] = _ANY if src_vetted == _ANY else src_vetted | {src, fam}
        elif covered and name not in state.vetted:
            state.vetted[name] = covered
        if origin.kind in (OriginKind.SHAPE, OriginKind.STRIDE, OriginKind.NUMEL, OriginKind.PRODUCT,
                           OriginKind.LITERAL):
            state.ints[name] = origin
        if seq is not None:
            state.seqs[name] = seq
        if isinstance(value, (ast.Tuple, ast.List)):
            state.seq_paths[name] = (value,)
        if held is not None and held != name:
            state.aliases[name] = state.aliases.get(held, held)

    def _allocated_view(self, call: ast.Call, method: tuple, state: _State) -> bool:
        """Whether ``call`` (``base.method(...)``, a view) covers what an allocation covers:
        ``y.view(-1, N)`` of an allocated (or checked) ``y``, ``y.as_strided(y.size(), ...)``, or
        any view of a tensor allocated in the same expression
        (``x.new_empty(M, K).as_strided((M, K), (1, M))``)."""
        receiver, meth = method
        base = dotted(receiver)
        if base is not None:
            if state.vetted.get(base) != _ANY:
                return False
            if meth in _SAME_EXTENT_VIEWS:
                return True
            size = _first_arg(call) if meth == "as_strided" and _nargs(call) else None
            if isinstance(size, ast.Call) and not _nargs(size):
                size = size.func if _method(size) and _method(size)[1] == "size" else None
            elif not (isinstance(size, ast.Attribute) and size.attr == "shape"):
                size = None
            return size is not None and dotted(size.value) == base
        facts = self.tensor_facts(receiver, state) if isinstance(receiver, ast.Call) else None
        return facts is not None and facts.fresh

    def _vetting(self, arm, name: str, state: _State) -> frozenset[str]:
        """The extents an arm of a conditional expression assigned to ``name`` is known to cover."""
        if _is_none(arm):
            return _ANY  # None reaches no address
        facts = self.tensor_facts(arm, state)
        if facts is not None and facts.fresh:
            return _ANY
        src = _name(arm)
        if src is not None and src == name and src not in state.ints:
            return state.vetted.get(src, frozenset())  # `c = alloc if c is None else c`: c as it was
        if src is not None and src != name and src not in state.ints:
            src_vetted = state.vetted.get(src, frozenset())
            return _ANY if src_vetted == _ANY else src_vetted | {src, self.family(src, state)}
        if isinstance(arm, ast.Call) and (m := _method(arm)) is not None and m[1] in _ANY_VIEW:
            return _ANY if self._allocated_view(arm, m, state) else frozenset()
        return frozenset()

    def unpack(self, target, value, state: _State) -> None:
        elements = target.elts
        for e in elements:
            for k in _target_names(e):
                state.kill(k)
        # n, v = logits.shape / logits.size() / logits.stride()
        kind = None
        base = None
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            kind, base = OriginKind.SHAPE, value.value
        elif isinstance(value, ast.Call) and not _nargs(value):
            m = _method(value)
            if m is not None and m[1] in ("size", "stride"):
                kind = OriginKind.SHAPE if m[1] == "size" else OriginKind.STRIDE
                base = m[0]
        if kind is not None:
            tensor = self.tensor_name(base)
            if tensor is None:
                return
            starred = [i for i, e in enumerate(elements) if isinstance(e, ast.Starred)]
            ndim = None if starred else len(elements)
            for i, e in enumerate(elements):
                if isinstance(e, ast.Starred) or not isinstance(e, ast.Name):
                    continue
                dim = i if not starred or i < starred[0] else i - len(elements)
                state.ints[e.id] = ArgOrigin(
                    kind, f"{tensor}.{'stride' if kind is OriginKind.STRIDE else 'size'}({dim})",
                    _NO_SPAN, tensor=tensor, dim=dim, ndim=ndim,
                )
            return
        if isinstance(value, ast.Call) and (m := _method(value)) is not None and m[1] in (
                "unbind", "chunk", "split", "tensor_split"):
            # `b, a = ba.view(t, h, 2).unbind(-1)`: parts of one tensor; split along an inner
            # dimension they are strided views (their inner stride is the parts' count).
            base = self.tensor_name(m[0]) or (_method(m[0])[0] if isinstance(m[0], ast.Call) and _method(m[0]) else None)
            base_name = self.tensor_name(base) if base is not None and not isinstance(base, str) else base
            dim = _kwarg(value, "dim")
            pos = _positional(value)
            if dim is None:
                dim = pos[0] if m[1] == "unbind" and pos else (pos[1] if len(pos) > 1 else None)
            d = _int_literal(dim) if dim is not None else 0
            inner = d is None or d != 0
            # `unbind(-1)` drops the innermost dimension: the next one, of stride > 1, becomes it.
            # `chunk`/`split` along it keep a unit innermost stride (only outer strides grow).
            unit_lost = m[1] == "unbind" and (d == -1 or d is None)
            for e in elements:
                if isinstance(e, ast.Name):
                    state.tensors[e.id] = _Tensor(family=self.family(base_name, state) if base_name else e.id,
                                                  view=inner, inner=inner and unit_lost)
            return
        if isinstance(value, ast.Attribute) and value.attr == "saved_tensors":
            saved = self.saved.get(self._class)
            if saved is not None and len(saved) == len(elements):
                for e, facts in zip(elements, saved):
                    if isinstance(e, ast.Name) and facts is not None:
                        state.tensors[e.id] = replace(facts, family=e.id, like_of=None)
            return
        if isinstance(value, (ast.GeneratorExp, ast.ListComp)):
            value = self._comprehension_items(value, elements)
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements):
            if any(isinstance(e, ast.Starred) for e in (*elements, *value.elts)):
                return
            for t, v in zip(elements, value.elts):
                self.assign(t, v, state)

    @staticmethod
    def _comprehension_items(comp, elements):
        """``a, b = (t.contiguous() for t in (a, b))`` as the tuple ``(a.contiguous(),
        b.contiguous())``: a comprehension over a literal tuple of as many items, with no filter,
        unpacked one item per name. The names are assigned one by one, so an item may not read a
        name assigned before it (``a, b = (f(t) for t in (b, a))`` is left unknown)."""
        if len(comp.generators) != 1:
            return None
        gen = comp.generators[0]
        if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name) \
                or not isinstance(gen.iter, (ast.Tuple, ast.List)) or len(gen.iter.elts) != len(elements) \
                or any(isinstance(e, ast.Starred) for e in gen.iter.elts):
            return None
        items = [_substitute(comp.elt, {gen.target.id: e}) for e in gen.iter.elts]
        for i, item in enumerate(items):
            if _free_names(item) & {n for t in elements[:i] for n in _target_names(t)}:
                return None
        return ast.Tuple(elts=items, ctx=ast.Load())

    # -- expressions

    def tensor_name(self, node) -> str | None:
        d = dotted(node)
        if d is not None:
            return d
        if isinstance(node, ast.Call):
            m = _method(node)
            if m is not None and m[1] == "contiguous":
                return self.tensor_name(m[0])
        return None

    def family(self, name: str, state: _State) -> str:
        t = state.tensors.get(name)
        return t.family if t is not None and t.family else name

    def _arm_family(self, node, facts: _Tensor | None, state: _State) -> str | None:
        """The storage family of one arm of a conditional expression: its facts' family, or the
        family of a bare name nothing more is known of."""
        if facts is not None:
            return facts.family if not facts.fresh and not facts.like_of else None
        name = _name(node)
        return self.family(name, state) if name is not None else None

    def tensor_facts(self, node, state: _State) -> _Tensor | None:
        """What a tensor-valued expression is, or None when it is nothing known."""
        name = _name(node)
        if name is not None:
            return state.tensors.get(name)
        if isinstance(node, ast.Subscript):
            elements = _subscript_elements(node, self.src)
            if any(isinstance(e, ast.Slice) for e in elements):
                # `logits[:, :vocab]`, `x[..., 1:]`: a slice view made right here.
                base = self.tensor_name(node.value)
                if base is not None and not (dotted(node.value) or "").endswith(("shape", "stride")):
                    last = elements[-1] if elements else None
                    inner = len(elements) > 1 and (not isinstance(last, ast.Slice) or last.step is not None) and not (
                        isinstance(last, ast.Constant) and last.value in (None, Ellipsis))
                    return _Tensor(family=self.family(base, state), view=strided_subscript(elements),
                                   inner=inner and strided_subscript(elements))
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "H", "mH"):
            base = self.tensor_name(node.value)
            # `torch.empty(n, k).T`, `w.T` of such a `w`: strides known (1, k). Not `fresh`: rules
            # read that as packed.
            strides = self.transposed_strides(node.value, (), state) if node.attr in ("T", "mT") else frozenset()
            if base is not None:
                return _Tensor(family=self.family(base, state), view=True, inner=True, strides=strides)
            if strides:
                return _Tensor(view=True, inner=True, strides=strides)
        if isinstance(node, ast.IfExp):
            # `x if x.is_contiguous() else x.contiguous()`
            body_state = state.copy()
            self.assume(node.test, body_state, truth=True)
            a = self.tensor_facts(node.body, body_state)
            else_state = state.copy()
            self.assume(node.test, else_state, truth=False)
            b = self.tensor_facts(node.orelse, else_state)
            # `torch.empty(...) if HAVE_BETA else None`: None reaches no address, the other arm decides.
            if _is_none(node.orelse):
                return a
            if _is_none(node.body):
                return b
            if a is not None and b is not None and a.contiguous and b.contiguous:
                return _Tensor(contiguous=True, fresh=a.fresh and b.fresh, family=a.family or b.family)
            # `C.to(torch.float32) if C.dtype == torch.bfloat16 else C`: the tensor or a conversion
            # of it on either arm (what a conversion keeps of its source, as on one path).
            fa, fb = self._arm_family(node.body, a, state), self._arm_family(node.orelse, b, state)
            if fa is not None and fa == fb and not (a is not None and a.view) and not (b is not None and b.view):
                return _Tensor(family=fa)
            return None
        if not isinstance(node, ast.Call):
            return None
        fname = dotted(node.func) or ""
        if fname in self.summaries:
            return self.summaries[fname]
        head, _, rest = fname.partition(".")
        if head in self.info.imports:
            target = self.info.imports[head] + ("." + rest if rest else "")
            if target.split(".")[0] not in ("torch", "triton", "numpy", "math"):
                return _Tensor(alloc_call=target, opaque=True)
        last = fname.split(".")[-1]
        m = _method(node)
        fmt = _is_contiguous_format(_kwarg(node, "memory_format"))
        if last in _FRESH_CONTIGUOUS and (m is None or last.startswith("new_") or _is_torch(fname)):
            strides = self.allocated_strides(node, last, state) if fmt is not False else frozenset()
            ndim = _rank_of_sizes(node) if last in _SIZED_ALLOC else None
            if last in ("full", "new_full") and node.args and isinstance(node.args[0], (ast.Tuple, ast.List)) \
                    and not any(isinstance(e, ast.Starred) for e in node.args[0].elts):
                ndim = len(node.args[0].elts)  # `torch.full((a, b), value)`: the sizes, then the value
            return _Tensor(contiguous=fmt is not False, fresh=True, strides=strides, ndim=ndim)
        if last in _STRIDED_ALLOC:
            # `torch.empty_strided(size, stride)`, Inductor's `empty_strided_cuda(size, stride, dtype)`
            size = node.args[0] if node.args else _kwarg(node, "size")
            stride = node.args[1] if len(node.args) > 1 else _kwarg(node, "stride")
            strides, packed = self.fixed_strides(size, stride, state)
            return _Tensor(contiguous=packed, fresh=True, strides=strides)
        if last in _LIKE or (last == "clone" and m is not None):
            src_node = m[0] if last == "clone" else (_first_arg(node) if _nargs(node) else None)
            src = self.tensor_name(src_node) if src_node is not None else None
            src_facts = self.tensor_facts(src_node, state) if src_node is not None else None
            if isinstance(src_node, ast.Call) and _method(src_node) and _method(src_node)[1] == "contiguous":
                src_facts = _Tensor(contiguous=True)
            contiguous = fmt is True or (fmt is None and src_facts is not None and src_facts.contiguous)
            return _Tensor(contiguous=contiguous, fresh=True, like_of=src,
                           ndim=src_facts.ndim if src_facts is not None else None)
        if m is not None:
            base, meth = m
            base_name = self.tensor_name(base)
            base_facts = self.tensor_facts(base, state)
            fam = self.family(base_name, state) if base_name else None
            base_ndim = base_facts.ndim if base_facts is not None else None
            if meth == "contiguous":
                return _Tensor(contiguous=True, fresh=False, family=fam, ndim=base_ndim)
            if meth == "repeat":
                # A new packed tensor, one dimension per repeat count (at least the source's rank).
                return _Tensor(contiguous=True, fresh=True, ndim=_rank_of_sizes(node))
            if meth in _KEEPS_CONTIGUITY:
                ndim = _rank_of_sizes(node) if meth in ("view", "reshape") else (
                    base_ndim if meth not in ("flatten", "unsqueeze", "squeeze", "view_as") else None)
                return _Tensor(contiguous=bool(base_facts and base_facts.contiguous), family=fam, ndim=ndim)
            if meth in _VIEWS:
                strides = frozenset()
                if meth == "as_strided" and len(node.args) >= 2:
                    strides, _ = self.fixed_strides(node.args[0], node.args[1], state)
                elif meth in ("t", "transpose"):
                    strides = self.transposed_strides(base, node.args if meth == "transpose" else (), state)
                return _Tensor(family=fam, view=meth in _STRIDED_VIEWS, strides=strides,
                               inner=meth in ("t", "transpose", "permute", "movedim", "mT", "T"))
        return None

    def fixed_strides(self, size, stride, state: _State) -> tuple[frozenset, bool]:
        """What ``stride`` (a tuple written out) fixes of a tensor of ``size``: (dimension, value
        key) pairs, each dimension also counted from the end where the rank is known, and whether
        they are the packed strides of ``size`` (each the product of the sizes after it)."""
        if not isinstance(stride, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in stride.elts):
            return frozenset(), False
        keys = [value_key(self.origin(e, state)) for e in stride.elts]
        n = len(keys)
        fixed = frozenset((d, k) for i, k in enumerate(keys) if k is not None for d in (i, i - n))
        packed = self.packed_strides(size, state)
        return fixed, packed is not None and len(packed) == n and all(
            k is not None and k == p for k, p in zip(keys, packed))

    def packed_strides(self, size, state: _State) -> list | None:
        """The value keys of the packed strides of a tensor of ``size`` (a tuple written out), or None."""
        if not isinstance(size, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in size.elts):
            return None
        sizes = [value_key(self.origin(e, state)) for e in size.elts]
        out = []
        for i in range(len(sizes)):
            after = sizes[i + 1:]
            if any(k is None for k in after):
                out.append(None)
                continue
            out.append(product_key(after))
        return out

    def transposed_strides(self, base, dims, state: _State) -> frozenset:
        """Strides of a transpose (``.t()``, ``.T``, ``.transpose(a, b)``) of a tensor whose every
        stride the launcher knows (``torch.empty(n, k).T``, ``w = torch.empty(n, k)`` ... ``w.T``):
        its strides with the two dimensions swapped; empty where the strides or the dimensions
        are unknown."""
        facts = self.tensor_facts(base, state)
        if facts is None or not facts.strides:
            return frozenset()
        written = {d for d, _ in facts.strides}
        n = max(written) + 1
        if min(written) != -n or len(written) != 2 * n or len(facts.strides) != 2 * n:
            return frozenset()  # not every dimension known, once
        packed = dict((d, k) for d, k in facts.strides if d >= 0)
        if dims:
            a, b = (_int_literal(d) for d in dims[:2]) if len(dims) == 2 else (None, None)
            if a is None or b is None or not -n <= a < n or not -n <= b < n:
                return frozenset()
            a, b = a % n, b % n
        elif n == 2:
            a, b = 0, 1
        else:
            return frozenset()
        packed[a], packed[b] = packed[b], packed[a]
        return frozenset((d, k) for i, k in packed.items() for d in (i, i - n))

    def allocated_strides(self, call: ast.Call, fname: str, state: _State) -> frozenset:
        """The packed strides of ``torch.empty(n, k)``, ``x.new_zeros((n, k))``, ... where the size is
        written out: (dimension, value key), each dimension counted both ways."""
        if fname not in _SIZED_ALLOC:
            return frozenset()
        args = list(call.args)
        if not args or any(isinstance(a, ast.Starred) for a in args):
            return frozenset()
        if fname in ("full", "new_full"):
            args = args[:1]
        size = args[0] if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)) else ast.Tuple(elts=args)
        packed = self.packed_strides(size, state)
        if not packed or any(k is None for k in packed):
            return frozenset()
        n = len(packed)
        return frozenset((d, k) for i, k in enumerate(packed) for d in (i, i - n))

    def origin(self, node, state: _State) -> ArgOrigin:
        """What one expression is, as far as the launcher shows (span/text filled by the caller)."""
        lit = _int_literal(node)
        if lit is not None:
            return ArgOrigin(OriginKind.LITERAL, "", _NO_SPAN, literal=lit, const=repr(lit))
        if isinstance(node, ast.Constant) and isinstance(node.value, (bool, str, float, type(None))):
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN, const=repr(node.value))
        name = _name(node)
        if name is not None:
            known = state.ints.get(name)
            if known is not None:
                return known
            seq = state.seqs.get(name)
            if isinstance(seq, ast.Call):
                desc = self.host_descriptor(seq, state)
                if desc is not None:
                    return desc
            facts = state.tensors.get(name)
            return self._tensor_origin(name, facts, state)
        if isinstance(node, ast.Call):
            desc = self.host_descriptor(node, state)
            if desc is not None:
                return desc
        if isinstance(node, ast.Subscript):
            idx = _sub_index(node, self.src)
            i = _int_literal(idx) if idx is not None else None
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr == "shape":
                t = self.tensor_name(base.value)
                if t is not None:
                    return ArgOrigin(OriginKind.SHAPE, "", _NO_SPAN, tensor=t, dim=i)
            if isinstance(base, ast.Call) and not _nargs(base) and i is not None:
                m = _method(base)
                if m is not None and m[1] in ("size", "stride"):
                    t = self.tensor_name(m[0])
                    if t is not None:
                        kind = OriginKind.SHAPE if m[1] == "size" else OriginKind.STRIDE
                        return ArgOrigin(kind, "", _NO_SPAN, tensor=t, dim=i)
            d = dotted(base)
            if d is not None and i is not None and _extents_of(state.seqs.get(d)) is not None:
                t_node, meth = _extents_of(state.seqs[d])
                t = self.tensor_name(t_node)
                if t is not None:
                    kind = OriginKind.STRIDE if meth == "stride" else OriginKind.SHAPE
                    return ArgOrigin(kind, "", _NO_SPAN, tensor=t, dim=i)
            if d is not None and d in state.seqs and i is not None and d not in self._resolving:
                seq = state.seqs[d]
                if isinstance(seq, (ast.Tuple, ast.List)) and -len(seq.elts) <= i < len(seq.elts):
                    el = seq.elts[i]
                    if not isinstance(el, ast.Starred):
                        # `grid = (grid[0] * M,)` refers to an older `grid`: never resolve a name in itself.
                        self._resolving.add(d)
                        try:
                            return self.origin(el, state)
                        finally:
                            self._resolving.discard(d)
            facts = self.tensor_facts(node, state)
            if facts is not None:
                return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=self.tensor_name(node.value),
                                 family=facts.family, strided_view=facts.view)
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, ast.Call):
            m = _method(node)
            fname = dotted(node.func) or ""
            if m is not None:
                base, meth = m
                pos = _positional(node)
                if meth in ("size", "stride", "numel", "nelement", "dim") and _nargs(node) <= 1:
                    t = self.tensor_name(base)
                    if t is not None:
                        if meth in ("numel", "nelement"):
                            return ArgOrigin(OriginKind.NUMEL, "", _NO_SPAN, tensor=t)
                        if meth == "dim":
                            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
                        if len(pos) == 1:
                            kind = OriginKind.SHAPE if meth == "size" else OriginKind.STRIDE
                            return ArgOrigin(kind, "", _NO_SPAN, tensor=t, dim=_int_literal(pos[0]))
            if fname in ("int", "len") and _nargs(node) == 1:
                first = _first_arg(node)
                inner = self.origin(first, state)
                if fname == "int":
                    return inner
                t = self.tensor_name(first)
                if t is not None:
                    return ArgOrigin(OriginKind.SHAPE, "", _NO_SPAN, tensor=t, dim=0)
                return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
            facts = self.tensor_facts(node, state)
            if facts is not None:
                name = self.tensor_name(node)
                if name is None and m is not None:
                    name = self.tensor_name(m[0])
                return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name,
                                 contiguous=facts.contiguous, fresh=facts.fresh,
                                 family=facts.family or name, like_of=facts.like_of, strided_view=facts.view)
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left = self.origin(node.left, state)
            right = self.origin(node.right, state)
            kinds = {left.kind, right.kind}
            if OriginKind.STRIDE in kinds:
                s = left if left.kind is OriginKind.STRIDE else right
                return ArgOrigin(OriginKind.STRIDE, "", _NO_SPAN, tensor=s.tensor, dim=None, factors=(left, right))
            sizes = {OriginKind.SHAPE, OriginKind.NUMEL, OriginKind.PRODUCT}
            if kinds <= sizes | {OriginKind.LITERAL}:
                if kinds == {OriginKind.LITERAL}:
                    return ArgOrigin(OriginKind.LITERAL, "", _NO_SPAN, literal=left.literal * right.literal)
                return ArgOrigin(OriginKind.PRODUCT, "", _NO_SPAN, factors=(left, right))
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, ast.IfExp):
            # `1 if n > 1 else 0`: a literal on each path (the one that is not 0 is what a stride
            # parameter must not be fed); `t if cond else None`: the tensor.
            a, b = self.origin(node.body, state), self.origin(node.orelse, state)
            if a.kind is OriginKind.LITERAL and b.kind is OriginKind.LITERAL:
                return a if a.literal or not b.literal else b
            if _is_none(node.orelse) and a.kind is not OriginKind.OTHER:
                return a
            if _is_none(node.body) and b.kind is not OriginKind.OTHER:
                return b
            return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)
        if isinstance(node, ast.Attribute):
            if node.attr in ("T", "mT"):
                facts = self.tensor_facts(node, state)
                if facts is not None:
                    return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=self.tensor_name(node.value),
                                     family=facts.family, strided_view=True)
            d = dotted(node)
            if d is not None:
                return self._tensor_origin(d, state.tensors.get(d), state)
        return ArgOrigin(OriginKind.OTHER, "", _NO_SPAN)

    def host_descriptor(self, call: ast.Call, state: _State) -> ArgOrigin | None:
        """``TensorDescriptor(t, shape, strides, block_shape)``: the base tensor, with its strides."""
        fname = dotted(call.func) or ""
        if fname.split(".")[-1] != "TensorDescriptor":
            return None
        strides = _kwarg(call, "strides")
        pos = _positional(call)
        if strides is None and len(pos) >= 3:
            strides = pos[2]
        base = _kwarg(call, "base") or (pos[0] if pos else None)
        if not isinstance(strides, (ast.List, ast.Tuple)) or base is None:
            return None
        name = self.tensor_name(base)
        facts = self.tensor_facts(base, state)
        elements = tuple(self.arg_origin(e, state) for e in _plain_elements(strides))
        return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name, family=name,
                         contiguous=bool(facts and facts.contiguous), fresh=bool(facts and facts.fresh),
                         descriptor_strides=elements)

    def _tensor_origin(self, name: str, facts: _Tensor | None, state: _State) -> ArgOrigin:
        vetted = tuple(sorted(state.vetted.get(name, ())))
        units = state.units.get(name, frozenset())
        unit_strides = () if units == _ALL_DIMS else tuple(sorted(units))
        known = state.known.get(name, frozenset())
        known = () if known == _ALL_DIMS else tuple(sorted(known | (facts.strides if facts is not None else frozenset())))
        same = state.same.get(name, frozenset())
        same = () if same == _ALL_DIMS else tuple(sorted(same))
        when = state.when.get(name, frozenset())
        when = () if when == _ALL_DIMS else tuple(sorted(when, key=repr))
        param = name if name in self._params and name not in state.rebound else None
        if param is None and facts is not None and facts.family and facts.family in self._params \
                and facts.family not in state.rebound and not (facts.contiguous or facts.fresh):
            param = facts.family  # a view of a parameter: its strides are the caller's
        is_tensor = facts is not None or name in self._tensor_names
        kept = name if param is None and name in self._params and name not in state.replaced else None
        if facts is None:
            return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name, family=name, vetted=vetted,
                             unit_strides=unit_strides, is_tensor=is_tensor, param=param,
                             known_strides=known, same_strides=same, contiguous_when=when, kept_param=kept)
        return ArgOrigin(OriginKind.TENSOR, "", _NO_SPAN, tensor=name, contiguous=facts.contiguous,
                         fresh=facts.fresh, family=facts.family or name, like_of=facts.like_of, vetted=vetted,
                         alloc_call=facts.alloc_call, opaque=facts.opaque, strided_view=facts.view,
                         unit_strides=unit_strides, is_tensor=is_tensor, param=param, dtype=facts.dtype,
                         inner_strided=facts.inner, known_strides=known, same_strides=same,
                         contiguous_when=when, kept_param=kept)

    def arg_origin(self, node, state: _State) -> ArgOrigin:
        o = self.origin(node, state)
        extra = {}
        if o.kind in (OriginKind.SHAPE, OriginKind.STRIDE, OriginKind.NUMEL) and o.tensor is not None:
            facts = state.tensors.get(o.tensor)
            extra["family"] = self.family(o.tensor, state)
            extra["contiguous"] = bool(facts and facts.contiguous)
            extra["fresh"] = bool(facts and facts.fresh)
            extra["like_of"] = facts.like_of if facts else None
            # What the tensor is where the launch takes its stride, for a tensor no pointer
            # receives: a view made on the way, or the launcher's parameter.
            t = self._tensor_origin(o.tensor, facts, state)
            extra["strided_view"] = t.strided_view
            extra["param"] = t.param
        return replace(o, text=self.text(node), span=self.span(node), **extra)

    # -- launches

    def find_launches(self, node, state: _State) -> None:
        """Every launch call inside one statement or expression (lambdas and defs excluded)."""
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Call):
                self.maybe_launch(n, state)
                stack.append(n.func)
                stack.extend(a.value for a in _args(n))
            elif isinstance(n, (ast.Name, ast.Constant, ast.Lambda, ast.JoinedStr)):
                continue
            elif isinstance(n, ast.Attribute):
                stack.append(n.value)
            elif isinstance(n, ast.Subscript):
                stack.append(n.value)
                stack.extend(e for e in _subscript_elements(n, self.src) if not isinstance(e, ast.Slice))
            elif isinstance(n, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Await)):
                if n.value is not None:
                    stack.append(n.value)
            elif isinstance(n, ast.BinOp):
                stack.extend((n.left, n.right))
            elif isinstance(n, ast.BoolOp):
                stack.extend(n.values)  # libcst nests `a or b or c` to the left: the same order
            elif isinstance(n, ast.UnaryOp):
                stack.append(n.operand)
            elif isinstance(n, ast.Compare):
                stack.append(n.left)
                stack.extend(n.comparators)
            elif isinstance(n, (ast.Tuple, ast.List, ast.Set)):
                stack.extend(_elements(n))
            elif isinstance(n, ast.IfExp):
                stack.extend((n.test, n.body, n.orelse))
            elif isinstance(n, ast.Dict):
                stack.extend(n.values)

    def maybe_launch(self, call: ast.Call, state: _State) -> None:
        func = call.func
        grid_node = None
        if isinstance(func, ast.Subscript):
            target = _launched(func.value)
            grid_node = _sub_index(func, self.src)
        elif isinstance(func, ast.Attribute) and func.attr == "run":
            target = _launched(func.value)
            grid_node = _kwarg(call, "grid")
        else:
            return
        if target is None or isinstance(grid_node, ast.JoinedStr) or (
            isinstance(grid_node, ast.Constant) and isinstance(grid_node.value, _STRINGS)
        ):
            return  # `table["name"](x)` is a lookup, not a launch
        head, _, rest = target.partition(".")
        resolved = None
        if head in state.aliases:
            resolved = state.aliases[head] + ("." + rest if rest else "")
        saved_shared, self._shared = self._shared, self.src.call_parens(call)
        try:
            launch = Launch(target=target, span=self.span(call), launcher=self._fn, guarded=self._guarded,
                            resolved_target=resolved, public=self._public, params=tuple(sorted(self._params)),
                            launcher_class=self._class if self._depth == 0 else None)
            if grid_node is not None:
                launch.grid_text = self.text(grid_node)
                launch.grid = self.grid_origins(grid_node, state)
            for arg in _args(call):
                if arg.star == "*":
                    seq = self._seq(arg.value, state)
                    if _name(arg.value) is not None and isinstance(seq, ast.List):
                        seq = None  # a list variable may have grown since (`args.append(...)`)
                    if isinstance(seq, (ast.Tuple, ast.List)) and not any(
                        isinstance(e, ast.Starred) for e in seq.elts
                    ):
                        launch.args.extend(self.arg_origin(e, state) for e in seq.elts)
                    elif not launch.star_args:
                        value, rank = self._star_extents(arg.value, state)
                        first = self._first_extent(value, state)
                        if rank is None and first is not None:
                            rank = self._rank(first.tensor, state)
                        if rank and first is not None:
                            # `*t.stride()` of a tensor whose rank the launcher shows: every element.
                            launch.args.extend(self._first_extent(value, state, d) for d in range(rank))
                            continue
                        if first is not None:
                            launch.args.append(first)
                        launch.star_args = True
                elif arg.star == "**":
                    seq = self._seq(arg.value, state)
                    pairs = self._dict_pairs(seq) if seq is not None else None
                    if pairs is None:
                        launch.star_args = True
                    else:
                        for k, v in pairs:
                            launch.kwargs[k] = self.arg_origin(v, state)
                elif arg.keyword is not None:
                    launch.kwargs[arg.keyword] = self.arg_origin(arg.value, state)
                elif not launch.star_args:
                    # After an unresolved *args the positions of what follows are unknown.
                    launch.args.append(self.arg_origin(arg.value, state))
        finally:
            self._shared = saved_shared
        launch.width_checks = list(state.checks.values())
        self.info.launches.append(launch)

    @staticmethod
    def _rank(tensor: str | None, state: _State) -> int | None:
        """The rank the launcher shows for ``tensor``: its allocation's or view's sizes written
        out, or its shape unpacked (`b, h, d = t.shape`)."""
        if tensor is None:
            return None
        facts = state.tensors.get(tensor)
        if facts is not None and facts.ndim:
            return facts.ndim
        return next((o.ndim for o in state.ints.values()
                     if o.tensor == tensor and o.kind is OriginKind.SHAPE and o.ndim), None)

    def _star_extents(self, node, state: _State):
        """``*(t.stride() if t is not None else (0, 0))``: the arm that reads ``t``'s extents, and
        the count the other arm, a tuple written out, gives (a launch binds the same parameters
        whichever arm runs); (node, None) for anything else."""
        if isinstance(node, ast.IfExp):
            for mine, other in ((node.body, node.orelse), (node.orelse, node.body)):
                if isinstance(other, (ast.Tuple, ast.List)) and not any(
                        isinstance(e, ast.Starred) for e in other.elts) and _extents_of(mine) is not None:
                    return mine, len(other.elts)
        return node, None

    def _first_extent(self, node, state: _State, dim: int = 0) -> ArgOrigin | None:
        """``*t.stride()`` / ``*t.shape`` / ``*t.size()`` at a launch: its first element is
        ``t.stride(0)`` (``t.size(0)``) whatever the rank (a tensor whose strides a kernel
        receives has at least one dimension); how many follow is unknown without the rank
        (element ``dim`` where it is known)."""
        kind = base = None
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            kind, base = OriginKind.SHAPE, node.value
        elif isinstance(node, ast.Call) and not _nargs(node):
            m = _method(node)
            if m is not None and m[1] in ("size", "stride"):
                kind = OriginKind.SHAPE if m[1] == "size" else OriginKind.STRIDE
                base = m[0]
        tensor = self.tensor_name(base) if base is not None else None
        if tensor is None:
            return None
        facts = state.tensors.get(tensor)
        return ArgOrigin(
            kind, f"{tensor}.{'stride' if kind is OriginKind.STRIDE else 'size'}({dim})", self.span(node),
            tensor=tensor, dim=dim, family=self.family(tensor, state),
            contiguous=bool(facts and facts.contiguous), fresh=bool(facts and facts.fresh),
            like_of=facts.like_of if facts else None,
        )

    def _seq(self, node, state: _State):
        if isinstance(node, (ast.Tuple, ast.List, ast.Dict)):
            return node
        name = _name(node)
        if name is not None:
            return state.seqs.get(name)
        return None

    def grid_origins(self, node, state: _State) -> list[ArgOrigin]:
        seq = self._seq(node, state)
        if isinstance(seq, ast.Lambda):
            seq = seq.body
        if isinstance(seq, (ast.Tuple, ast.List)):
            return [self.arg_origin(e, state) for e in _plain_elements(seq)]
        return []

    def _dict_pairs(self, node) -> list[tuple[str, ast.expr]] | None:
        if isinstance(node, ast.Dict):
            out = []
            for k, v in zip(node.keys, node.values):
                if not (isinstance(k, ast.Constant) and isinstance(k.value, _STRINGS) and self.src.single_string(k)):
                    return None  # `**x` (no key), a name, or strings written side by side
                out.append((k.value, v))
            return out
        if isinstance(node, ast.Call) and (dotted(node.func) or "") == "dict":
            out = []
            for a in _args(node):
                if a.keyword is None:
                    return None
                out.append((a.keyword, a.value))
            return out
        return None


# Wrappers that hand a kernel to torch.compile's tracing and launch it unchanged:
# `torch.library.wrap_triton(k)[grid](...)` (`capture_triton`, its name before torch 2.6).
_KERNEL_WRAPPERS = frozenset({"wrap_triton", "capture_triton"})


_TENSOR_USE = re.compile(
    r"\b([A-Za-z_]\w*)\.(?:stride\(|shape\b|size\(|dtype\b|device\b|is_contiguous\(|data_ptr\(|numel\(|dim\(\)"
    r"|element_size\(|contiguous\(|view\(|reshape\()"
)


def _exempted(decorators) -> frozenset:
    """Arguments a contiguity decorator is told not to touch (``no_guard_contiguous=["x"]``)."""
    out: set[str] = set()
    for d in decorators:
        if not isinstance(d, ast.Call):
            continue
        for k in d.keywords:
            if k.arg and "contiguous" in k.arg and k.arg.startswith(("no_", "skip", "exclude", "except")):
                vals = k.value.elts if isinstance(k.value, (ast.List, ast.Tuple, ast.Set)) else [k.value]
                out.update(v.value for v in vals if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return frozenset(out)


def _extents_of(node) -> tuple[ast.expr, str] | None:
    """(tensor, "shape" | "stride") when ``node`` is ``t.shape``, ``t.size()`` or ``t.stride()``."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return node.value, "shape"
    if isinstance(node, ast.Call) and not _nargs(node):
        m = _method(node)
        if m is not None and m[1] in ("size", "stride"):
            return m[0], ("stride" if m[1] == "stride" else "shape")
    return None


def _launched(node) -> str | None:
    """The name of what ``node[grid](...)`` launches: ``k`` for ``k`` and for ``wrap_triton(k)``."""
    d = dotted(node)
    if d is not None or not isinstance(node, ast.Call):
        return d
    if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
        name = dotted(node.func) or ""
        if name.split(".")[-1] in _KERNEL_WRAPPERS:
            return dotted(node.args[0])
    return None


def _any_between(lines: list[int], first: int, last: int) -> bool:
    i = bisect.bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last


def _contiguity_flags(fn) -> dict:
    """Local names ``fn`` binds once, to a test that reads ``t.is_contiguous()`` of tensors it
    does not rebind later: ``needs_tmp = not out.is_contiguous() or out.dtype != dt``. A branch on
    the name is a branch on the test."""
    return kept(fn, "_stridecheck_flags", _find_contiguity_flags)


def _find_contiguity_flags(fn) -> dict:
    nodes = walk(fn)
    out: dict = {}
    if not any(isinstance(n, ast.Attribute) and n.attr == "is_contiguous" for n in nodes):
        return out
    stores: dict[str, list[int]] = {}
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores.setdefault(n.id, []).append(n.lineno)
    for n in nodes:
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                and len(stores.get(n.targets[0].id, ())) == 1):
            continue
        tested = [c.func.value.id for c in ast.walk(n.value)
                  if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "is_contiguous"
                  and isinstance(c.func.value, ast.Name)]
        if tested and all(line < n.lineno for t in tested for line in stores.get(t, ())):
            out[n.targets[0].id] = n.value
    return out


def _param_names(fn) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _is_torch(fname: str) -> bool:
    return fname.split(".")[0] in ("torch", "th") or fname in _FRESH_CONTIGUOUS


def _none_guarded(test: ast.BoolOp, truth: bool):
    """The one test that ``test`` being ``truth`` decides where the names it guards are not None:
    ``x is None or <rest>`` true, ``x is not None and <rest>`` false; None when there is not
    exactly one such rest, or the rest tests no guarded name."""
    op = ast.Is if isinstance(test.op, ast.Or) else ast.IsNot
    if isinstance(test.op, ast.Or) != truth:
        return None
    guarded = {dotted(v.left) for v in test.values if isinstance(v, ast.Compare) and len(v.ops) == 1
               and isinstance(v.ops[0], op) and _is_none(v.comparators[0])}
    guarded.discard(None)
    if not guarded:
        return None
    rest = [v for v in test.values if not (isinstance(v, ast.Compare) and len(v.ops) == 1
                                           and isinstance(v.ops[0], op) and _is_none(v.comparators[0]))]
    if len(rest) == 1 and guarded & {d for x in ast.walk(rest[0]) if (d := dotted(x))}:
        return rest[0]
    return None


def _comparisons(test, truth: bool = True, expand=None):
    """(comparison, whether it is true) for each comparison that ``test`` being ``truth`` decides:
    every conjunct of a true ``and`` (of a false ``or``), none of a true ``or`` (a false ``and``).
    ``expand(call, truth)`` rewrites a call (``all(...)``, a predicate function) as a test."""
    stack = [(test, truth)]
    while stack:
        n, t = stack.pop()
        if isinstance(n, ast.Compare):
            if expand is not None and len(n.ops) == 1 and isinstance(n.left, ast.Call) \
                    and _is_none(n.comparators[0]) and isinstance(n.ops[0], (ast.Is, ast.IsNot)):
                if t == isinstance(n.ops[0], ast.IsNot):
                    got = expand(n.left, True)
                    if got is not None:
                        stack.append((got, True))
                continue
            if t and len(n.ops) > 1 and all(isinstance(op, ast.Eq) for op in n.ops):
                # `q.stride(1) == k.stride(1) == v.stride(1)`: every pair is equal.
                sides = [n.left, *n.comparators]
                for i, a in enumerate(sides):
                    for b in sides[i + 1:]:
                        yield ast.copy_location(ast.Compare(left=a, ops=[ast.Eq()], comparators=[b]), n), t
                continue
            yield n, t
        elif isinstance(n, ast.BoolOp):
            if isinstance(n.op, ast.And) == t:
                stack.extend((v, t) for v in n.values)
            else:
                # `if t is not None and t.shape != (m, n): raise`, `assert t is None or
                # t.shape[1] == n`: where t is a tensor at all, the rest is decided (where it is
                # None, nothing reaches an address).
                rest = _none_guarded(n, t)
                if rest is not None:
                    stack.append((rest, t))
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            stack.append((n.operand, not t))
        elif isinstance(n, ast.Call):
            got = expand(n, t) if expand is not None else None
            if got is not None:
                stack.append((got, t))
            elif (dotted(n.func) or "") == ("all" if t else "any") and _nargs(n):
                stack.append((_first_arg(n), t))


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping: dict):
        self.mapping = mapping

    def visit_Name(self, node):
        got = self.mapping.get(node.id)
        return got if got is not None and isinstance(node.ctx, ast.Load) else node


def _substitute(node, mapping: dict):
    """A copy of ``node`` with the names of ``mapping`` replaced by its expressions (shared, not
    copied: they keep their positions in the source)."""
    import copy

    return _Substitute(mapping).visit(copy.deepcopy(node))


def _condition_key(test, truth: bool):
    """``test`` being ``truth``, as a condition on one launcher name in the terms of a kernel's
    ``model.Condition`` (name, test, truth, value): ``beta != 0.0`` true is ``("beta", "eq", False,
    "0.0")``, ``flag`` false ``("flag", "truthy", False, None)``, ``x is not None`` true ``("x",
    "none", False, None)``. None for any other test."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.Name):
        return (test.id, "truthy", truth, None)
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(left, ast.Constant) and isinstance(right, ast.Name):
        left, right = right, left
    if not isinstance(left, ast.Name) or not isinstance(right, ast.Constant):
        return None
    if right.value is None and isinstance(op, (ast.Is, ast.IsNot)):
        return (left.id, "none", truth == isinstance(op, ast.Is), None)
    if isinstance(op, (ast.Eq, ast.NotEq)) and isinstance(right.value, (bool, int, float, str)):
        return (left.id, "eq", truth == isinstance(op, ast.Eq), repr(right.value))
    return None


def _contiguous_when(state: _State, arm: _State, key) -> None:
    """Record in ``state`` that the tensors ``arm`` (a path on which ``key`` holds) makes
    contiguous, and ``state`` does not, are contiguous under ``key``."""
    if key is None:
        return
    for name, facts in arm.tensors.items():
        if not facts.contiguous:
            continue
        have = state.tensors.get(name)
        if have is not None and have.contiguous:
            continue
        got = state.when.get(name, frozenset())
        if got != _ALL_DIMS:
            state.when[name] = got | {key}


def _free_names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _fails(body) -> bool:
    """A block that only gives up: ``return None``/``return False``/``return``, or ``raise``."""
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Raise):
        return True
    return isinstance(stmt, ast.Return) and (stmt.value is None or (
        isinstance(stmt.value, ast.Constant) and stmt.value.value in (None, False)))


def _key_mentions(key: str, name: str) -> bool:
    """Whether value key ``key`` (see ``model.value_key``) speaks of variable ``name``."""
    if name not in key:
        return False
    parts = key[5:].split("*") if key.startswith("prod:") else [key]
    return any(len(f := part.split(":")) >= 2 and f[1] == name for part in parts)


def _add_known(state: _State, tensor: str, dim: int, key: str) -> None:
    got = state.known.get(tensor, frozenset())
    if got != _ALL_DIMS:
        state.known[tensor] = got | {(dim, key)}


def _add_same(state: _State, a: str, b: str, mark: str = "") -> None:
    """``a`` and ``b`` have the same strides (each recorded with ``mark`` appended where the check
    went through an imported function: see :meth:`_Collector._record_strides`)."""
    for x, y in ((a, b + mark), (b, a + mark)):
        got = state.same.get(x, frozenset())
        if got != _ALL_DIMS:
            state.same[x] = got | {y}


def _unwrap_sequence(node):
    """The argument of ``tuple(x)`` / ``list(x)``, which hold what ``x`` holds; else ``node``."""
    if isinstance(node, ast.Call) and (dotted(node.func) or "") in ("tuple", "list") and len(node.args) == 1 \
            and not node.keywords:
        return node.args[0]
    return node


def returns_strides(fn) -> bool:
    """Whether function ``fn`` returns the strides of its first parameter ``p`` wherever ``p`` is
    a tensor: each ``return`` outside an ``if p is None:`` arm gives ``p.stride()`` (or
    ``tuple(...)``/``list(...)`` of it), or a name every assignment of which does."""
    params = _param_names(fn)
    if not params:
        return False
    p = params[0]

    def strides(node) -> bool:
        node = _unwrap_sequence(node)
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "stride"
                and not node.args and not node.keywords and _name(node.func.value) == p)

    stores = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for name in _target_names(t):
                    stores.setdefault(name, []).append(n.value if isinstance(t, ast.Name) else None)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            for name in _target_names(getattr(n, "target", None) or ast.Tuple(elts=[], ctx=ast.Load())):
                stores.setdefault(name, []).append(None)
    if p in stores:
        return False
    returns = []

    def walk(stmts) -> None:
        for st in stmts:
            if isinstance(st, ast.Return):
                returns.append(st.value)
            elif isinstance(st, ast.If):
                t = st.test
                none_arm = (isinstance(t, ast.Compare) and len(t.ops) == 1 and _name(t.left) == p
                            and _is_none(t.comparators[0]) and isinstance(t.ops[0], (ast.Is, ast.IsNot)))
                if none_arm and isinstance(t.ops[0], ast.Is):
                    walk(st.orelse)
                elif none_arm:
                    walk(st.body)
                else:
                    walk(st.body)
                    walk(st.orelse)
            elif isinstance(st, (ast.For, ast.While, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    walk(getattr(st, block, []))
                for h in getattr(st, "handlers", []):
                    walk(h.body)

    walk(fn.body)
    if not returns:
        return False
    for r in returns:
        if r is None:
            return False
        if isinstance(r, ast.Name):
            got = stores.get(r.id)
            if not got or not all(v is not None and strides(v) for v in got):
                return False
        elif not strides(r):
            return False
    return True


def _target_names(node) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        out = []
        for e in node.elts:
            out.extend(_target_names(e))
        return out
    if isinstance(node, ast.Starred):
        return _target_names(node.value)
    return []


def may_hold_launch_or_allocator(source: str) -> bool:
    """Whether :func:`collect` reads more of ``source`` than its module-level imports and
    aliases: a launch hint (``](`` / ``.run(``) or a small allocating function (``return`` and an
    allocation call)."""
    return bool(_LAUNCH_HINT.search(source)) or ("return" in source and bool(_ALLOC_HINT.search(source)))


def _assign_state(dst: _State, src: _State) -> None:
    dst.tensors, dst.ints, dst.seqs, dst.checks, dst.aliases, dst.vetted, dst.seq_paths, dst.units = (
        src.tensors, src.ints, src.seqs, src.checks, src.aliases, src.vetted, src.seq_paths, src.units,
    )
    dst.rebound = src.rebound
    dst.replaced = src.replaced
    dst.known, dst.same, dst.when = src.known, src.same, src.when


def imports_of(tree: ast.Module, module_name: str | None = None, path: str | None = None) -> dict[str, str]:
    """The module's imports (local name -> dotted name), as :func:`collect` reads them."""
    is_package = bool(path) and path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    c = _Collector("", module_name, is_package, tree)
    c.module_level(tree.body)
    return dict(c.info.imports)


def collect(
    tree: ast.Module,
    source: str,
    module_name: str | None = None,
    path: str | None = None,
) -> LaunchInfo:
    """Launches, imports and kernel aliases of one module (see the module docstring).

    ``tree`` is ``ast.parse(source)``; ``source`` the module's text. Never raises on a tree that
    ``ast.parse`` produced from ``source``.
    """
    is_package = bool(path) and path.replace("\\", "/").rsplit("/", 1)[-1] == "__init__.py"
    c = _Collector(source, module_name, is_package, tree)
    body = tree.body
    c.module_level(body)
    c.defs = {s.name: s for s in body if isinstance(s, _DEFS)}
    hints = [m.end() for m in _LAUNCH_HINT.finditer(source)]
    scan = bool(hints)
    if scan:
        c.hint_lines = sorted({c.src.line_of(end) for end in hints})
    c._fn, c._guarded = None, False
    if "return" in source and _ALLOC_HINT.search(source):
        c.summarise(body)
    if scan:
        # Facts that flow into launchers from their callers in this module (`forward` calling
        # `_fwd(x.contiguous())`, `@input_guard`, ctx.save_for_backward): two rounds reach two levels.
        defs = {s.name: s for s in body if isinstance(s, _DEFS)}
        wanted = set()
        for name, fn in defs.items():
            if _any_between(c.hint_lines, fn.lineno, fn.end_lineno):
                wanted.add(name)
        # Their callers in this module (one level up), found by text: `name(` inside a def.
        if wanted:
            pattern = "|".join(re.escape(n) for n in sorted(wanted))
            call_ends = [m.end() for m in re.finditer(rf"\b(?:{pattern})\s*\(", source)]
            call_at = sorted({c.src.line_of(e) for e in call_ends})
            for name, fn in defs.items():
                if _any_between(call_at, fn.lineno, fn.end_lineno):
                    wanted.add(name)
        if wanted or "save_for_backward" in source:
            c.signatures = {n: _param_names(defs[n]) for n in wanted}
            pattern = "|".join(re.escape(n) for n in sorted(wanted)) or "(?!)"
            ends = [m.end() for m in re.finditer(rf"\b(?:{pattern})\s*\(|save_for_backward", source)]
            c.call_lines = sorted({c.src.line_of(e) for e in ends})
            c.collecting = True
            for _ in range(2):
                c.call_facts = {}
                c.functions(body, True)
                c.entry = c.derive_entry()
        c.collecting = False
        c.call_lines = None
    if c.entry or c.saved:
        # Twice: with what callers guarantee (-> `contiguous_in_module`), then with the launcher's
        # own facts only (-> `contiguous`, which the kernel-side rules read as the issue defines it).
        c.functions(body, scan)
        with_callers, c.info.launches = c.info.launches, []
        c.entry, c.saved = {}, {}
        c.functions(body, scan)
        for mine, theirs in zip(c.info.launches, with_callers):
            for a, b in zip(mine.args, theirs.args):
                a.contiguous_in_module = b.contiguous
            for k, a in mine.kwargs.items():
                b = theirs.kwargs.get(k)
                a.contiguous_in_module = b.contiguous if b is not None else a.contiguous
    else:
        c.functions(body, scan)
        for launch in c.info.launches:
            for a in (*launch.args, *launch.kwargs.values()):
                a.contiguous_in_module = a.contiguous
    c.info.allocators = tuple(sorted(n for n, t in c.summaries.items() if t.fresh))
    c.info.contiguous_returns = tuple(sorted(c.summaries))
    if scan:
        # Launches at module level (scripts, benchmarks): in no launcher.
        before = len(c.info.launches)
        c._fn, c._guarded = None, False
        c.block([s for s in body if isinstance(s, _SMALL)], _State(), True)
        for launch in c.info.launches[before:]:
            for a in (*launch.args, *launch.kwargs.values()):
                a.contiguous_in_module = a.contiguous
    return c.info
