"""Findings whose words match their evidence: no finding message in the source falls back to a
placeholder ("first ?", "unknown", "None") when a value is missing, and the messages built from
counts never state a count of zero."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from kernelproof.controller.summary import correctness_findings

SOURCE = Path(__file__).resolve().parents[2] / "src" / "kernelproof"

#: Fallback texts that stand for a value the message does not have.
PLACEHOLDERS = {"?", "??", "unknown", "None", "none"}

#: Calls whose ``message`` becomes a finding's words.
MESSAGE_CALLS = {"Finding", "observation", "broken_finding"}

#: A lone question mark in a message's literal text: "first ?", "(?)".
LONE_MARK = re.compile(r"(^|[\s(])\?($|[\s),.;:])")


def _called(node: ast.Call) -> str:
    func = node.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else (func.attr if isinstance(func, ast.Attribute) else "")
    )


def _message_expressions(tree: ast.Module) -> list[ast.expr]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in MESSAGE_CALLS:
            found += [k.value for k in node.keywords if k.arg == "message"]
            if _called(node) != "Finding" and len(node.args) >= 2:
                found.append(node.args[1])  # observation(check, message, ...)
    return found


def _placeholders(expression: ast.expr) -> list[str]:
    problems = []
    for node in ast.walk(expression):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            last = node.values[-1]
            if isinstance(last, ast.Constant) and last.value in PLACEHOLDERS:
                problems.append(f"`... or {last.value!r}`")
        if isinstance(node, ast.IfExp):
            for branch in (node.body, node.orelse):
                if isinstance(branch, ast.Constant) and branch.value in PLACEHOLDERS:
                    problems.append(f"a conditional that gives {branch.value!r}")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (LONE_MARK.search(node.value))
        ):
            problems.append(f"a lone '?' in {node.value!r}")
    return problems


def test_no_finding_message_falls_back_to_a_placeholder():
    offenders = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for expression in _message_expressions(tree):
            for problem in _placeholders(expression):
                offenders.append(f"{path.relative_to(SOURCE)}:{expression.lineno}: {problem}")
    assert not offenders, "\n".join(offenders)


def test_the_scan_sees_the_placeholder_it_forbids():
    bad = ast.parse(
        'Finding(check="x", message=f"wrong on {n}, first {first or \'?\'}")\n'
        'observation("x", "first ?")\n'
        "Finding(message=f\"ratio {_r if _r is not None else 'unknown'}\")\n"
    )
    found = [_placeholders(e) for e in _message_expressions(bad)]
    assert [bool(problems) for problems in found] == [True, True, True], found


def test_matrix_findings_never_count_zero_cells():
    assert correctness_findings([]) == []
