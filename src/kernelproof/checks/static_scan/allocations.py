"""Uninitialised outputs: ``empty`` allocations returned with no visible write to them."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator

from kernelproof.checks.static_scan.context import Context, assignment_pairs
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import (
    EMPTY_ALLOCATORS,
    EMPTY_METHODS,
    METADATA_ATTRIBUTES,
)
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def _is_empty_allocation(context: Context, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr in EMPTY_METHODS:
        return True
    return context.resolve(node.func) in EMPTY_ALLOCATORS


def _may_write(context: Context, name_node: ast.Name) -> bool:
    """Whether a use of a variable could write into it (conservatively yes when unsure)."""
    parent = context.parents.get(name_node)
    if isinstance(parent, ast.Attribute) and parent.value is name_node:
        return parent.attr not in METADATA_ATTRIBUTES
    if isinstance(
        parent, (ast.Return, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.IfExp, ast.Assert)
    ):
        return False
    if isinstance(parent, (ast.Tuple, ast.List)):
        return not isinstance(context.parents.get(parent), ast.Return)
    return True  # passed to a call, subscripted, aliased, augmented...


def _function_body_nodes(function: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function, without descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def detect_uninitialized(context: Context) -> Iterator[Finding]:
    """``empty`` allocations returned with no visible write (HACKS.md #4). Best effort."""
    for node in context.nodes:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = list(_function_body_nodes(node))
        assignments: dict[str, list[ast.AST]] = defaultdict(list)
        for sub in body:
            for target, value in assignment_pairs(sub):
                if isinstance(target, ast.Name):
                    assignments[target.id].append(value)
        empties = {
            name
            for name, values in assignments.items()
            if len(values) == 1 and _is_empty_allocation(context, values[0])
        }
        written = {
            sub.id
            for sub in body
            if isinstance(sub, ast.Name)
            and isinstance(sub.ctx, ast.Load)
            and sub.id in empties
            and _may_write(context, sub)
        }
        for sub in body:
            if not isinstance(sub, ast.Return) or sub.value is None:
                continue
            returned = (
                sub.value.elts if isinstance(sub.value, (ast.Tuple, ast.List)) else [sub.value]
            )
            for item in returned:
                direct = _is_empty_allocation(context, item)
                if direct or (isinstance(item, ast.Name) and item.id in empties - written):
                    label = context.snippet(item)
                    yield context.finding(
                        StaticCheck.UNINITIALIZED,
                        Severity.INFO,
                        sub,
                        f"`{node.name}` returns an uninitialised allocation (`{label}`) with no "
                        "visible write to it: it may hand back stale memory.",
                        {"function": node.name, "output": label},
                    )
