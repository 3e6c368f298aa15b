"""The check identifiers of the static scan and the construction of its findings."""

from __future__ import annotations

from enum import Enum

from kernelproof.schema.checks import FindingCheck
from kernelproof.schema.finding import Finding, SourceLocation
from kernelproof.schema.verdict import Severity


class StaticCheck(str, Enum):
    """Check identifiers this scan emits: the ``static-`` members of :class:`FindingCheck`,
    which owns their values."""

    SYNTAX = FindingCheck.STATIC_SYNTAX.value
    """The source does not parse; the rest of the scan is skipped."""

    INCOMPLETE = FindingCheck.STATIC_INCOMPLETE.value
    """A detector gave up (the source nests too deeply); its evidence is missing."""

    LANGUAGES = FindingCheck.STATIC_LANGUAGES.value
    """Which kernel languages and custom kernels the source uses (always present when it parses)."""

    FALLBACK = FindingCheck.STATIC_FALLBACK.value
    """A try/except (or ``contextlib.suppress``) guards a custom kernel, or its handler runs torch."""

    CONCURRENCY = FindingCheck.STATIC_CONCURRENCY.value
    """Threads, processes, forks, asyncio or CUDA side streams."""

    DYNAMIC_CODE = FindingCheck.STATIC_DYNAMIC_CODE.value
    """``exec``/``eval``/``compile``/``__import__``/``importlib``, or attribute names built at run
    time."""

    TIMER = FindingCheck.STATIC_TIMER.value
    """References to clocks, events and synchronize; assignments to module attributes (patches)."""

    INTROSPECTION = FindingCheck.STATIC_INTROSPECTION.value
    """``gc``, ``inspect``, frame walking, ``sys.modules``, ``ctypes``, builtins changes, signals."""

    IO = FindingCheck.STATIC_IO.value
    """Files, network, subprocesses."""

    INHERITANCE = FindingCheck.STATIC_INHERITANCE.value
    """``ModelNew`` is, or derives from, the reference ``Model``."""

    CACHING = FindingCheck.STATIC_CACHING.value
    """Persistent caches keyed on pointers, ids, shapes or input hashes; memoised forwards."""

    UNINITIALIZED = FindingCheck.STATIC_UNINITIALIZED.value
    """An ``empty`` allocation returned with no visible write to it."""

    PRECISION = FindingCheck.STATIC_PRECISION.value
    """Casts to a lower floating-point precision, autocast, TF32, half types in C++/CUDA source."""


#: Static evidence is supporting only (DESIGN.md, step 2): no finding here may exceed this.
MAX_STATIC_SEVERITY = Severity.WARN


def make_finding(
    path: str,
    check: StaticCheck,
    severity: Severity,
    line: int,
    column: int,
    message: str,
    evidence: dict[str, object],
) -> Finding:
    """Build a finding, refusing any severity above ``MAX_STATIC_SEVERITY``."""
    if severity.rank > MAX_STATIC_SEVERITY.rank:
        raise AssertionError(f"static findings are supporting evidence only, got {severity.value}")
    return Finding(
        check=FindingCheck(check.value),
        severity=severity,
        message=message,
        evidence=evidence,
        location=SourceLocation(path=path, line=max(line, 1), column=max(column, 0)),
    )


def syntax_finding(error: BaseException, path: str) -> Finding:
    """Turn a parse failure into a ``static-syntax`` finding at the offending line."""
    line = getattr(error, "lineno", None) or 1
    column = getattr(error, "offset", None) or 0
    reason = getattr(error, "msg", None) or str(error) or type(error).__name__
    return make_finding(
        path,
        StaticCheck.SYNTAX,
        Severity.WARN,
        int(line),
        int(column),
        f"The candidate does not parse ({reason}); it cannot build.",
        {"error": type(error).__name__, "reason": str(reason)},
    )


def deduplicate(findings: list[Finding]) -> list[Finding]:
    """Keep one finding per check and position (the most severe), ordered by position."""
    best: dict[tuple[str, int, int], Finding] = {}
    for finding in findings:
        assert finding.location is not None
        key = (finding.check, finding.location.line, finding.location.column)
        kept = best.get(key)
        if kept is None or finding.severity.rank > kept.severity.rank:
            best[key] = finding

    def order(finding: Finding) -> tuple[int, int, int, str]:
        assert finding.location is not None
        first = 0 if finding.check == StaticCheck.LANGUAGES.value else 1
        return (first, finding.location.line, finding.location.column, finding.check)

    return sorted(best.values(), key=order)
