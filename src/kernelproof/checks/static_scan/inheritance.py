"""Inheritance: ``ModelNew`` derived from, or bound to, the reference ``Model``."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from kernelproof.checks.static_scan.context import Context, assignment_pairs, dotted_name
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import REFERENCE_CLASS_NAMES
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def _derives_from_reference(
    context: Context, bases: Iterable[ast.expr], derived: set[str]
) -> str | None:
    """The first base that is (or derives from) the reference class, if any."""
    for base in bases:
        name = context.resolve(base) or dotted_name(base)
        if name is not None and name.split(".")[-1] in derived and name.split(".")[0] != "torch":
            return name
    return None


def detect_inheritance(context: Context) -> Iterator[Finding]:
    """``ModelNew`` derived from, or bound to, the reference ``Model`` (HACKS.md #3)."""
    derived = set(REFERENCE_CLASS_NAMES)
    classes = [node for node in context.nodes if isinstance(node, ast.ClassDef)]
    flagged: list[tuple[ast.AST, str, str]] = []
    changed = True
    while changed:
        changed = False
        for class_def in classes:
            if class_def.name in derived:
                continue
            base = _derives_from_reference(context, class_def.bases, derived)
            if base is not None:
                derived.add(class_def.name)
                flagged.append((class_def, class_def.name, base))
                changed = True
    for node in context.nodes:
        if isinstance(node, ast.Call) and len(node.args) == 3 and dotted_name(node.func) == "type":
            bases = node.args[1]
            if isinstance(bases, ast.Tuple):
                base = _derives_from_reference(context, bases.elts, derived)
                if base is not None:
                    flagged.append((node, context.fold(node.args[0]) or "<type()>", base))
        for target, value in assignment_pairs(node):
            if isinstance(target, ast.Name) and target.id not in derived:
                base = _derives_from_reference(context, [value], derived)
                if base is not None:
                    flagged.append((node, target.id, base))
    for node, name, base in flagged:
        yield context.finding(
            StaticCheck.INHERITANCE,
            Severity.WARN,
            node,
            f"`{name}` is or derives from the reference (`{base}`): it may run the reference's "
            "forward instead of a kernel.",
            {"class": name, "base": base},
        )
