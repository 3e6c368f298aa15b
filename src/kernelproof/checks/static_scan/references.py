"""References to watched names: timers, concurrency, dynamic code, introspection, I/O."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelproof.checks.static_scan.context import Context
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import ATTRIBUTE_RULES, RULES, Rule
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def match_rule(context: Context, node: ast.AST, name: str) -> Rule | None:
    """The rule for a resolved reference: the longest qualified prefix, else its last name."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        rule = RULES.get(".".join(parts[:end]))
        if rule is not None:
            if rule.builtin and (end != len(parts) or context.shadows_builtin(node, name)):
                return None
            return rule
    last = parts[-1]
    if len(parts) == 1 and (last in context.bound_names or isinstance(node, ast.Call)):
        return None  # a bare name this file defines is its own, not the library's
    return ATTRIBUTE_RULES.get(last)


def detect_references(context: Context) -> Iterator[Finding]:
    """Timers, concurrency, dynamic code, introspection and I/O: references to watched names."""
    for reference, name in context.references():
        rule = match_rule(context, reference, name)
        if rule is not None:
            yield context.finding(
                rule.check,
                rule.severity,
                reference,
                f"References {rule.what}: `{name}`.",
                {"name": name},
            )
    for node in context.nodes:
        # Attributes of unnamed objects: ``Path(p).read_text()``, ``e.__traceback__.tb_frame``.
        if isinstance(node, ast.Attribute) and node.attr in ATTRIBUTE_RULES:
            if context.resolve(node) is None:
                rule = ATTRIBUTE_RULES[node.attr]
                yield context.finding(
                    rule.check,
                    rule.severity,
                    node,
                    f"References {rule.what}: `.{node.attr}`.",
                    {"name": f".{node.attr}"},
                )


def detect_built_attribute_names(context: Context) -> Iterator[Finding]:
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
                StaticCheck.DYNAMIC_CODE,
                Severity.WARN,
                node,
                f"`{function}` with an attribute name built from pieces: `{folded}`"
                + (f" on `{target}`." if target else "."),
                {"function": function, "attribute": folded, "object": target},
            )
        else:
            yield context.finding(
                StaticCheck.DYNAMIC_CODE,
                Severity.INFO,
                node,
                f"`{function}` with an attribute name computed at run time.",
                {"function": function, "attribute": None, "object": target},
            )
