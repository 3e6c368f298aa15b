"""References to watched names: timers, concurrency, dynamic code, introspection, I/O."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelproof.checks.static_scan.context import _Context
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import _ATTRIBUTE_RULES, _RULES, _Rule
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def _match_rule(context: _Context, node: ast.AST, name: str) -> _Rule | None:
    """The rule for a resolved reference: the longest qualified prefix, else its last name."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        rule = _RULES.get(".".join(parts[:end]))
        if rule is not None:
            if rule.builtin and (end != len(parts) or context.shadows_builtin(node, name)):
                return None
            return rule
    last = parts[-1]
    if len(parts) == 1 and (last in context.bound_names or isinstance(node, ast.Call)):
        return None  # a bare name this file defines is its own, not the library's
    return _ATTRIBUTE_RULES.get(last)


def _detect_references(context: _Context) -> Iterator[Finding]:
    """Timers, concurrency, dynamic code, introspection and I/O: references to watched names."""
    for node, name in context.references():
        rule = _match_rule(context, node, name)
        if rule is not None:
            yield context.finding(
                rule.check, rule.severity, node, f"References {rule.what}: `{name}`.", {"name": name}
            )
    for node in context.nodes:
        # Attributes of unnamed objects: ``Path(p).read_text()``, ``e.__traceback__.tb_frame``.
        if isinstance(node, ast.Attribute) and node.attr in _ATTRIBUTE_RULES:
            if context.resolve(node) is None:
                rule = _ATTRIBUTE_RULES[node.attr]
                yield context.finding(
                    rule.check, rule.severity, node, f"References {rule.what}: `.{node.attr}`.",
                    {"name": f".{node.attr}"},
                )


def _detect_built_attribute_names(context: _Context) -> Iterator[Finding]:
    """``getattr``/``setattr``/``delattr`` with an attribute name that is not a literal."""
    for node in context.nodes:
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        function = context.resolve(node.func)
        if function not in {"getattr", "setattr", "delattr"}:
            continue
        if context.shadows_builtin(node.func, function):
            continue
        attribute = node.args[1]
        if isinstance(attribute, ast.Constant):
            continue
        folded = context.fold(attribute)
        target = context.resolve(node.args[0])
        if folded is not None:
            yield context.finding(
                StaticCheck.DYNAMIC_CODE, Severity.WARN, node,
                f"`{function}` with an attribute name built from pieces: `{folded}`"
                + (f" on `{target}`." if target else "."),
                {"function": function, "attribute": folded, "object": target},
            )
        else:
            yield context.finding(
                StaticCheck.DYNAMIC_CODE, Severity.INFO, node,
                f"`{function}` with an attribute name computed at run time.",
                {"function": function, "attribute": None, "object": target},
            )
