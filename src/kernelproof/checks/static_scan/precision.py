"""Reduced precision: casts, dtypes, TF32 switches and half types in C++/CUDA source."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kernelproof.checks.static_scan.context import Context, call_argument, source_matches
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.patches import patch_targets
from kernelproof.checks.static_scan.rules import (
    CPP_LOW_PRECISION,
    DOWNCAST_METHODS,
    DTYPE_ROOTS,
    LOW_PRECISION_DTYPES,
    LOW_PRECISION_STRINGS,
    MAX_SNIPPET_CHARS,
    REDUCED_PRECISION_FLAGS,
)
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def detect_precision_flags(context: Context) -> Iterator[Finding]:
    """TF32 and reduced-precision-reduction switches (``torch.backends.cuda.matmul.allow_tf32``)."""
    for node, target, _ in patch_targets(context):
        if target.split(".")[-1] in REDUCED_PRECISION_FLAGS:
            yield context.finding(
                StaticCheck.PRECISION,
                Severity.INFO,
                node,
                f"Sets a reduced-precision switch: `{target}`.",
                {"flag": target},
            )


def detect_precision(context: Context) -> Iterator[Finding]:
    """Casts to half/bfloat16 in Python, and half types in C++/CUDA source strings (HACKS.md #11)."""
    for reference, name in context.references():
        parts = name.split(".")
        low = parts[-1] in LOW_PRECISION_DTYPES or parts[-1].startswith("float8")
        if len(parts) > 1 and parts[0] in DTYPE_ROOTS and low:
            yield context.finding(
                StaticCheck.PRECISION,
                Severity.INFO,
                reference,
                f"Uses a reduced-precision dtype: `{name}`.",
                {"dtype": name},
            )
    for node in context.nodes:
        if isinstance(node, ast.Call):
            yield from _precision_in_call(context, node)
    yield from _precision_in_sources(context)


def _precision_in_sources(context: Context) -> Iterator[Finding]:
    """Half and bfloat16 types in C++/CUDA strings, located on the line of their first use."""
    for match in source_matches(context, CPP_LOW_PRECISION):
        yield context.finding(
            StaticCheck.PRECISION,
            Severity.INFO,
            match.node,
            f"C++/CUDA source uses reduced-precision types: {', '.join(match.tokens)}.",
            {"tokens": match.tokens, "code": match.code[:MAX_SNIPPET_CHARS]},
            line=match.line,
        )


def _precision_in_call(context: Context, call: ast.Call) -> Iterator[Finding]:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in DOWNCAST_METHODS and not call.args:
        yield context.finding(
            StaticCheck.PRECISION,
            Severity.INFO,
            call,
            f"Casts to a lower precision: `.{func.attr}()`.",
            {"cast": f".{func.attr}()"},
        )
    strings: list[str] = []
    if isinstance(func, ast.Attribute) and func.attr in {"to", "type", "astype"}:
        strings = [s for s in (context.fold(a) for a in call.args) if s]
    dtype = call_argument(call, "dtype")
    folded = context.fold(dtype)
    if folded:
        strings.append(folded)
    for text in strings:
        if text in LOW_PRECISION_STRINGS:
            yield context.finding(
                StaticCheck.PRECISION,
                Severity.INFO,
                call,
                f"Casts to a lower precision: `{text}`.",
                {"cast": text},
            )
    name = context.resolve(func)
    if name == "torch.set_float32_matmul_precision":
        level = context.fold(call_argument(call, "precision", 0))
        if level != "highest":
            yield context.finding(
                StaticCheck.PRECISION,
                Severity.INFO,
                call,
                f"Lowers float32 matmul precision to `{level}` (TF32 or bf16 passes).",
                {"flag": name, "value": level},
            )
