"""Concurrency in native code: threads, forks and side streams in C++/CUDA source strings."""

from __future__ import annotations

from collections.abc import Iterator

from kernelproof.checks.static_scan.context import _Context, _string_constants
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import _CPP_CONCURRENCY, MAX_SNIPPET_CHARS
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def _detect_native_concurrency(context: _Context) -> Iterator[Finding]:
    """Threads, forks and side streams created inside C++/CUDA source strings (HACKS.md #6)."""
    source_lines = context.source.splitlines()
    for node, text in _string_constants(context):
        first = _CPP_CONCURRENCY.search(text)
        if first is None:
            continue
        tokens = sorted({match.group(1) for match in _CPP_CONCURRENCY.finditer(text)})
        line = node.lineno + text[: first.start()].count("\n")
        code = source_lines[line - 1].strip() if line <= len(source_lines) else ""
        yield context.finding(
            StaticCheck.CONCURRENCY, Severity.WARN, node,
            f"C++/CUDA source starts concurrent work: {', '.join(tokens)}. Work left running "
            "after the call returns escapes a timer that stops at return.",
            {"tokens": tokens, "code": code[:MAX_SNIPPET_CHARS]},
            line=line,
        )
