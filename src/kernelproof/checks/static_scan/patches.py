"""Monkeypatching: writes to attributes of imported modules, builtins and ``sys.modules``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelproof.checks.static_scan.context import Context
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.references import match_rule
from kernelproof.checks.static_scan.rules import CONFIG_COMPONENTS, SETATTR_DUNDERS
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def patch_targets(context: Context) -> Iterator[tuple[ast.AST, str, str]]:
    """(node, patched qualified name, how) for every write to a module attribute."""
    for node in context.nodes:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        flat: list[ast.expr] = []
        while targets:
            target = targets.pop()
            if isinstance(target, (ast.Tuple, ast.List)):
                targets.extend(target.elts)
            else:
                flat.append(target)
        for target in flat:
            if isinstance(target, ast.Attribute):
                base = context.resolve(target.value)
                if base is not None and context.is_module_attribute(base):
                    yield target, f"{base}.{target.attr}", "assignment"
            elif isinstance(target, ast.Subscript):
                yield from _subscript_patch(context, target)
        if isinstance(node, ast.Call):
            yield from _call_patch(context, node)


def _call_patch(context: Context, call: ast.Call) -> Iterator[tuple[ast.AST, str, str]]:
    """``setattr(m, n, v)``, ``object.__setattr__(m, n, v)``, ``m.__setattr__(n, v)`` and
    ``m.__dict__.update(...)`` / ``vars(m).update(...)`` on a module."""
    function = context.resolve(call.func)
    func = call.func
    base_node: ast.expr | None = None
    names: list[str] = []
    how = function or "call"
    if (
        function
        in {
            "setattr",
            "delattr",
            "object.__setattr__",
            "object.__delattr__",
            "type.__setattr__",
            "type.__delattr__",
        }
        and len(call.args) >= 2
    ):
        if not context.shadows_builtin(func, function):
            base_node, names = call.args[0], [context.fold(call.args[1]) or "<computed>"]
    elif isinstance(func, ast.Attribute) and func.attr in SETATTR_DUNDERS and call.args:
        base_node, names, how = func.value, [context.fold(call.args[0]) or "<computed>"], func.attr
    elif isinstance(func, ast.Attribute) and func.attr in {"update", "setdefault", "__setitem__"}:
        namespace = func.value
        if isinstance(namespace, ast.Attribute) and namespace.attr == "__dict__":
            base_node = namespace.value
        elif isinstance(namespace, ast.Call) and namespace.args:
            if context.resolve(namespace.func) == "vars":
                base_node = namespace.args[0]
        if base_node is not None:
            how = "namespace dictionary"
            names = [k.arg for k in call.keywords if k.arg] or (
                [context.fold(call.args[0]) or "<computed>"] if call.args else ["<computed>"]
            )
    if base_node is None:
        return
    base = context.resolve(base_node)
    if base is not None and context.is_module_attribute(base):
        for name in names:
            yield call, f"{base}.{name}", how


def _subscript_patch(context: Context, target: ast.Subscript) -> Iterator[tuple[ast.AST, str, str]]:
    """Writes through ``sys.modules[...]``, ``__builtins__[...]``, ``vars(m)[...]`` and
    ``m.__dict__[...]``."""
    base = context.resolve(target.value)
    key = context.fold(target.slice) or "<computed>"
    if base == "sys.modules":
        yield target, f"sys.modules[{key!r}]", "sys.modules"
    elif base in {"builtins", "builtins.__dict__"}:
        yield target, f"builtins.{key}", "namespace dictionary"
    else:
        whole = context.resolve(target)
        if whole is not None and context.is_module_attribute(whole):
            yield target, whole, "namespace dictionary"


def detect_patches(context: Context) -> Iterator[Finding]:
    """Monkeypatching: writes to attributes of imported modules and classes (HACKS.md #8, #20)."""
    for node, target, how in patch_targets(context):
        parts = target.split(".")
        if CONFIG_COMPONENTS.intersection(parts[:-1]):
            continue  # torch.backends.cudnn.benchmark = True configures, it does not patch
        evidence: dict[str, object] = {"kind": "monkeypatch", "target": target, "how": how}
        if how == "sys.modules":
            yield context.finding(
                StaticCheck.INTROSPECTION,
                Severity.WARN,
                node,
                f"Replaces a module in `{target}`: every later import sees the replacement.",
                evidence,
            )
        elif parts[0] == "builtins":
            yield context.finding(
                StaticCheck.INTROSPECTION,
                Severity.WARN,
                node,
                f"Modifies the builtins: `{target}`.",
                evidence,
            )
        else:
            rule = match_rule(context, node, target)
            timer = rule is not None and rule.check == StaticCheck.TIMER
            what = "a timer or synchronization" if timer else "a library function"
            yield context.finding(
                StaticCheck.TIMER,
                Severity.WARN,
                node,
                f"Monkeypatches {what}: `{target}` ({how}). The run-time tamper check compares it "
                "with the original saved before import.",
                evidence,
            )
