"""Fallbacks: a try/except or ``contextlib.suppress`` that guards a kernel or runs torch."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from kernelproof.checks.static_scan.context import Context, dotted_name, has_prefix
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import (
    CUPY_KERNELS,
    EXTENSION_LOADERS,
    FORWARD_NAMES,
    KERNEL_LIBRARIES,
    REFERENCE_CLASS_NAMES,
    TENSOR_COMPUTE_METHODS,
    TORCH_NON_COMPUTE_PREFIXES,
)
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def _launched(call: ast.Call) -> ast.expr:
    """The callee of a call, looking through a launch grid (``kernel[grid](...)``)."""
    func = call.func
    while isinstance(func, ast.Subscript):
        func = func.value
    return func


def _function_summaries(context: Context, predicate: Callable[[ast.AST], bool]) -> set[str]:
    """Names of functions in this file containing (or calling one that contains) a node that
    ``predicate`` accepts. One pass over each function, then propagation up the call graph."""
    callers: dict[str, set[str]] = defaultdict(set)
    found: set[str] = set()
    for name, definitions in context.functions.items():
        for definition in definitions:
            for node in ast.walk(definition):
                if predicate(node):
                    found.add(name)
                if isinstance(node, ast.Call):
                    for target in context.call_targets(node):
                        callers[target.name].add(name)
    pending = list(found)
    while pending:
        for caller in callers.pop(pending.pop(), set()):
            if caller not in found:
                found.add(caller)
                pending.append(caller)
    return found


class _FallbackAnalysis:
    """Which calls reach a custom kernel and which run PyTorch, through helper functions."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.custom_functions = _function_summaries(context, self._direct_custom)
        self.torch_functions = _function_summaries(context, self._direct_torch)

    def _direct_custom(self, call: ast.AST) -> bool:
        if not isinstance(call, ast.Call):
            return False
        name = self.context.resolve(_launched(call))
        if name is None:
            return False
        return self.context.is_custom(name) or name in EXTENSION_LOADERS or name in CUPY_KERNELS

    def _direct_torch(self, node: ast.AST) -> bool:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return True
        return isinstance(node, ast.Call) and self.torch_call_name(node) is not None

    def torch_call_name(self, call: ast.Call) -> str | None:
        """What PyTorch computation a call runs directly, or ``None``."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in FORWARD_NAMES:
            inner = func.value
            if isinstance(inner, ast.Call) and dotted_name(inner.func) == "super":
                return "super().forward"
        name = self.context.resolve(func)
        if name is not None:
            parts = name.split(".")
            if parts[0] == "torch" and not self.context.is_custom(name):
                if not has_prefix(name, TORCH_NON_COMPUTE_PREFIXES):
                    return name
            if REFERENCE_CLASS_NAMES.intersection(parts):
                return name  # Model(...), Model.forward(self, x), reference.Model.forward
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_COMPUTE_METHODS:
            if name is None or not self.context.is_custom(name):
                return f".{func.attr}"
        return None

    def custom_calls(self, nodes: Iterable[ast.AST]) -> list[str]:
        """Custom kernels (or wrappers of them) called anywhere under ``nodes``."""
        found: list[str] = []
        for call in _calls_under(nodes):
            name = self.context.resolve(_launched(call)) or self.context.snippet(call.func)
            wrappers = (t.name in self.custom_functions for t in self.context.call_targets(call))
            if self._direct_custom(call) or any(wrappers):
                found.append(name)
        return found

    def torch_calls(self, nodes: Iterable[ast.AST]) -> list[str]:
        """PyTorch computations (direct, through helpers, or ``a @ b``) under ``nodes``."""
        found: list[str] = []
        for node in _walk_all(nodes):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                found.append("@")
            elif isinstance(node, ast.Call):
                direct = self.torch_call_name(node)
                if direct is not None:
                    found.append(direct)
                elif any(t.name in self.torch_functions for t in self.context.call_targets(node)):
                    found.append(self.context.snippet(node.func))
        return found


#: Statement types with exception handlers (``TryStar`` is ``except*``, Python 3.11+).
if sys.version_info >= (3, 11):
    _TRY_NODES: tuple[type[ast.Try | ast.TryStar], ...] = (ast.Try, ast.TryStar)
else:
    _TRY_NODES: tuple[type[ast.Try], ...] = (ast.Try,)


def _walk_all(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    for node in nodes:
        yield from ast.walk(node)


def _calls_under(nodes: Iterable[ast.AST]) -> Iterator[ast.Call]:
    return (node for node in _walk_all(nodes) if isinstance(node, ast.Call))


def _imports_kernel_library(context: Context, body: list[ast.stmt]) -> list[str]:
    """Kernel libraries imported directly in a try body (``try: import triton``)."""
    found: list[str] = []
    for node in _walk_all(body):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        found.extend(
            m
            for m in modules
            if any(m == lib or m.startswith(lib + ".") for lib in KERNEL_LIBRARIES)
        )
    return found


def detect_fallback(context: Context) -> Iterator[Finding]:
    """try/except (or ``contextlib.suppress``) that guards a custom kernel or falls back to torch."""
    analysis = _FallbackAnalysis(context)
    for node in context.nodes:
        if isinstance(node, _TRY_NODES) and node.handlers:
            yield from _fallback_in_try(context, analysis, node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and context.resolve(call.func) == "contextlib.suppress"
                ):
                    kernels = analysis.custom_calls(node.body)
                    if kernels:
                        yield context.finding(
                            StaticCheck.FALLBACK,
                            Severity.WARN,
                            node,
                            "Errors from the custom kernel are suppressed (`contextlib.suppress`): "
                            "a failing kernel goes unnoticed and another path answers.",
                            {"kernels_called": kernels},
                        )


def _fallback_in_try(
    context: Context, analysis: _FallbackAnalysis, node: ast.stmt
) -> Iterator[Finding]:
    """One try statement: does it guard a kernel, or does a quiet handler compute with torch?"""
    quiet = [
        handler
        for handler in getattr(node, "handlers", [])
        if not any(isinstance(statement, ast.Raise) for statement in handler.body)
    ]  # a handler that re-raises fails loudly, which is allowed
    if not quiet:
        return
    body: list[ast.stmt] = getattr(node, "body", [])
    kernels = sorted(set(analysis.custom_calls(body)))
    torch_calls = sorted(set(analysis.torch_calls(h for h in quiet)))
    optional = _imports_kernel_library(context, body)
    evidence: dict[str, object] = {
        "kernels_called": kernels,
        "handler_torch_calls": torch_calls,
        "handler_lines": [handler.lineno for handler in quiet],
    }
    if kernels:
        action = (
            f"its handler computes with PyTorch ({', '.join(torch_calls)})"
            if torch_calls
            else "its handler swallows the error"
        )
        yield context.finding(
            StaticCheck.FALLBACK,
            Severity.WARN,
            node,
            f"A try/except guards the custom kernel ({', '.join(kernels)}) and {action}: the "
            "kernel may silently not run.",
            evidence,
        )
    elif torch_calls:
        yield context.finding(
            StaticCheck.FALLBACK,
            Severity.WARN,
            node,
            f"An exception handler computes with PyTorch ({', '.join(torch_calls)}): a fallback "
            "path.",
            evidence,
        )
    elif optional:
        yield context.finding(
            StaticCheck.FALLBACK,
            Severity.INFO,
            node,
            f"The kernel library is optional ({', '.join(optional)} imported under try/except): "
            "look for the PyTorch path taken when it is missing.",
            {"optional_imports": optional, "handler_lines": evidence["handler_lines"]},
        )
