"""Caching: state keyed on input pointers, ids, hashes or shapes; memoised forwards."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelproof.checks.static_scan.context import Context, assignment_pairs, dotted_name
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import (
    DICT_KEY_METHODS,
    FINGERPRINT_BUILTINS,
    FINGERPRINT_METHODS,
    FORWARD_NAMES,
    IDENTITY_FINGERPRINTS,
    MEMO_DECORATORS,
)
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def _fingerprint(context: Context, node: ast.AST, seen: frozenset[str] = frozenset()) -> str | None:
    """The strongest input fingerprint inside an expression: pointer, id, hash, content, shape.

    Follows local names (``key = x.data_ptr(); self._cache[key]``) through their assignments.
    """
    kinds: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in seen:
            if sub.id not in context.fingerprint_memo:
                sources = context.constant_sources.get(sub.id, [])
                found = {_fingerprint(context, value, seen | {sub.id}) for value in sources}
                context.fingerprint_memo[sub.id] = _strongest({k for k in found if k is not None})
            kind = context.fingerprint_memo[sub.id]
            if kind is not None:
                kinds.add(kind)
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Attribute) and func.attr in FINGERPRINT_METHODS:
                kinds.add(FINGERPRINT_METHODS[func.attr])
            elif isinstance(func, ast.Attribute) and func.attr == "size":
                kinds.add("shape")
            name = context.resolve(func)
            if name in FINGERPRINT_BUILTINS and not context.shadows_builtin(func, name):
                kinds.add(FINGERPRINT_BUILTINS[name])
            elif name is not None and name.startswith("hashlib."):
                kinds.add("hash")
        elif isinstance(sub, ast.Attribute) and sub.attr == "shape":
            kinds.add("shape")
    return _strongest(kinds)


def _strongest(kinds: set[str]) -> str | None:
    """The fingerprint kind that identifies an input most specifically."""
    for kind in ("pointer", "id", "hash", "content", "shape"):
        if kind in kinds:
            return kind
    return None


def _persistent_containers(context: Context) -> set[str]:
    """Parameters with a mutable default (``def f(x, _cache={})``): they live across calls."""
    found: set[str] = set()
    for definitions in context.functions.values():
        for definition in definitions:
            arguments = definition.args
            positional = arguments.posonlyargs + arguments.args
            with_defaults = positional[len(positional) - len(arguments.defaults) :]
            pairs: list[tuple[ast.arg, ast.expr | None]] = [*zip(with_defaults, arguments.defaults)]
            pairs += list(zip(arguments.kwonlyargs, arguments.kw_defaults))
            for argument, default in pairs:
                if default is None:
                    continue
                if isinstance(default, (ast.Dict, ast.List, ast.Set)) or (
                    isinstance(default, ast.Call)
                    and dotted_name(default.func) in {"dict", "list", "set"}
                ):
                    found.add(argument.arg)
    return found


def _is_persistent(context: Context, node: ast.AST, defaults: set[str]) -> bool:
    """Whether an expression names state that outlives one call (``self.x``, a global, a class)."""
    dotted = dotted_name(node)
    if dotted is None:
        return False
    root = dotted.split(".")[0]
    return (
        (root in {"self", "cls"} and "." in dotted)
        or root in context.module_names
        or root in context.class_names
        or root in defaults
    )


def _cache_sites(context: Context, defaults: set[str]) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, fingerprint kind, container) for lookups and stores keyed on an input fingerprint."""
    for node in context.nodes:
        if isinstance(node, ast.Subscript) and _is_persistent(context, node.value, defaults):
            if any(isinstance(s, ast.Slice) for s in ast.walk(node.slice)):
                continue  # self.pos[: x.size(1)] slices a buffer, it does not look a key up
            kind = _fingerprint(context, node.slice)
            if kind is not None:
                yield node, kind, dotted_name(node.value) or ""
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            container = node.func.value
            if node.func.attr in DICT_KEY_METHODS and _is_persistent(context, container, defaults):
                kind = _fingerprint(context, node.args[0])
                if kind is not None:
                    yield node, kind, dotted_name(node.func.value) or ""
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            containers = [s for s in sides if _is_persistent(context, s, defaults)]
            keys = [s for s in sides if not _is_persistent(context, s, defaults)]
            membership = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
            identity = all(
                isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) for op in node.ops
            )
            for key in keys:
                kind = _fingerprint(context, key)
                keyed = membership or (identity and kind in IDENTITY_FINGERPRINTS)
                if containers and kind is not None and keyed:
                    yield node, kind, dotted_name(containers[0]) or ""
                    break
        for target, value in assignment_pairs(node):
            if isinstance(target, ast.Attribute) and _is_persistent(context, target, defaults):
                kind = _fingerprint(context, value)
                if kind in IDENTITY_FINGERPRINTS:
                    yield node, kind, dotted_name(target) or ""


def _memoised_by_assignment(context: Context) -> Iterator[Finding]:
    """``forward = functools.lru_cache()(forward)``: a memoiser applied without decorator syntax."""
    for node in context.nodes:
        for target, value in assignment_pairs(node):
            name = dotted_name(target)
            hot = FORWARD_NAMES | set(context.custom_kernels)
            if name is None or name.split(".")[-1] not in hot:
                continue
            used = (context.resolve(sub) for sub in ast.walk(value))
            memo = next((r for r in used if r in MEMO_DECORATORS), None)
            if memo is not None:
                yield context.finding(
                    StaticCheck.CACHING,
                    Severity.WARN,
                    node,
                    f"`{name}` is memoised with `{memo}`: repeated inputs get a replayed output.",
                    {"function": name, "decorator": memo},
                )


def detect_caching(context: Context) -> Iterator[Finding]:
    """Output caches keyed on pointers, ids, shapes or hashes; memoised forwards (HACKS.md #9)."""
    defaults = _persistent_containers(context)
    for node, kind, container in _cache_sites(context, defaults):
        yield context.finding(
            StaticCheck.CACHING,
            Severity.WARN,
            node,
            f"State that outlives the call (`{container}`) is keyed on an input {kind}: outputs "
            "may be replayed instead of computed.",
            {"fingerprint": kind, "container": container},
        )
    yield from _memoised_by_assignment(context)
    for node in context.nodes:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = context.resolve(target)
            if name not in MEMO_DECORATORS:
                continue
            in_class = isinstance(context.parents.get(node), ast.ClassDef)
            hot = node.name in FORWARD_NAMES or node.name in context.custom_kernels or in_class
            yield context.finding(
                StaticCheck.CACHING,
                Severity.WARN if hot else Severity.INFO,
                decorator,
                f"`{node.name}` is memoised with `{name}`"
                + (": repeated inputs get a replayed output." if hot else "."),
                {"function": node.name, "decorator": name},
            )
