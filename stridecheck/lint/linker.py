"""Binds launches to kernels across the linted tree.

A first pass indexes every kernel of every module; each ``Launch`` is then resolved through the
module's imports and kernel aliases to one ``Kernel``, and its arguments are bound to the
kernel's parameters exactly as Python binds a call. What cannot be resolved is skipped, never
guessed.

Resolution of a launch target (``_k``, ``K._k``, ``self.kernel``, ``pkg.kernels._k``):

1. a launcher-local alias (``k = _kernel``) or a module-level alias (``_k = triton.autotune(...)
   (_impl)``, ``self.kernel = _kernel``) is replaced by the name it holds;
2. a bare name is a kernel of the same module, or an imported name;
3. an imported name ``pkg.kernels._k`` is looked up in the module ``pkg.kernels`` of the tree
   (by its dotted module name, or else by the path suffix ``pkg/kernels.py`` when unique), and
   followed through that module's own imports and aliases (re-exports), a few hops at most.

Binding follows Python's rules for a call: positional arguments fill parameters in order;
keywords fill by name; a parameter filled twice, an unknown keyword that is not a launch option,
or too many positional arguments mean the resolution was wrong, and the launch is dropped.
Arguments after an unresolvable ``*args`` are not bound; keywords still are.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from stridecheck.lint.kernels import refine_kernel
from stridecheck.lint.model import ArgOrigin, CallSite, Kernel, Launch, ModuleModel, OriginKind, ParamKind

# Keyword arguments a launch accepts besides the kernel's parameters (Triton's launcher options).
LAUNCH_OPTIONS = frozenset(
    {
        "grid", "num_warps", "num_stages", "num_ctas", "stream", "warmup", "enable_fp_fusion",
        "maxnreg", "enable_warp_specialization", "num_buffers_warp_spec", "num_consumer_groups",
        "reg_dec_producer", "reg_inc_consumer", "launch_cooperative_grid", "debug", "device",
        "device_type", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "extern_libs",
        "enable_persistent", "launch_pdl", "schedule_hint", "instruction_sched_variant",
    }
)
_MAX_HOPS = 4


@dataclass(slots=True)
class BoundLaunch:
    launch: Launch
    module: ModuleModel  # where the launch is written
    kernel: Kernel
    kernel_module: ModuleModel  # where the kernel is defined
    bound: dict[str, ArgOrigin] = field(default_factory=dict)  # kernel parameter -> argument origin


def bind(launch: Launch, kernel: Kernel) -> dict[str, ArgOrigin] | None:
    """Parameter -> argument origin, as Python binds the call; None when the call cannot be this kernel's.

    Arguments that cannot be placed (after an unresolved ``*args``) are left out.
    """
    params = sorted(kernel.params, key=lambda p: p.position)
    names = [p.name for p in params]
    bound: dict[str, ArgOrigin] = {}
    if len(launch.args) > len(params):
        return None
    for p, arg in zip(params, launch.args):
        bound[p.name] = arg
    for key, arg in launch.kwargs.items():
        if key in names:
            if key in bound:
                # Python refuses the call ("multiple values"); the positional argument is the one
                # that lands where the launch's author did not expect it, so it stays bound.
                continue
            bound[key] = arg
        elif key not in LAUNCH_OPTIONS and not launch.star_args:
            # `kernel.run(..., grid=..., warmup=...)` options are known; any other unknown keyword
            # means this is not a call of this kernel (or a Triton option we do not know: skip).
            return None
    return bound


_SHAPE_KINDS = (OriginKind.SHAPE, OriginKind.NUMEL, OriginKind.PRODUCT)
# `splits * n`: a product of plain integers (no `.stride(`) is a product of sizes.
_PRODUCT = re.compile(r"\(?\s*[A-Za-z_][\w.]*(\s*\*\s*[A-Za-z_0-9][\w.]*)+\s*\)?")


def mentions_stride(o: ArgOrigin) -> bool:
    """The argument is built from ``.stride(`` (a stride, or a product with one)."""
    if o.kind is OriginKind.STRIDE or ".stride(" in o.text or ".stride()" in o.text:
        return True
    return any(mentions_stride(f) for f in o.factors)


def shape_like(o: ArgOrigin) -> bool:
    """The argument is a shape, an element count or a product of them (no stride in it)."""
    return (o.kind in _SHAPE_KINDS or (o.kind is OriginKind.OTHER and bool(_PRODUCT.fullmatch(o.text)))) \
        and not mentions_stride(o)


def launch_roles(kernel: Kernel, launches: Sequence["BoundLaunch"]) -> dict[str, ParamKind]:
    """What the launches show of the non-pointer parameters (see :meth:`Tree._refine_roles`)."""
    out: dict[str, ParamKind] = {}
    for p in kernel.params:
        if p.kind is ParamKind.POINTER:
            continue
        got = [bl.bound[p.name] for bl in launches if p.name in bl.bound]
        if not got:
            continue
        if all(o.kind is OriginKind.TENSOR and o.is_tensor for o in got):
            out[p.name] = ParamKind.POINTER  # `A` bound to a tensor: a pointer whatever its name
        elif all(mentions_stride(o) for o in got):
            if p.kind in (ParamKind.SCALAR, ParamKind.SIZE, ParamKind.CONSTEXPR):
                out[p.name] = ParamKind.STRIDE
        elif all(shape_like(o) for o in got) and p.kind in (ParamKind.SCALAR, ParamKind.CONSTEXPR):
            out[p.name] = ParamKind.SIZE
    return out


def dead_for(access, kernel: Kernel, launches) -> bool:
    """Whether every launch compiles ``access`` away: a branch it sits under tests a parameter
    (a ``tl.constexpr``, or a ``None`` argument, which Triton specialises) that each launch sets,
    or leaves at its default, to a value failing the test (``if HAS_SHIFT:`` and ``HAS_SHIFT=False``)."""
    import ast as _ast

    if not access.conditions or not launches:
        return False
    for bl in launches:
        killed = False
        for c in access.conditions:
            p = kernel.param(c.param)
            if p is None or (c.test != "none" and not p.constexpr):
                continue
            o = bl.bound.get(c.param)
            text = o.const if o is not None else p.default
            if o is not None and o.const is None:
                continue
            if text is None:
                continue
            try:
                value = _ast.literal_eval(text)
            except (ValueError, SyntaxError):
                continue
            if c.holds(value) is False:
                killed = True
                break
        if not killed:
            return False
    return True


_NOT_PACKAGE_CODE = frozenset({"tests", "test", "testing", "benchmarks", "benchmark", "examples", "docs", "__pycache__"})


_LIBRARY_ROOTS = frozenset({"tl", "triton", "torch", "np", "numpy", "math", "os", "sys", "F", "nn", "functools",
                            "itertools", "operator", "re", "json", "logging", "libdevice", "cuda", "hip"})


def _mention(raw: bytes, at: int, needle: bytes, in_init: bool) -> str | None:
    """What one mention of a function's name (at byte ``at`` of its line ``raw``) is: None when
    it is not a use (a comment, the definition, an import that keeps the name: the module's later
    mention of it is the use; in an ``__init__.py``, a re-export or an ``__all__`` entry),
    "registered" on a line that registers an operator, "use" otherwise (a call, a table entry, an
    import under another name)."""
    line = raw.strip()
    after = raw[at + len(needle):].lstrip()
    if line.startswith(b"#"):
        return None
    head = line.split(b"(")[0]
    if head.endswith(b"def " + needle) or head == b"class " + needle or line.startswith(b"class " + needle + b":"):
        return None
    before = raw[:at]
    if before.endswith(b"."):
        # `tl.store`, `torch.ops.pkg.name`: an attribute of a library, not this function.
        chain = re.search(rb"([A-Za-z_][\w.]*)\.$", before)
        if chain is not None and chain.group(1).split(b".")[0].decode() in _LIBRARY_ROOTS:
            return None
    # Words in a comment, a string or a docstring's `name` are not calls.
    if before.endswith(b"`") or b"#" in before.replace(b"'#'", b"").replace(b'"#"', b""):
        return None
    if (before.count(b'"') - before.count(b'\\"')) % 2 or (before.count(b"'") - before.count(b"\\'")) % 2:
        return None
    aliased = after.startswith(b"as ")
    if line.startswith((b"from ", b"import ")) and not aliased:
        return None
    if in_init and not aliased and line.rstrip(b",").strip() == needle:
        return None  # a name in a multi-line import's list (`__all__`'s strings are strings)
    if re.search(rb"regist|custom_op|\.impl\(|library", line):
        return "registered"
    return "use"


def _ident_byte(b: int) -> bool:
    return b == 95 or 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122


def _package_root(path: str, known: dict[str, bool] | None = None) -> str:
    """The outermost package above ``path`` (see :func:`~stridecheck.lint.engine.import_root`):
    the topmost directory holding an ``__init__.py`` reached through directories whose names are
    identifiers; the file's own directory when it is in none. ``known`` caches, per directory,
    whether it holds an ``__init__.py`` (one run's :class:`Tree` keeps one)."""
    from stridecheck.lint.engine import import_root

    here = os.path.dirname(path)
    root = import_root(here, known)
    if root is None:
        return here
    rel = os.path.relpath(here, root).split(os.sep)
    return os.path.join(root, rel[0])


def private_path(path: str, known: dict[str, bool] | None = None) -> bool:
    """Whether a module sits under a private package (a directory named `_x`, not a dunder)
    inside its package: its functions are the package's internals, whatever their names."""
    abspath = os.path.abspath(path)
    root = _package_root(abspath, known)
    rel = os.path.relpath(abspath, os.path.dirname(root)).replace("\\", "/").split("/")
    return any(p.startswith("_") and not p.startswith("__") for p in rel)


def _path_keys(path: str) -> list[str]:
    """Dotted suffixes a module at ``path`` may be imported as: a/b/pkg/k.py -> k, pkg.k, b.pkg.k..."""
    parts = path.replace("\\", "/").split("/")
    if not parts or not parts[-1].endswith(".py"):
        return []
    last = parts[-1][:-3]
    parts = [p for p in parts[:-1] if p not in ("", ".")]
    if last != "__init__":
        parts.append(last)
    keys = []
    for i in range(len(parts) - 1, -1, -1):
        keys.append(".".join(parts[i:]))
    return keys


def _resolve_relative(model: ModuleModel, name: str) -> str | None:
    """``..kernels._k`` as written in ``model`` -> absolute dotted name, from its module or path."""
    dots = len(name) - len(name.lstrip("."))
    rest = name[dots:]
    if model.module:
        pkg = model.module.split(".")
        if pkg[-1] == "__init__":
            pkg = pkg[:-1]
        elif not model.path.replace("\\", "/").endswith("__init__.py"):
            pkg = pkg[:-1]
    else:
        parts = [p for p in model.path.replace("\\", "/").split("/")[:-1] if p not in ("", ".")]
        pkg = parts
    if dots - 1 > len(pkg):
        return None
    base = pkg[: len(pkg) - (dots - 1)]
    return ".".join([*base, rest] if rest else base) or None


class Tree:
    """All module models of one run, with kernels indexed and launches bound."""

    def __init__(self, models: Sequence[ModuleModel]):
        self.models = list(models)
        self._launches: dict[tuple[str, str], list[BoundLaunch]] = defaultdict(list)
        self._strides_fns: dict[tuple[str, str], bool] = {}
        self._trees: dict[str, object] = {}
        self._by_module: dict[str, list[ModuleModel]] = defaultdict(list)
        for model in self.models:
            self._index(model)
        self._kernels = {id(m): {k.name: k for k in m.kernels} for m in self.models}
        self._bound_launches: list[BoundLaunch] = []
        for model in self.models:
            for launch in model.launches:
                found = self.resolve(model, launch)
                if found is None:
                    continue
                kmodel, kernel = found
                bound = bind(launch, kernel)
                if bound is None:
                    continue
                for name, origin in bound.items():
                    if origin.alloc_call:
                        kind = self._returns_contiguous(model, origin.alloc_call)
                        if kind == "fresh":
                            bound[name] = replace(origin, fresh=True, contiguous=True, contiguous_in_module=True,
                                                  vetted=("*",), opaque=False)
                        elif kind == "contiguous":
                            bound[name] = replace(origin, contiguous=True, contiguous_in_module=True, opaque=False)
                    if any("@" in k for _, k in origin.known_strides) or any("@" in t for t in origin.same_strides):
                        bound[name] = self._verify_strides(model, bound[name])
                bl = BoundLaunch(launch, model, kernel, kmodel, bound)
                self._launches[(kmodel.path, kernel.name)].append(bl)
                self._bound_launches.append(bl)
        self._refine_roles()
        self._callers: dict[tuple[int, str], list[tuple[ModuleModel, CallSite]]] | None = None
        self._callers_of_name: dict[str, list[ModuleModel]] | None = None
        self._hosts: dict[str, ModuleModel | None] = {}
        self._bytes: dict[str, bytes] = {}
        self._listings: dict[str, list[str]] = {}
        self._modelled = {os.path.abspath(m.path) for m in self.models}
        self._packages: dict[str, tuple[bytes, list[int], list[str]]] = {}
        self._uses: dict[tuple[str, str], tuple[str, str, int] | None] = {}
        self.package_dirs: dict[str, bool] = {}  # directory -> holds an `__init__.py`

    # -- the host side's call graph

    def callers_of(self, model: ModuleModel, qualname: str) -> list[tuple[ModuleModel, CallSite]]:
        """The call sites of the function ``qualname`` of ``model``: in the modules of the tree
        that call its name, and in the files beside it (its directory and the one above) that do
        without mentioning ``triton`` (an internal caller a package keeps apart from its kernels:
        ``chunk_fwd`` calling ``chunk_fwd_intra``). Those modules are read for their calls only
        now, when a layout is asked of one of their callees."""
        key = (id(model), qualname)
        if self._callers is None:
            self._callers = {}
        got = self._callers.get(key)
        if got is not None:
            return got
        cls, _, name = qualname.rpartition(".")
        if cls and name != "forward":
            # A method: called as `self.m(...)` in its class (an `obj.m(...)` elsewhere cannot be
            # told from another class's `m`).
            names, candidates = {name}, [model]

        else:
            names = {cls} if cls else {name}  # `Cls.apply(...)` reaches `forward`
            wanted = next(iter(names))
            candidates = [m for m in self._calling(wanted)
                          if m is model or self._imports(m, wanted) or self._imports_inside(m, wanted)]
            candidates.extend(self._nearby(model, names))
        got = []
        for cm in candidates:
            for site in self.calls_of(cm):
                if not names & set(site.callee.split(".")[-2:]):
                    continue
                if self.resolve_function(cm, site.callee, site.caller) == (model, qualname):
                    got.append((cm, site))
        self._callers[key] = got
        return got

    def _calling(self, name: str) -> list[ModuleModel]:
        """The models of the tree that call ``name`` (in ``called``), in tree order: an index built
        on first use, instead of a scan of every model for each function whose callers are asked."""
        if self._callers_of_name is None:
            index: dict[str, list[ModuleModel]] = defaultdict(list)
            for m in self.models:
                for called in m.called:
                    index[called].append(m)
            self._callers_of_name = dict(index)
        return self._callers_of_name.get(name, [])

    def use_elsewhere(self, model: ModuleModel, name: str) -> tuple[str, str, int] | None:
        """Where ``model``'s package names ``name`` other than where it is defined: ("use", path,
        line) for a mention the call graph did not follow (an import inside a method, a module
        alias, a registry, a call on another object: callers out of the analysis' sight), or
        ("registered", path, line) when the only mentions register it as an operator
        (``direct_register_custom_op(..., op_func=name)``, ``lib.impl("op", name)``). None when
        nothing outside its definition names it: an entry point of the package's users.
        The package is the outermost directory with an ``__init__.py`` above the module (see
        :func:`_package_root`); its tests, benchmarks and examples are not read, and an import or
        a re-export is not a use (:func:`_mention`)."""
        root = _package_root(os.path.abspath(model.path), self.package_dirs)
        key = (root, name)
        if key in self._uses:
            return self._uses[key]
        blob, starts, paths = self._package_text(root)
        needle = name.encode()
        found: tuple[str, str, int] | None = None
        pos = blob.find(needle)
        while pos >= 0:
            end = pos + len(needle)
            if (pos == 0 or not _ident_byte(blob[pos - 1])) and (end >= len(blob) or not _ident_byte(blob[end])):
                lo = blob.rfind(b"\n", 0, pos) + 1
                hi = blob.find(b"\n", end)
                i = bisect.bisect_right(starts, pos) - 1
                kind = _mention(blob[lo:hi if hi >= 0 else len(blob)], pos - lo, needle,
                                paths[i].endswith("__init__.py"))
                if kind is not None:
                    at = (paths[i], blob.count(b"\n", starts[i], pos) + 1)
                    if kind == "registered":
                        found = found or ("registered", *at)
                    else:
                        found = ("use", *at)
                        break
            pos = blob.find(needle, end)
        self._uses[key] = found
        return found

    def _package_text(self, root: str) -> tuple[bytes, list[int], list[str]]:
        got = self._packages.get(root)
        if got is not None:
            return got
        parts, starts, paths, at = [], [], [], 0
        # A file in no package shares only its own directory with the modules that import it.
        in_package = os.path.isfile(os.path.join(root, "__init__.py"))
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in _NOT_PACKAGE_CODE and not x.startswith(".")) \
                if in_package else []
            for f in sorted(files):
                if not f.endswith(".py") or f == "conftest.py" or f.startswith("test_") \
                        or f.endswith("_test.py"):
                    continue
                path = os.path.join(d, f)
                try:
                    with open(path, "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                starts.append(at)
                paths.append(path)
                parts.append(data)
                parts.append(b"\n\x00\n")
                at += len(data) + 3
        got = self._packages[root] = (b"".join(parts), starts, paths)
        return got

    @staticmethod
    def _imports(model: ModuleModel, name: str) -> bool:
        """Whether ``model`` imports ``name`` (`from pkg.mod import name`), or a module it may reach
        it through (`import pkg.mod as m` ... `m.name(...)`: the name is not on the import line)."""
        for local, full in model.imports.items():
            if local == name or full.endswith("." + name):
                return True
        return False

    def _imports_inside(self, model: ModuleModel, name: str) -> bool:
        """Whether a function of ``model`` imports ``name`` in its body and calls it (its calls
        then name it ``@pkg.mod.name``, or ``@.mod.name`` relative to ``model``)."""
        return any(s.callee.startswith("@") and s.callee.rsplit(".", 1)[-1] == name for s in self.calls_of(model))

    def calls_of(self, model: ModuleModel) -> list[CallSite]:
        """A module's call sites (read from its file on first use)."""
        if model.calls is None:
            self._read_calls(model)
        return model.calls or []

    def attrs_of(self, model: ModuleModel) -> dict[str, dict[str, str]]:
        if model.attrs is None:
            self._read_calls(model)
        return model.attrs or {}

    def _read_calls(self, model: ModuleModel) -> None:
        from stridecheck.lint.access_model import read_calls
        from stridecheck.lint.engine import decode_source

        try:
            with open(model.path, "rb") as fh:
                text, _ = decode_source(fh.read())
            model.calls, model.attrs = read_calls(text, model.functions)
        except Exception:  # noqa: BLE001 - context only: a file that cannot be read again adds nothing
            model.calls, model.attrs = [], {}

    def _nearby(self, model: ModuleModel, names: set[str]) -> list[ModuleModel]:
        """Modules read for their calls only: files beside ``model`` (its directory and the one
        above) that the run did not model (no `triton` in them) and that call one of ``names``."""
        from stridecheck.lint.access_model import build_host_model
        from stridecheck.lint.engine import decode_source, module_name

        here = os.path.dirname(os.path.abspath(model.path))
        out = []
        for d in (here, os.path.dirname(here)):
            for path in self._listing(d):
                data = self._bytes.get(path)
                if data is None:
                    try:
                        with open(path, "rb") as fh:
                            data = self._bytes[path] = fh.read()
                    except OSError:
                        continue
                if not any(n.encode() in data for n in names):
                    continue
                host = self._hosts.get(path, False)
                if host is False:
                    host = None
                    try:
                        text, _ = decode_source(data)
                        host = build_host_model(text, path=path, module=module_name(path))
                    except Exception:  # noqa: BLE001 - a file read for context never fails the run
                        host = None
                    self._hosts[path] = host
                    if host is not None:
                        self._index(host)  # its own callers resolve their imports of it
                if host is not None:
                    out.append(host)
        return out

    def _listing(self, directory: str) -> list[str]:
        """The ``.py`` files of a directory that the run did not model."""
        got = self._listings.get(directory)
        if got is None:
            try:
                entries = sorted(os.listdir(directory))
            except OSError:
                entries = []
            got = self._listings[directory] = [
                p for e in entries if e.endswith(".py") and (p := os.path.join(directory, e)) not in self._modelled
            ]
        return got

    def resolve_function(self, model: ModuleModel, name: str, caller: str = "",
                         hops: int = _MAX_HOPS) -> tuple[ModuleModel, str] | None:
        """The function a call reaches (``f``, ``mod.f``, ``self.m``, ``Cls.apply`` -> its
        ``forward``), as (model, qualified name), or None."""
        if hops <= 0:
            return None
        if name.startswith("@"):  # imported inside the calling function: an absolute name
            full = name[1:]
            if full.startswith("."):  # or one relative to the caller's module
                full = _resolve_relative(model, full)
                if full is None:
                    return None
            parts = full.split(".")
            for cut in range(len(parts) - 1, 0, -1):
                target = self.module_named(".".join(parts[:cut]), near=model)
                if target is not None:
                    remaining = ".".join(parts[cut:])
                    return (target, remaining) if remaining in target.functions else None
            return None
        head, _, rest = name.partition(".")
        if head == "self":
            cls = caller.split(".")[0] if "." in caller else None
            q = f"{cls}.{rest}" if cls else None
            return (model, q) if q in model.functions else None
        if rest == "apply" and f"{head}.forward" in model.functions:
            return model, f"{head}.forward"
        if not rest and name in model.functions:
            return model, name
        imported = model.imports.get(head)
        if imported is None:
            return None
        if imported.startswith("."):
            imported = _resolve_relative(model, imported)
            if imported is None:
                return None
        parts = (imported + ("." + rest if rest else "")).split(".")
        for cut in range(len(parts) - 1, 0, -1):
            target = self.module_named(".".join(parts[:cut]), near=model)
            if target is None:
                continue
            remaining = ".".join(parts[cut:])
            if remaining in target.functions:
                return target, remaining
            if remaining.endswith(".apply") and remaining[:-6] + ".forward" in target.functions:
                return target, remaining[:-6] + ".forward"
            if "." not in remaining and remaining in target.imports:
                return self.resolve_function(target, remaining, "", hops - 1)
            return None
        return None

    def _refine_roles(self) -> None:
        """Re-classify the parameters whose launches say what they are: every resolved launch
        feeds a ``.stride(``-built value (a stride, whatever its name or annotation), or every one
        a shape, ``numel`` or a product of them (a size; a stride-named parameter keeps its role,
        SC004 reports what it is fed). The kernel's terms are re-split to match."""
        by_model = {id(m): m for m in self.models}
        for (path, name), bls in self._launches.items():
            kernel = bls[0].kernel
            roles = launch_roles(kernel, bls)
            refined = refine_kernel(kernel, roles)
            live = [a for a in refined.accesses if not dead_for(a, refined, bls)]
            if len(live) != len(refined.accesses):
                refined = replace(refined, accesses=live)
            if refined is kernel:
                continue
            kmodel = by_model[id(bls[0].kernel_module)]
            kmodel.kernels = [refined if k is kernel else k for k in kmodel.kernels]
            self._kernels[id(kmodel)][name] = refined
            for bl in bls:
                bl.kernel = refined

    def _index(self, model: ModuleModel) -> None:
        """Make ``model`` findable by the dotted names it may be imported as."""
        keys = set(_path_keys(model.path))
        if model.module:
            keys.add(model.module)
            if model.module.endswith(".__init__"):
                keys.add(model.module[: -len(".__init__")])
        for key in keys:
            self._by_module[key].append(model)

    def kernels(self) -> Iterator[tuple[ModuleModel, Kernel]]:
        for model in self.models:
            for kernel in model.kernels:
                yield model, kernel

    def launches_of(self, model: ModuleModel, kernel: Kernel) -> list[BoundLaunch]:
        """Every resolved launch of ``kernel`` (defined in ``model``) in the tree."""
        return self._launches.get((model.path, kernel.name), [])

    def bound_launches(self) -> list[BoundLaunch]:
        """Every resolved launch of the tree, in model order."""
        return self._bound_launches

    # -- resolution

    def module_named(self, dotted_name: str, near: ModuleModel | None = None) -> ModuleModel | None:
        """The module of the tree imported as ``dotted_name``. Where several fit (a package
        vendored into another, `fla.ops.x` and `pkg._vendored.fla.ops.x`), the one nearest
        ``near`` (the importing module: the longest common path) wins, then an exact dotted name."""
        found = self._by_module.get(dotted_name)
        if found and len(found) == 1:
            return found[0]
        if not found:
            return None
        if near is not None:
            def shared(m: ModuleModel) -> int:
                a, b = (os.path.abspath(x).replace("\\", "/").split("/") for x in (m.path, near.path))
                n = 0
                while n < min(len(a), len(b)) and a[n] == b[n]:
                    n += 1
                return n
            best = max(shared(m) for m in found)
            nearest = [m for m in found if shared(m) == best]
            if len(nearest) == 1:
                return nearest[0]
            found = nearest
        exact = [m for m in found if m.module == dotted_name]
        if len(exact) == 1:
            return exact[0]
        return None

    def resolve(self, model: ModuleModel, launch: Launch) -> tuple[ModuleModel, Kernel] | None:
        """The kernel a launch reaches, or None when it cannot be told."""
        target = launch.resolved_target or launch.target
        return self._lookup(model, target, _MAX_HOPS)

    def _lookup(self, model: ModuleModel, name: str, hops: int) -> tuple[ModuleModel, Kernel] | None:
        if hops <= 0:
            return None
        alias = model.kernel_aliases.get(name)
        if alias is not None and alias != name:
            return self._lookup(model, alias, hops - 1)
        head, _, rest = name.partition(".")
        if not rest:
            kernel = self._kernels[id(model)].get(name)
            if kernel is not None:
                return model, kernel
        if head in model.kernel_aliases and rest:
            return self._lookup(model, model.kernel_aliases[head] + "." + rest, hops - 1)
        imported = model.imports.get(head)
        if imported is None:
            return None
        if imported.startswith("."):
            imported = _resolve_relative(model, imported)
            if imported is None:
                return None
        full = imported + ("." + rest if rest else "")
        return self._lookup_absolute(full, hops - 1, near=model)

    def _verify_strides(self, model: ModuleModel, origin):
        """``origin`` with the stride facts a check made through an imported function
        (``assert safe_stride(k, 4)[:2] == safe_stride(v, 4)[:2]``: keys marked ``@function(args)``)
        kept where that function returns its first argument's strides, dropped elsewhere."""
        def keep(key: str) -> str | None:
            if "@" not in key:
                return key
            value, _, via = key.partition("@")
            return value if self._returns_strides(model, via.split("(")[0]) else None

        known = tuple((d, k2) for d, k in origin.known_strides if (k2 := keep(k)) is not None)
        same = tuple(sorted({t2 for t in origin.same_strides if (t2 := keep(t)) is not None}))
        return replace(origin, known_strides=known, same_strides=same)

    def _returns_strides(self, model: ModuleModel, full: str, hops: int = _MAX_HOPS) -> bool:
        """Whether ``full`` (as ``model`` imports it) is a function that returns its first
        argument's strides (:func:`~stridecheck.lint.launches.returns_strides`), read from its
        module's source (a module the run may not model: one that never mentions triton)."""
        from stridecheck.lint.launches import imports_of, returns_strides

        if hops <= 0 or not full:
            return False
        if full.startswith("."):
            full = _resolve_relative(model, full) or ""
        key = (os.path.abspath(model.path), full)
        got = self._strides_fns.get(key)
        if got is not None:
            return got
        self._strides_fns[key] = False
        parts = full.split(".")
        here = os.path.dirname(os.path.abspath(model.path))
        depth = len(model.module.split(".")) - 1 if model.module else 0
        root = here
        for _ in range(depth):
            root = os.path.dirname(root)
        found = False
        if len(parts) >= 2:
            base = os.path.join(root, *parts[:-1])
            for path in (base + ".py", os.path.join(base, "__init__.py")):
                tree = self._source_tree(path)
                if tree is None:
                    continue
                fn = next((st for st in tree.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and st.name == parts[-1]), None)
                if fn is not None:
                    found = returns_strides(fn)
                else:
                    again = imports_of(tree, ".".join(parts[:-1]), path).get(parts[-1])
                    if again:
                        found = self._returns_strides(model, again, hops - 1)
                break
        self._strides_fns[key] = found
        return found

    def _source_tree(self, path: str):
        """The parsed source of ``path`` (None when it cannot be read or parsed), read once."""
        if path in self._trees:
            return self._trees[path]
        tree = None
        try:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError, ValueError):
            tree = None
        self._trees[path] = tree
        return tree

    def _returns_contiguous(self, model: ModuleModel, full: str, hops: int = _MAX_HOPS) -> str | None:
        """"fresh" / "contiguous" when ``full`` (as ``model`` imports it) is a function of the tree
        whose every return is a new contiguous tensor / a contiguous tensor; else None. Follows
        re-exports (``from .shape_utils import dim_compress`` in a package ``__init__``)."""
        if hops <= 0:
            return None
        if full.startswith("."):
            full = _resolve_relative(model, full) or ""
        parts = full.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            target = self.module_named(".".join(parts[:cut]), near=model)
            if target is not None:
                if len(parts) - cut != 1:
                    return None
                if parts[-1] in target.allocators:
                    return "fresh"
                if parts[-1] in target.contiguous_returns:
                    return "contiguous"
                again = target.imports.get(parts[-1])
                return self._returns_contiguous(target, again, hops - 1) if again else None
        # `from pkg.utils import f` where pkg/utils/__init__.py only re-exports (and, never
        # mentioning triton, is not linted): the one module of that package defining f.
        package, name = ".".join(parts[:-1]), parts[-1]
        if package:
            found = {
                ("fresh" if name in m.allocators else "contiguous")
                for m in self.models
                if m.module and m.module.startswith(package + ".") and name in m.contiguous_returns
            }
            if len(found) == 1:
                return found.pop()
        return None

    def _lookup_absolute(self, full: str, hops: int, near: ModuleModel | None = None
                         ) -> tuple[ModuleModel, Kernel] | None:
        """``pkg.kernels._k``: the longest prefix that is a module of the tree, then the rest in it."""
        parts = full.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            target = self.module_named(".".join(parts[:cut]), near=near)
            if target is not None:
                return self._lookup(target, ".".join(parts[cut:]), hops)
        return None
