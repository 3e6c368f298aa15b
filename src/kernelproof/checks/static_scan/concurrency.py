"""Concurrency in native code: threads, forks and side streams in C++/CUDA source strings."""

from __future__ import annotations

from collections.abc import Iterator

from kernelproof.checks.static_scan.context import Context, source_matches
from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import CPP_CONCURRENCY, MAX_SNIPPET_CHARS
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


def detect_native_concurrency(context: Context) -> Iterator[Finding]:
    """Threads, forks and side streams created inside C++/CUDA source strings (HACKS.md #6)."""
    for match in source_matches(context, CPP_CONCURRENCY):
        yield context.finding(
            StaticCheck.CONCURRENCY,
            Severity.WARN,
            match.node,
            f"C++/CUDA source starts concurrent work: {', '.join(match.tokens)}. Work left "
            "running after the call returns escapes a timer that stops at return.",
            {"tokens": match.tokens, "code": match.code[:MAX_SNIPPET_CHARS]},
            line=match.line,
        )
