"""The report: the one typed model every output (JSON, terminal, HTML, store) is produced from."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelproof.schema.correctness import Correctness
from kernelproof.schema.e2e import E2E
from kernelproof.schema.envelope import Envelope
from kernelproof.schema.finding import Finding
from kernelproof.schema.fingerprint import GpuFacts
from kernelproof.schema.pipeline import Pipeline
from kernelproof.schema.recheck import RecheckOrigin
from kernelproof.schema.roofline import Roofline
from kernelproof.schema.timing import Timing
from kernelproof.schema.verdict import Severity, Verdict

REPORT_SCHEMA: Final = "kernelproof.report/1"


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

    native: dict[str, Any] = Field(default_factory=dict)
    """Where the CPU time went, sampled from outside the processes (py-spy on native stacks)
    during the correctness matrix, per worker (``candidate``, ``reference``): samples, threads
    seen on CPU, the top libraries and functions. Empty when sampling was off or unavailable."""


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

    # -- the environment fingerprint (issue 28): what the verdict is bound to ----------------
    # Every field below is additive and optional: a report of the older format lacks them and
    # still loads; its verdict is unbound (kernelproof.schema.fingerprint).

    fingerprint_schema: str | None = None
    """``kernelproof.fingerprint/1`` when this report records the whole environment fingerprint
    (the fields below, the toolchain in ``versions``); ``None`` in older reports."""

    arch: str = ""
    """The machine architecture (``x86_64``, ``aarch64``)."""

    cpu_model: str = ""
    """The CPU model, from /proc/cpuinfo."""

    isa: list[str] | None = None
    """The CPU's instruction-set extensions that select code paths (sse4_2, avx2, fma,
    avx512f, amx_tile; asimd, sve on ARM), sorted."""

    cpu_count: int | None = None
    """Logical CPUs of the machine."""

    memory_gib: int | None = None
    """Total memory, GiB."""

    gpu: GpuFacts | None = None
    """The GPU (name, compute capability, driver) on a CUDA run."""

    matrix_threads: int | None = None
    """Threads the correctness matrix ran at (a sample also runs at one thread); ``threads``
    is the timing's count."""


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

    envelope: Envelope | None = None
    """Where the verdict holds: every call signature (shapes, dtypes, strides, device) at which
    a matrix cell passed, and per knob the range between verified values that counts as
    covered. Built from the passed cells only, so a report that is not ``verified`` may carry
    one too; :func:`kernelproof.guard` refuses such reports. Absent when no cell ran."""

    e2e: E2E | None = None
    """The end-to-end check (``kernelproof e2e``): isolated verdicts and envelopes against the
    host's calls, error attribution, soak, and the Amdahl table. Absent for ``verify``."""

    pipeline: Pipeline | None = None
    """The stages as they ran: which decided the verdict, their times, and why they stopped
    early (fail-fast scoring, a deadline). Absent for reports made before any stage ran."""

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

    recheck: RecheckOrigin | None = None
    """Set on a verdict ``kernelproof recheck`` produced: the verdict it re-proves and the
    environment differences that invalidated it. ``None`` for a first verification."""

    model_config = ConfigDict(populate_by_name=True)

    @model_validator(mode="after")
    def _verdict_matches_payload(self) -> Report:
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
