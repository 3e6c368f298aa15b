"""The parsed context: resolution of names and folding of strings, shared by every detector."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kernelproof.checks.static_scan.findings import StaticCheck, make_finding
from kernelproof.checks.static_scan.rules import (
    ATTRIBUTE_ACCESSORS,
    CUPY_KERNELS,
    DYNAMIC_IMPORTERS,
    EXTENSION_LOADERS,
    KERNEL_DECORATOR_LEAVES,
    MAX_FOLD_DEPTH,
    MAX_FOLDED_CHARS,
    MAX_SNIPPET_CHARS,
    PYTHON_BUILTINS,
    RULES,
    STRING_CASE_METHODS,
    TORCH_OPS_BUILTIN_NAMESPACES,
    WATCHED_ROOTS,
)
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def has_prefix(name: str, prefixes: Iterable[str]) -> bool:
    """Whether ``name`` is one of ``prefixes`` or lies under one (component-wise)."""
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def dotted_name(node: ast.AST) -> str | None:
    """The plain dotted text of a ``Name``/``Attribute`` chain (``self.ext``), else ``None``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _root_name(node: ast.AST) -> ast.Name | None:
    """The ``Name`` at the bottom of an attribute/subscript/call chain, if there is one."""
    while True:
        if isinstance(node, ast.Name):
            return node
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _canonical(name: str) -> str:
    """Strip the builtins namespace: ``builtins.exec`` and ``__builtins__.exec`` are ``exec``."""
    for prefix in ("builtins.", "__builtins__."):
        if name.startswith(prefix):
            rest = name[len(prefix) :]
            return f"builtins.{rest}" if rest.startswith("__dict__") else rest
    return "builtins" if name == "__builtins__" else name


def assignment_pairs(node: ast.AST) -> Iterator[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of an assignment, unpacking ``a, b = x, y`` element-wise."""
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            if len(target.elts) == len(value.elts):
                yield from zip(target.elts, value.elts)
        else:
            yield target, value


def call_argument(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    """A call's argument by keyword, or by position when given."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if position is not None and len(call.args) > position:
        argument = call.args[position]
        return None if isinstance(argument, ast.Starred) else argument
    return None


class Context:
    """One parsed source file with the tables every detector shares."""

    def __init__(self, source: str, path: str, tree: ast.Module) -> None:
        self.source = source
        self.path = path
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        self.import_aliases: dict[str, str] = {}
        self.import_roots: set[str] = set()
        self.star_modules: list[str] = []
        self.alias_sources: dict[str, list[ast.expr]] = defaultdict(list)
        self.constant_sources: dict[str, list[ast.expr]] = defaultdict(list)
        self.bound_names: set[str] = set()
        self.module_names: set[str] = set()
        self.class_names: set[str] = set()
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = defaultdict(list)
        self.custom_kernels: list[str] = []
        self.custom_roots: set[str] = set()
        self.custom_dotted: set[str] = set()
        self.custom_methods: set[str] = set()
        self.extension_calls: list[ast.Call] = []
        self._alias_memo: dict[str, str | None] = {}
        self._alias_pending: set[str] = set()
        self._constant_pending: set[str] = set()
        self._constant_memo: dict[str, str | None] = {}
        self.fingerprint_memo: dict[str, str | None] = {}
        self._references: list[tuple[ast.expr, str]] | None = None
        self.nodes: list[ast.AST] = list(ast.walk(tree))
        """Every node once, in breadth-first order: detectors iterate this, not the tree."""
        self._index()
        self._find_custom_kernels()
        self._alias_memo.clear()  # aliases to custom kernels are known only now

    # -- indexing ------------------------------------------------------------------------------

    def _index(self) -> None:
        for statement in self.tree.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                for target, _ in assignment_pairs(statement):
                    if isinstance(target, ast.Name):
                        self.module_names.add(target.id)
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.import_aliases[alias.asname] = alias.name
                        self.bound_names.add(alias.asname)
                    else:
                        top = alias.name.split(".")[0]
                        self.import_aliases[top] = top
                    self.import_roots.add(alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if module:
                    self.import_roots.add(module.split(".")[0])
                for alias in node.names:
                    if alias.name == "*":
                        self.star_modules.append(module)
                        continue
                    local = alias.asname or alias.name
                    self.import_aliases[local] = f"{module}.{alias.name}" if module else alias.name
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                for target, value in assignment_pairs(node):
                    dotted = dotted_name(target)
                    if dotted is not None:
                        self.alias_sources[dotted].append(value)
                    if isinstance(target, ast.Name):
                        self.constant_sources[target.id].append(value)
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                self.bound_names.add(node.id)
            elif isinstance(node, ast.arg):
                self.bound_names.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.bound_names.add(node.name)
                self.functions[node.name].append(node)
            elif isinstance(node, ast.ClassDef):
                self.bound_names.add(node.name)
                self.class_names.add(node.name)
            elif isinstance(node, ast.Global):
                self.module_names.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.bound_names.add(node.name)

    def _find_custom_kernels(self) -> None:
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self._is_kernel_decorator(d) for d in node.decorator_list):
                    self._add_custom(node.name)
                    self.custom_roots.add(node.name)
                    if isinstance(self.parents.get(node), ast.ClassDef):
                        self.custom_methods.add(node.name)
            elif isinstance(node, ast.Call):
                self._record_kernel_factory(node)

    def _record_kernel_factory(self, call: ast.Call) -> None:
        """Record a loader/jit/RawKernel call and the variable its result is bound to."""
        function = self.resolve(call.func)
        names: list[str] = []
        if function in EXTENSION_LOADERS:
            self.extension_calls.append(call)
            name = self.fold(call_argument(call, "name", 0))
            if name:
                names.append(name)
            position = 3 if "inline" in function else None  # load() takes no positional list
            names.extend(self.fold_list(call_argument(call, "functions", position)))
        elif function in CUPY_KERNELS:
            name = self.fold(call_argument(call, "name", 1))
            if name:
                names.append(name)
        elif self._is_kernel_decorator(call.func) and call.args:
            wrapped = dotted_name(call.args[0])  # numba.njit(f) / cuda.jit(f): the kernel is f
            if wrapped:
                names.append(wrapped.split(".")[-1])
        elif (
            isinstance(call.func, ast.Call)
            and call.args
            and self._is_kernel_decorator(call.func.func)
        ):
            wrapped = dotted_name(call.args[0])  # numba.njit(parallel=True)(f)
            if wrapped:
                names.append(wrapped.split(".")[-1])
        else:
            return
        for name in names:
            self._add_custom(name)
        parent = self.parents.get(call)
        for target, value in assignment_pairs(parent) if parent is not None else ():
            dotted = dotted_name(target)
            if value is call and dotted is not None:
                self.custom_dotted.add(dotted)
                if "." not in dotted:
                    self.custom_roots.add(dotted)

    def _add_custom(self, name: str) -> None:
        if name not in self.custom_kernels:
            self.custom_kernels.append(name)

    def _is_kernel_decorator(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = self.resolve(target)
        if name is None:
            return False
        parts = name.split(".")
        if parts[0] in {"numba", "triton"} and parts[-1] in KERNEL_DECORATOR_LEAVES:
            return True
        return len(parts) == 1 and name in {"jit", "njit"} and name not in self.bound_names

    # -- string folding ------------------------------------------------------------------------

    def fold(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """The string an expression builds from literals alone, or ``None`` if it is not one.

        Handles literals, ``+``, f-strings, ``"sep".join([...])``, ``.format``, case changes,
        ``.replace``, slicing with constants, ``bytes.decode`` and names bound once to such a
        string.
        """
        if node is None or depth > MAX_FOLD_DEPTH:
            return None
        value = self._fold(node, depth + 1)
        return value if value is None or len(value) <= MAX_FOLDED_CHARS else None

    def _fold(self, node: ast.AST, depth: int) -> str | None:
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.fold(node.left, depth), self.fold(node.right, depth)
            return None if left is None or right is None else left + right
        if isinstance(node, ast.JoinedStr):
            return self._fold_fstring(node, depth)
        if isinstance(node, ast.Name):
            return self._fold_name(node.id, depth)
        if isinstance(node, ast.Call):
            return self._fold_call(node, depth)
        if isinstance(node, ast.Subscript):
            return self._fold_slice(node, depth)
        return None

    def _fold_fstring(self, node: ast.JoinedStr, depth: int) -> str | None:
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                if part.format_spec is not None:
                    return None
                text = self.fold(part.value, depth)
            else:
                text = self.fold(part, depth)
            if text is None:
                return None
            parts.append(text)
        return "".join(parts)

    def _fold_name(self, name: str, depth: int) -> str | None:
        if name in self._constant_memo:  # memoised: ``b = a + a; c = b + b`` must stay linear
            return self._constant_memo[name]
        sources = self.constant_sources.get(name, [])
        if not sources or name in self._constant_pending:
            return None
        self._constant_pending.add(name)
        try:
            values = {self.fold(source, depth) for source in sources}
        finally:
            self._constant_pending.discard(name)
        result = values.pop() if len(values) == 1 else None
        self._constant_memo[name] = result
        return result

    def _fold_call(self, node: ast.Call, depth: int) -> str | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            return self.fold(node.args[0], depth)
        if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1:
            code = node.args[0]
            if isinstance(code, ast.Constant) and isinstance(code.value, int):
                return chr(code.value) if 0 <= code.value <= 0x10FFFF else None
            return None
        if not isinstance(func, ast.Attribute):
            return None
        raw = func.value.value if isinstance(func.value, ast.Constant) else None
        if func.attr == "decode" and isinstance(raw, bytes):
            try:
                return raw.decode()
            except UnicodeDecodeError:
                return None
        receiver = self.fold(func.value, depth)
        if receiver is None:
            return None
        if func.attr == "join" and len(node.args) == 1:
            pieces = node.args[0]
            if not isinstance(pieces, (ast.List, ast.Tuple)):
                return None
            items = [self.fold(item, depth) for item in pieces.elts]
            known = [item for item in items if item is not None]
            return receiver.join(known) if len(known) == len(items) else None
        if func.attr in STRING_CASE_METHODS and not node.args:
            return str(getattr(receiver, func.attr)())
        if func.attr == "replace" and len(node.args) == 2:
            old, new = self.fold(node.args[0], depth), self.fold(node.args[1], depth)
            return None if old is None or new is None else receiver.replace(old, new)
        if func.attr == "format":
            args = [self.fold(a, depth) for a in node.args]
            kwargs = {k.arg: self.fold(k.value, depth) for k in node.keywords if k.arg}
            if any(a is None for a in args) or any(v is None for v in kwargs.values()):
                return None
            try:
                return receiver.format(*args, **kwargs)
            except (IndexError, KeyError, ValueError):
                return None
        return None

    def _fold_slice(self, node: ast.Subscript, depth: int) -> str | None:
        if not isinstance(node.slice, ast.Slice):
            return None
        text = self.fold(node.value, depth)
        if text is None:
            return None
        bounds: list[int | None] = []
        for bound in (node.slice.lower, node.slice.upper, node.slice.step):
            if bound is None:
                bounds.append(None)
            elif isinstance(bound, ast.Constant) and isinstance(bound.value, int):
                bounds.append(bound.value)
            elif (
                isinstance(bound, ast.UnaryOp)
                and isinstance(bound.op, ast.USub)
                and isinstance(bound.operand, ast.Constant)
                and isinstance(bound.operand.value, int)
            ):
                bounds.append(-bound.operand.value)
            else:
                return None
        if bounds[2] == 0:
            return None
        return text[slice(*bounds)]

    def fold_list(self, node: ast.AST | None) -> list[str]:
        """Strings of a literal list/tuple (or one string, or a name bound once to either)."""
        if node is None:
            return []
        if isinstance(node, ast.Name):
            sources = self.constant_sources.get(node.id, [])
            if len(sources) == 1 and isinstance(sources[0], (ast.List, ast.Tuple)):
                node = sources[0]
        if isinstance(node, (ast.List, ast.Tuple)):
            return [text for text in (self.fold(item) for item in node.elts) if text]
        single = self.fold(node)
        return [single] if single else []

    # -- name resolution -----------------------------------------------------------------------

    def resolve(self, node: ast.AST | None) -> str | None:
        """The qualified name an expression refers to, through imports and aliases.

        ``t.perf_counter`` after ``import time as t`` is ``time.perf_counter``;
        ``getattr(torch, "comp" + "ile")`` is ``torch.compile``; ``__import__("os").system`` is
        ``os.system``; ``sys.modules["time"]`` is ``time``. Ordinary calls and subscripts give
        ``None``.
        """
        if node is None:
            return None
        if isinstance(node, ast.Name):
            if node.id in self.import_aliases:
                return _canonical(self.import_aliases[node.id])
            aliased = self._alias_of(node.id)
            if aliased is not None:
                return _canonical(aliased)
            unbound = node.id not in self.bound_names and node.id not in PYTHON_BUILTINS
            if self.star_modules and unbound:
                return f"{self.star_modules[-1]}.{node.id}"  # best guess: the last star import
            return _canonical(node.id)
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None:
                return None
            dotted = dotted_name(node)  # ``self.k`` may be bound to a kernel elsewhere
            aliased = self._alias_of(dotted) if dotted is not None else None
            return _canonical(aliased or f"{base}.{node.attr}")
        if isinstance(node, ast.Call):
            return self._resolve_call(node)
        if isinstance(node, ast.Subscript):
            return self._resolve_subscript(node)
        return None

    def _resolve_call(self, node: ast.Call) -> str | None:
        function = self.resolve(node.func)
        if function == "getattr" and len(node.args) >= 2:
            base, attribute = self.resolve(node.args[0]), self.fold(node.args[1])
            if base is not None and attribute is not None:
                return _canonical(f"{base}.{attribute}")
        if function in DYNAMIC_IMPORTERS and node.args:
            module = self.fold(node.args[0])
            if module:
                return module.split(".")[0] if function == "__import__" else module
        return None

    def _resolve_subscript(self, node: ast.Subscript) -> str | None:
        key = self.fold(node.slice)
        if key is None:
            return None
        value = node.value
        if (
            isinstance(value, ast.Call)
            and len(value.args) == 1
            and dotted_name(value.func) == "vars"
        ):
            base = self.resolve(value.args[0])
            return None if base is None else _canonical(f"{base}.{key}")
        base = self.resolve(value)
        if base == "sys.modules":
            return key
        if base in {"builtins", "builtins.__dict__"}:
            return _canonical(key)
        if base is not None and base.endswith(".__dict__"):
            return _canonical(f"{base[: -len('.__dict__')]}.{key}")
        return None

    def _alias_of(self, dotted: str) -> str | None:
        """What a name assigned elsewhere stands for, when its value is a watched name."""
        if dotted in self._alias_memo:
            return self._alias_memo[dotted]
        if dotted in self._alias_pending:
            return None
        self._alias_pending.add(dotted)
        result: str | None = None
        try:
            for value in self.alias_sources.get(dotted, []):
                resolved = self.resolve(value)
                if resolved is not None and resolved != dotted and self.is_watched(resolved):
                    result = resolved
                    break
        finally:
            self._alias_pending.discard(dotted)
        self._alias_memo[dotted] = result
        return result

    def is_watched(self, name: str) -> bool:
        """Whether a resolved name is one the scan follows: a module, a builtin, a kernel."""
        root = name.split(".")[0]
        return (
            root in self.import_roots
            or root in WATCHED_ROOTS
            or (name in RULES and RULES[name].builtin)
            or name in {"getattr", "setattr", "delattr", "id", "hash"}
            or root in self.custom_roots
            or any(name == d or name.startswith(d + ".") for d in self.custom_dotted)
        )

    def is_module_attribute(self, name: str) -> bool:
        """Whether ``name`` lives in an imported (or watched) module, not in a local object."""
        root = name.split(".")[0]
        if root in {"self", "cls"} or root in self.class_names or root in self.custom_roots:
            return False
        return root in self.import_roots or root in WATCHED_ROOTS

    def shadows_builtin(self, node: ast.AST, name: str) -> bool:
        """Whether ``name`` is a bare builtin that this file defines for itself."""
        root = _root_name(node)
        return (
            root is not None
            and root.id == name
            and name in self.bound_names
            and self._alias_of(name) is None
            and name not in self.import_aliases
        )

    def is_custom(self, name: str) -> bool:
        """Whether a resolved name is a custom kernel, an extension or one of its functions."""
        parts = name.split(".")
        if parts[0] in self.custom_roots:
            return True
        if any(name == d or name.startswith(d + ".") for d in self.custom_dotted):
            return True
        if len(parts) >= 2 and (parts[0] in {"self", "cls"} or parts[0] in self.class_names):
            return parts[1] in self.custom_methods
        return (
            len(parts) >= 3
            and parts[0] == "torch"
            and parts[1] == "ops"
            and parts[2] not in TORCH_OPS_BUILTIN_NAMESPACES
        )

    # -- helpers for detectors -----------------------------------------------------------------

    def snippet(self, node: ast.AST) -> str:
        """The first line of a node's source, trimmed for evidence."""
        try:
            text = ast.get_source_segment(self.source, node) or ""
        except (IndexError, ValueError):
            text = ""
        first = text.strip().splitlines()[0] if text.strip() else ""
        return first if len(first) <= MAX_SNIPPET_CHARS else first[: MAX_SNIPPET_CHARS - 3] + "..."

    def finding(
        self,
        check: StaticCheck,
        severity: Severity,
        node: ast.AST | None,
        message: str,
        evidence: dict[str, object] | None = None,
        line: int | None = None,
    ) -> Finding:
        """A finding located at ``node`` (or at ``line``, or at the top of the file)."""
        facts: dict[str, object] = dict(evidence or {})
        if node is not None and "code" not in facts:
            facts["code"] = self.snippet(node)
        lineno = line if line else (getattr(node, "lineno", 1) if node is not None else 1)
        column = (getattr(node, "col_offset", 0) + 1) if node is not None and line is None else 1
        return make_finding(self.path, check, severity, lineno, column, message, facts)

    def is_inner_reference(self, node: ast.AST) -> bool:
        """Whether a larger reference contains ``node`` (``time`` inside ``time.time``)."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return True
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
            return self.resolve(parent.func) in ATTRIBUTE_ACCESSORS
        return False

    def references(self) -> list[tuple[ast.expr, str]]:
        """Every outermost name reference read by the code, with its resolved name (cached)."""
        if self._references is None:
            self._references = []
            for node in self.nodes:
                if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
                    if not isinstance(node.ctx, ast.Load):
                        continue
                elif not isinstance(node, ast.Call):
                    continue
                if self.is_inner_reference(node):
                    continue
                name = self.resolve(node)
                if name is not None:
                    self._references.append((node, name))
        return self._references

    def call_targets(self, call: ast.Call) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """Functions defined in this file that a call may invoke (by name, or ``self.name``)."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id in {"self", "cls"} or func.value.id in self.class_names:
                return self.functions.get(func.attr, [])
        return []


def string_constants(context: Context) -> Iterator[tuple[ast.Constant, str]]:
    """Every string literal in the source (C++/CUDA sources live in these)."""
    for node in context.nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node, node.value


@dataclass(frozen=True)
class _SourceMatch:
    """A pattern's matches in one string literal (C++/CUDA source), located on its first."""

    node: ast.Constant
    tokens: list[str]
    """The distinct first groups of every match, sorted."""

    line: int
    """The line of the first match: exact for raw triple-quoted code."""

    code: str
    """That line of the Python source, stripped."""


def source_matches(context: Context, pattern: re.Pattern[str]) -> Iterator[_SourceMatch]:
    """Every string literal in which ``pattern`` matches."""
    source_lines = context.source.splitlines()
    for node, text in string_constants(context):
        first = pattern.search(text)
        if first is None:
            continue
        line = node.lineno + text[: first.start()].count("\n")
        yield _SourceMatch(
            node=node,
            tokens=sorted({match.group(1) for match in pattern.finditer(text)}),
            line=line,
            code=source_lines[line - 1].strip() if line <= len(source_lines) else "",
        )
