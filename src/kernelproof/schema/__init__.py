"""Typed models of everything kernelproof reports. Pure pydantic: no torch import."""

from kernelproof.schema.adequacy import (
    ADEQUACY_SCHEMA,
    AdequacyReport,
    AuditExitCode,
    MutantResult,
    OutputAudit,
)
from kernelproof.schema.checks import FindingCheck
from kernelproof.schema.correctness import (
    Correctness,
    CorrectnessTest,
    OutputComparison,
    TestOutcome,
)
from kernelproof.schema.e2e import E2E
from kernelproof.schema.envelope import (
    CallSignature,
    DimensionBinding,
    Envelope,
    KnobRange,
    TensorSignature,
    ValueSignature,
)
from kernelproof.schema.finding import Finding, SourceLocation
from kernelproof.schema.pipeline import Pipeline, Stage, StageRecord, decisive_stage
from kernelproof.schema.report import (
    REPORT_SCHEMA,
    Artifact,
    Assumption,
    CodeFacts,
    Environment,
    OpAudit,
    Report,
    Repro,
    Sandbox,
    decide_verdict,
)
from kernelproof.schema.roofline import (
    Ceilings,
    Roofline,
    SolFraction,
)
from kernelproof.schema.timing import (
    Baselines,
    ShapeTiming,
    Timing,
    TimingStats,
)
from kernelproof.schema.variant import InputVariant, LayoutTransform, ValueTransform, VariantKind
from kernelproof.schema.verdict import ExitCode, Severity, Verdict

__all__ = [
    "Pipeline",
    "Stage",
    "StageRecord",
    "decisive_stage",
    "ADEQUACY_SCHEMA",
    "AdequacyReport",
    "AuditExitCode",
    "MutantResult",
    "OutputAudit",
    "REPORT_SCHEMA",
    "Artifact",
    "Assumption",
    "Baselines",
    "CallSignature",
    "E2E",
    "DimensionBinding",
    "Envelope",
    "KnobRange",
    "TensorSignature",
    "ValueSignature",
    "Ceilings",
    "CodeFacts",
    "Correctness",
    "CorrectnessTest",
    "Environment",
    "ExitCode",
    "Finding",
    "FindingCheck",
    "InputVariant",
    "LayoutTransform",
    "OpAudit",
    "OutputComparison",
    "Report",
    "Repro",
    "Roofline",
    "Sandbox",
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
