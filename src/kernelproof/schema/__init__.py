"""Typed models of everything kernelproof reports. Pure pydantic: no torch import."""

from kernelproof.schema.finding import Finding, SourceLocation
from kernelproof.schema.report import (
    REPORT_SCHEMA,
    Artifact,
    Baselines,
    Ceilings,
    Correctness,
    CorrectnessTest,
    Environment,
    OutputComparison,
    Report,
    Roofline,
    ShapeTiming,
    SolFraction,
    TestOutcome,
    Timing,
    TimingStats,
    decide_verdict,
)
from kernelproof.schema.variant import InputVariant, LayoutTransform, ValueTransform, VariantKind
from kernelproof.schema.verdict import ExitCode, Severity, Verdict

__all__ = [
    "REPORT_SCHEMA",
    "Artifact",
    "Baselines",
    "Ceilings",
    "Correctness",
    "CorrectnessTest",
    "Environment",
    "ExitCode",
    "Finding",
    "InputVariant",
    "LayoutTransform",
    "OutputComparison",
    "Report",
    "Roofline",
    "Severity",
    "ShapeTiming",
    "SolFraction",
    "SourceLocation",
    "TestOutcome",
    "Timing",
    "TimingStats",
    "ValueTransform",
    "VariantKind",
    "Verdict",
    "decide_verdict",
]
