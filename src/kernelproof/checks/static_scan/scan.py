"""The scan itself: the result model, the entry point and the ordered list of detectors."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

from pydantic import BaseModel, ConfigDict, Field

from kernelproof import python_ast
from kernelproof.checks.static_scan.allocations import detect_uninitialized
from kernelproof.checks.static_scan.caching import detect_caching
from kernelproof.checks.static_scan.concurrency import detect_native_concurrency
from kernelproof.checks.static_scan.context import Context
from kernelproof.checks.static_scan.fallback import detect_fallback
from kernelproof.checks.static_scan.findings import (
    StaticCheck,
    deduplicate,
    make_finding,
    syntax_finding,
)
from kernelproof.checks.static_scan.inheritance import detect_inheritance
from kernelproof.checks.static_scan.languages import detect_languages
from kernelproof.checks.static_scan.patches import detect_patches
from kernelproof.checks.static_scan.precision import (
    detect_precision,
    detect_precision_flags,
)
from kernelproof.checks.static_scan.references import (
    detect_built_attribute_names,
    detect_references,
)
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity


class StaticScan(BaseModel):
    """What the static scan learned about one candidate source file."""

    model_config = ConfigDict(frozen=True)

    findings: list[Finding] = Field(default_factory=list)
    """Static findings, ``info`` or ``warn`` only, ordered by line."""

    languages: list[str] = Field(default_factory=list)
    """Languages detected, a subset of ``LANGUAGES`` in that order."""

    custom_kernels: list[str] = Field(default_factory=list)
    """Custom kernels the source defines: jit-decorated functions, extension module names and the
    functions they export, in order of appearance."""

    lines_of_code: int = 0
    """Non-blank lines that are not comments."""

    def findings_for(self, check: str | StaticCheck) -> list[Finding]:
        """The findings of one check, e.g. ``scan.findings_for(StaticCheck.FALLBACK)``."""
        wanted = check.value if isinstance(check, StaticCheck) else check
        return [finding for finding in self.findings if finding.check == wanted]


def scan_source(source: str, path: str) -> StaticScan:
    """Scan candidate source text and return its static evidence.

    Never raises on bad input: a file that does not parse gives one ``static-syntax`` finding at
    the offending line, and a detector that hits Python's recursion limit gives a
    ``static-incomplete`` finding while the others still report.

    Args:
        source: the candidate's Python source text.
        path: the path reported in each finding's location (it is not read).
    """
    lines_of_code = count_lines_of_code(source)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in C++ strings are not our business
            tree = python_ast.parse(source, filename=path)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as error:
        return StaticScan(findings=[syntax_finding(error, path)], lines_of_code=lines_of_code)

    try:
        context = Context(source, path, tree)
    except RecursionError:
        finding = make_finding(
            path,
            StaticCheck.INCOMPLETE,
            Severity.INFO,
            1,
            1,
            "The source nests too deeply for the static scan; no static evidence was gathered.",
            {"detector": "index"},
        )
        return StaticScan(findings=[finding], lines_of_code=lines_of_code)

    collected: list[Finding] = []
    for detector in _DETECTORS:
        try:
            collected.extend(detector(context))
        except RecursionError:
            collected.append(
                context.finding(
                    StaticCheck.INCOMPLETE,
                    Severity.INFO,
                    None,
                    f"The {detector.__name__.strip('_')} detector gave up: the source nests too deeply.",
                    {"detector": detector.__name__.strip("_")},
                )
            )
    languages = detect_languages(context)
    collected.append(
        context.finding(
            StaticCheck.LANGUAGES,
            Severity.INFO,
            None,
            "Languages: " + (", ".join(languages) if languages else "none detected") + "; custom "
            "kernels: "
            + (", ".join(context.custom_kernels) if context.custom_kernels else "none")
            + ".",
            {"languages": languages, "custom_kernels": list(context.custom_kernels)},
        )
    )
    return StaticScan(
        findings=deduplicate(collected),
        languages=languages,
        custom_kernels=list(context.custom_kernels),
        lines_of_code=lines_of_code,
    )


def count_lines_of_code(source: str) -> int:
    """Count lines that are neither blank nor comments (docstrings and C++ strings count)."""
    stripped = (line.strip() for line in source.splitlines())
    return sum(1 for line in stripped if line and not line.startswith("#"))


#: The detectors, in the order they run. Each maps the parsed context to findings.
_DETECTORS: tuple[Callable[[Context], Iterable[Finding]], ...] = (
    detect_references,
    detect_built_attribute_names,
    detect_native_concurrency,
    detect_patches,
    detect_precision_flags,
    detect_fallback,
    detect_inheritance,
    detect_caching,
    detect_uninitialized,
    detect_precision,
)
