"""The host side's call graph of one module: its functions, the calls they make, and what each
call passes for each tensor argument.

Read from the module's ``ast`` in one pass, with a light, flow-insensitive evaluation of each
function's local assignments (the last assignment of a name before the call, in source order):
enough to tell a tensor that is made contiguous or allocated (``packed``), a view that is not
(``strided``: an inner slice, a transpose), the caller's own parameter passed on (``param``), an
``empty_like`` copy of one (``like``), and ``self.<attr>`` (``attr``). The linker joins the
modules' graphs (:mod:`stridecheck.lint.linker`) and :mod:`stridecheck.lint.provenance` walks it
from a launch up to the callers of its launcher, a few levels at most.

Only calls that may reach a launcher are kept: of a module function, an imported name, a method
of ``self`` or of a class (``Cls.apply``), not of ``torch``, ``triton`` and the builtins.
"""

from __future__ import annotations

import ast

from stridecheck.lint.model import ArgFact, CallSite, FunctionInfo

_SKIP_ROOTS = frozenset(
    """torch tl triton math np numpy os sys logger logging print len range int float bool str isinstance
    getattr setattr hasattr list tuple dict set min max super type zip enumerate sorted reversed any all sum
    abs round divmod iter next map filter repr id hash open functools itertools warnings einops rearrange
    assert_close F nn""".split()
)
_ALLOCATORS = frozenset(
    {"empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "tensor", "new_empty", "new_zeros",
     "new_ones", "new_full", "new_tensor", "contiguous"}
)
_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like"})
_STRIDED = frozenset({"t", "transpose", "permute", "expand", "expand_as", "movedim", "as_strided", "unfold",
                      "diagonal", "narrow", "select", "mT", "T"})
_KEEPS = frozenset({"view", "reshape", "flatten", "unsqueeze", "squeeze", "view_as", "to", "float", "half",
                    "bfloat16", "detach", "unflatten", "type_as", "data"})
_REGISTERS = frozenset({"custom_op", "triton_op", "impl", "register_kernel", "register_fake", "register_autograd",
                        "register_op", "direct_register_custom_op"})
_UNKNOWN = ArgFact("unknown")


def strided_subscript(elements) -> bool:
    """Whether indexing with ``elements`` (the subscript's items) makes a view whose inner
    dimensions are not packed: a partial slice of an inner dimension (`x[:, :n]`, `x[..., 1:]`), or
    an index into one after a slice (`x[:, 0]`). Slicing the outermost dimension only
    (`x[a:b]`, `x[a:b, :, :]`) or indexing it (`x[0]`) keeps the rest packed."""
    sliced = False
    for i, e in enumerate(elements):
        if isinstance(e, ast.Slice):
            partial = e.lower is not None or e.upper is not None or e.step is not None
            if partial and (i > 0 or any(isinstance(x, ast.Constant) and x.value is Ellipsis for x in elements[:i])):
                return True
            if i > 0 and sliced is False and partial:
                return True
            sliced = True
        elif isinstance(e, ast.Constant) and (e.value is None or e.value is Ellipsis):
            if e.value is Ellipsis:
                sliced = True
            continue
        elif sliced:
            return True
    return False


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _source(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a message detail only
        return ""


def _decorator_names(fn) -> list[str]:
    return [(_dotted(d.func if isinstance(d, ast.Call) else d) or "").split(".")[-1] for d in fn.decorator_list]


def public_entry(name: str, cls: str | None, bases: tuple[str, ...], decorators: list[str]) -> bool:
    """Whether a function is where tensors enter from code its module's author does not see: a
    public module function, a public method of a public class, ``forward``/``backward`` of a
    module or autograd Function, a function registered as an operator."""
    if any(d in _REGISTERS for d in decorators):
        return True
    if cls is None:
        return not name.startswith("_")
    if name in ("forward", "backward") and any("Function" in b or b.split(".")[-1] == "Module" for b in bases):
        return True
    if name in ("forward", "__call__"):
        return not cls.startswith("_")
    return not name.startswith("_") and not cls.startswith("_")


class _FunctionScan:
    """One function: its local facts in source order, and the calls it makes."""

    def __init__(self, fn, qualname: str, params: set[str], contiguous: set[str], out: list[CallSite]):
        self.fn = fn
        self.qualname = qualname
        self.params = params
        self.local: dict[str, ArgFact] = {p: (ArgFact("packed", p, p) if p in contiguous else ArgFact("param", p, p))
                                          for p in params}
        self.out = out
        self.imports: dict[str, str] = {}  # imports made inside the function

    def fact(self, node) -> ArgFact:
        if isinstance(node, ast.Name):
            return self.local.get(node.id, _UNKNOWN)
        if isinstance(node, ast.Attribute):
            d = _dotted(node)
            if d and d.startswith("self.") and d.count(".") == 1:
                return ArgFact("attr", d[5:], d)
            if node.attr in ("T", "mT"):
                return ArgFact("strided", text=d or "")
            if node.attr == "data":
                return self.fact(node.value)
            return _UNKNOWN
        if isinstance(node, ast.Subscript):
            base = self.fact(node.value)
            sl = node.slice
            elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
            if strided_subscript(elts):
                return ArgFact("strided", text=_source(node))
            return base if base.kind in ("param", "unknown") else _UNKNOWN
        if isinstance(node, ast.IfExp):
            a, b = self.fact(node.body), self.fact(node.orelse)
            if isinstance(node.orelse, ast.Constant) and node.orelse.value is None:
                return a
            if isinstance(node.body, ast.Constant) and node.body.value is None:
                return b
            return a if a == b else _UNKNOWN
        if isinstance(node, ast.Call):
            f = node.func
            name = _dotted(f) or (f.attr if isinstance(f, ast.Attribute) else "")
            last = name.split(".")[-1]
            if last in _LIKE and node.args:
                src = self.fact(node.args[0])
                if any(k.arg == "memory_format" for k in node.keywords):
                    return ArgFact("packed")
                if src.kind == "packed":
                    return src
                return ArgFact("like", src.name, _dotted(node.args[0]) or "") if src.kind == "param" else _UNKNOWN
            if last in _ALLOCATORS:
                return ArgFact("packed")
            if isinstance(f, ast.Attribute):
                recv = self.fact(f.value)
                if last in _STRIDED:
                    return ArgFact("strided")
                if last in _KEEPS:
                    return recv if recv.kind in ("packed", "param") else _UNKNOWN
            return _UNKNOWN
        return _UNKNOWN

    def assign(self, target, value) -> None:
        if isinstance(target, ast.Name):
            self.local[target.id] = self.fact(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        self.local[n.id] = _UNKNOWN

    def run(self) -> None:
        stack = list(reversed(self.fn.body))
        while stack:
            s = stack.pop()
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for n in _expressions(s):
                self.calls_in(n)
            if isinstance(s, ast.ImportFrom) and s.module and not s.level:
                for a in s.names:
                    self.imports[a.asname or a.name] = f"{s.module}.{a.name}"
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    self.assign(t, s.value)
            elif isinstance(s, ast.AnnAssign) and s.value is not None:
                self.assign(s.target, s.value)
            elif isinstance(s, (ast.For, ast.AsyncFor)):
                self.assign(s.target, s.iter)
            for attr in ("orelse", "finalbody", "handlers", "body"):
                sub = getattr(s, attr, None)
                if sub and isinstance(sub, list):
                    stack.extend(reversed(sub))

    def calls_in(self, node) -> None:
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            callee = _dotted(n.func)
            if callee is None or callee.split(".")[0] in _SKIP_ROOTS:
                continue
            root = callee.split(".")[0]
            if "." in callee and root != "self" and root in self.local:
                continue  # a method of a local value (`x.view(...)`)
            args, star = [], False
            for a in n.args:
                if isinstance(a, ast.Starred):
                    star = True
                    break
                args.append(self.fact(a))
            kwargs = {}
            for k in n.keywords:
                if k.arg is None:
                    star = True
                    continue
                kwargs[k.arg] = self.fact(k.value)
            if not any(f.kind != "unknown" for f in (*args, *kwargs.values())):
                continue  # nothing to tell its callee
            head, _, rest = callee.partition(".")
            if head in self.imports:
                callee = "@" + self.imports[head] + ("." + rest if rest else "")
            self.out.append(CallSite(self.qualname, callee, n.lineno, tuple(args), kwargs, star))


def _expressions(s: ast.stmt):
    """The expressions of a statement itself (not of the statements nested in it)."""
    for name, value in ast.iter_fields(s):
        if name in ("body", "orelse", "finalbody", "handlers", "decorator_list"):
            continue
        if isinstance(value, ast.AST) and not isinstance(value, ast.stmt):
            yield value
        elif isinstance(value, list):
            for v in value:
                if isinstance(v, ast.AST) and not isinstance(v, ast.stmt):
                    yield v


def _params(fn) -> list[str]:
    a = fn.args
    return [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def _contiguous_at_entry(fn, params: list[str]) -> set[str]:
    names = _decorator_names(fn)
    if not any("contiguous" in d.lower() or d == "input_guard" for d in names):
        return set()
    exempt: set[str] = set()
    for d in fn.decorator_list:
        if isinstance(d, ast.Call):
            for k in d.keywords:
                if k.arg and "contiguous" in k.arg and k.arg.startswith(("no_", "skip", "exclude", "except")):
                    vals = k.value.elts if isinstance(k.value, (ast.List, ast.Tuple, ast.Set)) else [k.value]
                    exempt |= {v.value for v in vals if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return set(params) - exempt


def _attr_facts(cls: ast.ClassDef) -> dict[str, str]:
    """``self.<attr>`` -> "packed" when every assignment of it in the class allocates a tensor."""
    seen: dict[str, str] = {}
    for n in ast.walk(cls):
        if not isinstance(n, ast.Assign):
            continue
        for t in n.targets:
            d = _dotted(t)
            if not d or not d.startswith("self.") or d.count(".") != 1:
                continue
            v = n.value
            name = _dotted(v.func) if isinstance(v, ast.Call) else None
            last = (name or "").split(".")[-1]
            packed = isinstance(v, ast.Call) and (last in _ALLOCATORS) and not any(
                k.arg == "memory_format" for k in v.keywords)
            attr = d[5:]
            seen[attr] = "packed" if packed and seen.get(attr, "packed") == "packed" else "other"
    return {a: k for a, k in seen.items() if k == "packed"}


def collect_calls(tree: ast.Module):
    """(functions, calls, attrs) of a module (see the module docstring)."""
    functions: dict[str, FunctionInfo] = {}
    calls: list[CallSite] = []
    attrs: dict[str, dict[str, str]] = {}

    def visit_function(fn, cls: str | None, bases: tuple[str, ...]):
        names = _decorator_names(fn)
        if any(d in ("jit", "autotune", "heuristics") for d in names):
            return
        params = _params(fn)
        qual = f"{cls}.{fn.name}" if cls else fn.name
        contiguous = _contiguous_at_entry(fn, params)
        functions[qual] = FunctionInfo(qual, tuple(params), public_entry(fn.name, cls, bases, names),
                                       tuple(sorted(contiguous)), "stride_guard" in names, fn.lineno)
        _FunctionScan(fn, qual, set(params), contiguous, calls).run()

    for s in tree.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            visit_function(s, None, ())
        elif isinstance(s, ast.ClassDef):
            bases = tuple(_dotted(b) or "" for b in s.bases)
            found = _attr_facts(s)
            if found:
                attrs[s.name] = found
            for m in s.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit_function(m, s.name, bases)
    return functions, calls, attrs
