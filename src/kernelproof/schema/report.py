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
    """Within tolerance, with no probe failure."""

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
    """The candidate's error against the oracle (relative RMS, or the fixed-tolerance excess)."""

    reference_error: float | None
    """The reference's own error against the oracle, in its working dtype."""

    floor: float | None = None
    """The dtype-derived floor the reference's error is raised to before the ratio."""

    passed: bool
    """Whether this output is within tolerance."""

    detail: str = ""
    """Why it failed, in plain words (empty when it passed)."""


class CorrectnessTest(BaseModel):
    """One cell of the correctness matrix: a variant, its seed, and what the candidate did."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="strings")

    variant: InputVariant
    """The input set this cell ran on."""

    seed: int
    """The seed its inputs were built from."""

    outcome: TestOutcome
    """What the candidate did on it."""

    error_ratio: float | None = None
    """The worst output's error ratio, when outputs were compared."""

    outputs: list[OutputComparison] = Field(default_factory=list)
    """One comparison per output tensor."""

    message: str = ""
    """The failure's or the exception's message (empty when it passed)."""

    candidate_s: float | None = None
    """Wall time of the candidate's call in its worker (untimed context, for information)."""

    reference_s: float | None = None
    """Wall time of the reference's call in its worker (untimed context)."""

    compared_with: Literal["oracle", "reference"] = "oracle"
    """``oracle``: against the float64 reference. ``reference``: a variant too large for the
    float64 run (past 2x or a size limit), compared with the reference's own output at a
    tolerance derived from the smaller variants' reference errors."""


class Correctness(BaseModel):
    """The correctness matrix and how it was planned."""

    seeds: list[int]
    """Seeds drawn for this run; ``--seed`` with the first reproduces them all."""

    base_seed: int
    """The seed the run's seeds are drawn from."""

    default_knobs: dict[str, int]
    """The knob values used as the default shape (after any scaling down)."""

    task_knobs: dict[str, int]
    """The knob values as written in the task file."""

    largest_verified: dict[str, int] = Field(default_factory=dict)
    """Per knob, the largest value at which a correctness test passed."""

    scaled_down: str | None = None
    """Why the default shape was scaled down from the task's values, when it was."""

    tolerance: dict[str, Any]
    """The tolerance model in force (mode, factor, floors, or fixed atol/rtol)."""

    module_mode: str | None = None
    """The mode the reference ran in at the default shape: ``train`` (BatchNorm normalises
    with batch statistics, dropout is active), ``eval`` or ``mixed``. Set by the task's
    ``POLICY`` ``mode``, else each module's own (``settings.mode`` says which)."""

    tests: list[CorrectnessTest] = Field(default_factory=list)
    """Every cell of the matrix, in the order run."""

    @property
    def failures(self) -> list[CorrectnessTest]:
        return [t for t in self.tests if t.outcome is TestOutcome.FAILED]


class TimingStats(BaseModel):
    """Per-call times of one implementation at one shape, with statistics derived from them."""

    median_s: float
    """Median per-call time in seconds."""

    iqr_s: float
    """Interquartile range of the per-call times in seconds."""

    samples: list[float]
    """Every per-call time in seconds, in the order measured."""

    outliers: int = 0
    """Samples beyond 1.5 IQR of the quartiles."""

    note: str = ""
    """A noise warning when the samples look unstable; empty on clean data."""


class ShapeTiming(BaseModel):
    """Reference and candidate timed at one shape variant."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    variant: str
    """Name of the shape variant (``default`` for the task's shape)."""

    knobs: dict[str, int]
    """Full knob values of this shape."""

    reference: TimingStats
    """The reference's statistics at this shape."""

    candidate: TimingStats
    """The candidate's statistics at this shape."""

    speedup: float
    """Median over rounds of the reference-to-candidate ratio of medians."""

    speedup_ci: tuple[float, float]
    """Bootstrap confidence interval of the speedup, over rounds."""

    floor_s: float | None = None
    """Speed-of-light floor at this shape, when known."""


class Baselines(BaseModel):
    """Candidate speedups against the baselines, at the default shape."""

    eager: float | None = None
    """Speedup against the eager PyTorch reference."""

    torch_compile: float | None = None
    """Speedup against ``torch.compile`` of the reference."""

    torch_compile_error: str | None = None
    """Why the ``torch.compile`` baseline could not be timed."""


class Timing(BaseModel):
    """Timing at the default shape and per shape. Absent under ``--no-timing``."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    reference: TimingStats
    """The reference's statistics at the default shape."""

    candidate: TimingStats
    """The candidate's statistics at the default shape."""

    speedup: float
    """Speedup at the default shape (see :attr:`ShapeTiming.speedup`)."""

    speedup_ci: tuple[float, float]
    """Confidence interval of the default shape's speedup."""

    per_shape: list[ShapeTiming] = Field(default_factory=list)
    """The same numbers for every timed shape variant."""

    baselines: Baselines = Field(default_factory=Baselines)
    """Speedups against eager and against ``torch.compile``."""

    speedup_range: dict[str, float] = Field(default_factory=dict)
    """``min``, ``median`` and ``max`` speedup over the timed shapes."""

    threads: int | None = None
    """CPU threads both workers were pinned to while timed."""

    mode: str = "cold"
    """``cold`` (caches flushed before each call) or ``hot``."""

    cache_flush: str = ""
    """How caches were flushed before each timed call (what was evicted, and how)."""

    budget_s: float | None = None
    """The time budget the timing phase was given."""

    stop_reason: str = ""
    """Why the adaptive stopping ended (CI reached, budget spent, round limit)."""

    verified_timed_calls: int = 0
    """Timed calls whose outputs were checked against the reference afterwards."""

    ruled_out_fault_rate: float | None = None
    """The per-call fault rate the clean verified timed calls rule out at 95% confidence
    (about 3/N after N clean calls): a kernel wrong more often than this would have been seen."""

    comparable: bool = True
    """False when the candidate used more cores than the thread count it was timed at (CPU
    time from /proc against wall time): its speedup then compares unequal work."""

    discarded_rounds: int = 0
    """Rounds voided because the reference worker got too little CPU during its batch."""

    reruns: int = 0
    """Times the timing phase was restarted with fresh workers after a worker died."""

    elapsed_s: float = 0.0
    """Wall time of the timing phase."""


class Ceilings(BaseModel):
    """Peak throughput of the device the numbers are measured on."""

    peak_flops: float
    """Peak floating-point operations per second."""

    peak_bytes_per_s: float
    """Peak memory bandwidth in bytes per second."""

    source: str
    """A device-table entry (with its citation) or ``calibration:<fingerprint>``."""


class SolFraction(BaseModel):
    reference: float | None = None
    """Floor time over the reference's median (1.0 is the speed of light)."""

    candidate: float | None = None
    """Floor time over the candidate's median."""


class Roofline(BaseModel):
    """Speed-of-light analysis at the default shape."""

    flops: float
    """Floating-point operations of one reference call at the default shape."""

    bytes: float
    """Compulsory bytes that bind every algorithm: outputs written once, and the inputs every
    correct algorithm must read (those the reference consumes densely; a gathered table is
    not one), read once."""

    floor_s: float
    """The speed-of-light time: the compulsory bytes at the best bandwidth. A cold time below
    it (with a margin) is ``suspect``."""

    sol_fraction: SolFraction
    """How close each side gets to the floor."""

    ceilings: Ceilings
    """The device ceilings the floor is computed from."""

    bound: Literal["memory", "compute"] = "memory"
    """Which term sets the reference algorithm's floor: its FLOPs at peak (``compute``) or its
    bytes at bandwidth (``memory``)."""

    reference_algorithm: "ReferenceAlgorithm | None" = None
    """The same analysis against the reference's algorithm (its FLOPs, all of its inputs read):
    information only, never a reason for suspicion."""


class ReferenceAlgorithm(BaseModel):
    """Speed of light against the reference's own algorithm: its FLOPs at peak and all of its
    inputs read once. Information only: another algorithm may honestly do less work."""

    label: str = "against the reference's algorithm"
    """Says what these figures are measured against, for any reader of the JSON."""

    flops: float
    """FLOPs of one reference call."""

    bytes: float
    """Every input and parameter read once, every output written once."""

    floor_s: float
    """The larger of the FLOPs at peak and the bytes at bandwidth."""

    sol_fraction: SolFraction
    """Each side's time against that floor; above 1.0 means less work than the reference."""


class OpAudit(BaseModel):
    """What actually ran: heavy torch ops (default shape, first seed) and custom kernels."""

    reference_ops: dict[str, int] = Field(default_factory=dict)
    """Heavy aten ops the reference ran, with counts."""

    candidate_ops: dict[str, int] = Field(default_factory=dict)
    """Heavy aten ops the candidate ran, with counts."""

    custom_kernels: dict[str, int] = Field(default_factory=dict)
    """Custom kernels that ran, with call counts over the whole matrix."""

    declared_kernels: list[str] = Field(default_factory=list)
    """Custom kernels the source defines (static scan)."""

    calls: int = 0
    """Candidate calls the audit saw."""

    calls_with_custom: int = 0
    """Of those, calls where a custom kernel ran."""

    compiled: bool = False
    """Whether ``torch.compile`` ran inside the candidate."""

    low_precision_ops: dict[str, int] = Field(default_factory=dict)
    """Casts to a lower precision than the task's dtype, with counts."""


class CodeFacts(BaseModel):
    """Static facts about the candidate's source."""

    languages: list[str] = Field(default_factory=list)
    """Kernel languages the source uses (python, triton, numba, cpp, cuda)."""

    lines_of_code: int = 0
    """Non-blank lines of the candidate."""

    reference_lines_of_code: int = 0
    """Non-blank lines of the reference."""

    build_s: float | None = None
    """Time to build and import the candidate in its worker."""


class Assumption(BaseModel):
    """A limitation inferred from the correctness matrix, generalised into one statement."""

    statement: str
    """Plain words, e.g. "wrong when dim is odd" or "raises on non-contiguous input"."""

    kind: Literal["wrong", "raises", "crashes", "masks-special-values"]
    """What goes wrong when the statement holds."""

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
    """Input seed of the shrunk case."""

    value: str | None = None
    """The value transform of the failing cell, if any."""

    layout: str | None = None
    """The layout transform of the failing cell, if any."""

    detail: str = ""
    """What is wrong at the shrunk case (the comparison's message)."""

    shrink_steps: int = 0
    """How many shrinking steps succeeded."""

    command: str
    """One shell command that reruns this case with kernelproof."""

    script: str
    """A standalone Python script that shows the failure without kernelproof."""


class Environment(BaseModel):
    device: str
    """``cpu`` or ``cuda``."""

    device_name: str = ""
    """The CPU or GPU model."""

    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of python, torch and the kernel toolchains."""

    fingerprint: str = ""
    """Hash of the machine's identity (the calibration cache key)."""

    threads: int | None = None
    """CPU threads the workers ran with."""


class Sandbox(BaseModel):
    """The candidate worker's OS sandbox: what it entered, and what /proc showed from outside."""

    enabled: bool = True
    """False only when the sandbox was turned off (``sandbox=False``, for cost measurements)."""

    enforced: list[str] = Field(default_factory=list)
    """Mechanisms the worker entered before any candidate code ran (namespaces, Landlock with
    its ABI, seccomp, no capabilities, resource limits)."""

    missing: dict[str, str] = Field(default_factory=dict)
    """Mechanisms the kernel refused, with its reason."""

    outside: dict[str, Any] = Field(default_factory=dict)
    """What the controller read in /proc about the serving process: separate namespaces,
    seccomp mode, no_new_privs, effective capabilities. The worker cannot forge these."""

    insecure_accepted: bool = False
    """``--insecure-sandbox`` was given: gaps are ``warn`` findings instead of ``suspect``."""


class Artifact(BaseModel):
    """A source file that took part in the verification."""

    path: str
    """The file as given on the command line."""

    sha256: str
    """Hash of its contents."""


class Report(BaseModel):
    """The full result of verifying one candidate against one reference."""

    schema_: Literal["kernelproof.report/1"] = Field(default=REPORT_SCHEMA, alias="schema")
    """The schema version, ``kernelproof.report/1`` (serialised as ``schema``)."""

    verdict: Verdict
    """The one-word answer; always the verdict the findings imply."""

    summary: str = ""
    """One plain sentence saying why the verdict is what it is."""

    findings: list[Finding] = Field(default_factory=list)
    """Every piece of evidence, most severe first."""

    correctness: Correctness | None = None
    """The correctness matrix (absent when the run stopped before it)."""

    timing: Timing | None = None
    """Timing (absent under ``--no-timing`` or on a failed run)."""

    roofline: Roofline | None = None
    """Speed of light at the default shape, when it could be computed."""

    op_audit: OpAudit | None = None
    """What actually ran inside the candidate."""

    code: CodeFacts | None = None
    """Static facts about the candidate's source."""

    assumptions: list[Assumption] = Field(default_factory=list)
    """Limitations inferred from the matrix's failures."""

    repros: list[Repro] = Field(default_factory=list)
    """The smallest failing case of each assumption, with a command to rerun it."""

    sandbox: Sandbox | None = None
    """The candidate worker's OS sandbox (absent when no candidate worker started)."""

    environment: Environment
    """The machine and software the numbers come from."""

    candidate: Artifact | None
    """The candidate's file and hash (absent when unreadable)."""

    reference: Artifact | None
    """The reference's file and hash (absent when unreadable)."""

    settings: dict[str, Any] = Field(default_factory=dict)
    """The resolved configuration the run used."""

    duration_s: float = 0.0
    """Wall time of the whole verification."""

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
