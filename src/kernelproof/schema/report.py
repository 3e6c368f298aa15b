"""The report: the one typed model every output (JSON, terminal, HTML, store) is produced from."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelproof.schema.finding import Finding
from kernelproof.schema.variant import InputVariant
from kernelproof.schema.verdict import Severity, Verdict

REPORT_SCHEMA = "kernelproof.report/1"


class TestOutcome(str, Enum):
    """What happened to one cell of the correctness matrix."""

    __test__ = False  # not a pytest test class despite the name

    PASSED = "passed"
    FAILED = "failed"
    """A silently wrong answer (beyond tolerance, wrong shape or dtype, non-finite)."""

    RAISED = "raised"
    """The candidate raised a clear exception: a stated limitation, not a silent error."""

    CRASHED = "crashed"
    """The candidate's worker died or hung on this input."""

    SKIPPED = "skipped"
    """The reference itself rejected this input, so there is nothing to compare against."""


class OutputComparison(BaseModel):
    """Error of one output tensor against the float64 oracle, next to the reference's own."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    index: int
    """Position of the output in the returned tuple (0 for a single tensor)."""

    error_ratio: float | None
    """Candidate error over the reference's own error (floored by the dtype); <= the factor passes."""

    candidate_error: float | None
    reference_error: float | None
    floor: float | None = None
    passed: bool
    detail: str = ""


class CorrectnessTest(BaseModel):
    """One cell of the correctness matrix: a variant, its seed, and what the candidate did."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    variant: InputVariant
    seed: int
    outcome: TestOutcome
    error_ratio: float | None = None
    """The worst output's error ratio, when outputs were compared."""

    outputs: list[OutputComparison] = Field(default_factory=list)
    message: str = ""
    candidate_s: float | None = None
    """Wall time of the candidate's call in its worker (untimed context, for information)."""

    reference_s: float | None = None


class Correctness(BaseModel):
    """The correctness matrix and how it was planned."""

    seeds: list[int]
    """Seeds drawn for this run; ``--seed`` with the first reproduces them all."""

    base_seed: int
    default_knobs: dict[str, int]
    """The knob values used as the default shape (after any scaling down)."""

    task_knobs: dict[str, int]
    """The knob values as written in the task file."""

    scaled_down: str | None = None
    """Why the default shape was scaled down from the task's values, when it was."""

    tolerance: dict[str, Any]
    """The tolerance model in force (mode, factor, floors, or fixed atol/rtol)."""

    tests: list[CorrectnessTest] = Field(default_factory=list)

    @property
    def failures(self) -> list[CorrectnessTest]:
        return [t for t in self.tests if t.outcome is TestOutcome.FAILED]


class TimingStats(BaseModel):
    """Per-call times of one implementation at one shape, with statistics derived from them."""

    median_s: float
    iqr_s: float
    samples: list[float]
    """Every per-call time in seconds, in the order measured."""

    outliers: int = 0
    """Samples beyond 1.5 IQR of the quartiles."""

    note: str = ""


class ShapeTiming(BaseModel):
    """Reference and candidate timed at one shape variant."""

    module_mode: str | None = None
    """The mode the reference ran in at the default shape: ``train`` (BatchNorm normalises
    with batch statistics, dropout is active), ``eval`` or ``mixed``. Set by the task's
    ``POLICY`` ``mode``, else each module's own (``settings.mode`` says which)."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    variant: str
    knobs: dict[str, int]
    reference: TimingStats
    candidate: TimingStats
    speedup: float
    speedup_ci: tuple[float, float]
    floor_s: float | None = None


class Baselines(BaseModel):
    """Candidate speedups against the baselines, at the default shape."""

    eager: float | None = None
    torch_compile: float | None = None
    torch_compile_error: str | None = None


class Timing(BaseModel):
    """Timing at the default shape and per shape. Absent under ``--no-timing``."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    reference: TimingStats
    candidate: TimingStats
    speedup: float
    speedup_ci: tuple[float, float]
    per_shape: list[ShapeTiming] = Field(default_factory=list)
    baselines: Baselines = Field(default_factory=Baselines)
    speedup_range: dict[str, float] = Field(default_factory=dict)
    """``min``, ``median`` and ``max`` speedup over the timed shapes."""

    threads: int | None = None
    mode: str = "cold"
    cache_flush: str = ""
    """How caches were flushed before each timed call (what was evicted, and how)."""

    budget_s: float | None = None
    stop_reason: str = ""
    verified_timed_calls: int = 0
    """Timed calls whose outputs were checked against the reference afterwards."""

    elapsed_s: float = 0.0


class Ceilings(BaseModel):
    """Peak throughput of the device the numbers are measured on."""

    peak_flops: float
    peak_bytes_per_s: float
    source: str
    """A device-table entry (with its citation) or ``calibration:<fingerprint>``."""


class SolFraction(BaseModel):
    reference: float | None = None
    candidate: float | None = None


class Roofline(BaseModel):
    """Speed-of-light analysis at the default shape."""

    flops: float
    bytes: float
    floor_s: float
    sol_fraction: SolFraction
    ceilings: Ceilings
    bound: Literal["memory", "compute"] = "memory"


class OpAudit(BaseModel):
    """What actually ran: heavy torch ops (default shape, first seed) and custom kernels."""

    reference_ops: dict[str, int] = Field(default_factory=dict)
    candidate_ops: dict[str, int] = Field(default_factory=dict)
    custom_kernels: dict[str, int] = Field(default_factory=dict)
    """Custom kernels that ran, with call counts over the whole matrix."""

    declared_kernels: list[str] = Field(default_factory=list)
    """Custom kernels the source defines (static scan)."""

    calls: int = 0
    calls_with_custom: int = 0
    compiled: bool = False
    low_precision_ops: dict[str, int] = Field(default_factory=dict)


class CodeFacts(BaseModel):
    """Static facts about the candidate's source."""

    languages: list[str] = Field(default_factory=list)
    lines_of_code: int = 0
    reference_lines_of_code: int = 0
    build_s: float | None = None


class Assumption(BaseModel):
    """A limitation inferred from the correctness matrix, generalised into one statement."""

    statement: str
    """Plain words, e.g. "wrong when dim is odd" or "raises on non-contiguous input"."""

    kind: Literal["wrong", "raises", "crashes", "masks-special-values"]
    variants: list[str] = Field(default_factory=list)
    """The matrix cells the statement is drawn from."""

    counter_examples: list[str] = Field(default_factory=list)
    """Cells that share the condition yet passed (the statement is then weaker)."""


class Repro(BaseModel):
    """The smallest failing case found for one failure, and how to rerun it."""

    failure: str
    """The matrix cell that failed first."""

    knobs: dict[str, int]
    """Full knob values of the shrunk case."""

    seed: int
    value: str | None = None
    layout: str | None = None
    detail: str = ""
    """What is wrong at the shrunk case (the comparison's message)."""

    shrink_steps: int = 0
    command: str
    """One shell command that reruns this case with kernelproof."""

    script: str
    """A standalone Python script that shows the failure without kernelproof."""


class Environment(BaseModel):
    device: str
    device_name: str = ""
    versions: dict[str, str] = Field(default_factory=dict)
    fingerprint: str = ""
    threads: int | None = None


class Artifact(BaseModel):
    """A source file that took part in the verification."""

    path: str
    sha256: str


class Report(BaseModel):
    """The full result of verifying one candidate against one reference."""

    schema_: Literal["kernelproof.report/1"] = Field(default=REPORT_SCHEMA, alias="schema")
    verdict: Verdict
    summary: str = ""
    """One plain sentence saying why the verdict is what it is."""

    findings: list[Finding] = Field(default_factory=list)
    correctness: Correctness | None = None
    timing: Timing | None = None
    roofline: Roofline | None = None
    op_audit: OpAudit | None = None
    code: CodeFacts | None = None
    assumptions: list[Assumption] = Field(default_factory=list)
    repros: list[Repro] = Field(default_factory=list)
    environment: Environment
    candidate: Artifact | None
    reference: Artifact | None
    settings: dict[str, Any] = Field(default_factory=dict)
    """The resolved configuration the run used."""

    duration_s: float = 0.0
    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="after")
    def _verdict_matches_payload(self) -> "Report":
        expected = decide_verdict(self.findings)
        if self.verdict is not expected:
            raise ValueError(
                f"verdict {self.verdict.value!r} contradicts the findings, which imply "
                f"{expected.value!r}"
            )
        if self.verdict is Verdict.VERIFIED:
            if self.correctness is None or not self.correctness.tests:
                raise ValueError("a 'verified' report needs a correctness section with tests")
            if self.correctness.failures:
                raise ValueError("a 'verified' report cannot contain failed tests")
        return self

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


#: Which verdict wins when findings force several: the task's fault first, then a silent wrong
#: answer (the most dangerous outcome for a user), then a candidate that did not run.
_VERDICT_PRECEDENCE = [Verdict.ERROR, Verdict.INCORRECT, Verdict.BROKEN, Verdict.SUSPECT]


def decide_verdict(findings: list[Finding]) -> Verdict:
    """The verdict implied by a list of findings. The single place this rule lives."""
    forced: set[Verdict] = set()
    for finding in findings:
        if finding.forces is not None:
            forced.add(finding.forces)
        elif finding.severity is Severity.SUSPECT:
            forced.add(Verdict.SUSPECT)
        elif finding.severity is Severity.FAIL:
            forced.add(Verdict.INCORRECT)
    for verdict in _VERDICT_PRECEDENCE:
        if verdict in forced:
            return verdict
    return Verdict.VERIFIED
