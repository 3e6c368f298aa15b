"""The task-adequacy audit: can the comparator tell a wrong answer from a right one on this task?

Mutants of the true output go through the same comparator a candidate's output does. A mutant
that must be rejected but is accepted makes the task *degenerate* (``return zeros`` would pass
it); a control that must be accepted but is rejected makes the comparator *too tight* (a kernel
as accurate as the reference could fail). Pure pydantic: no torch import.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ADEQUACY_SCHEMA: Final = "kernelproof.adequacy/1"


class AuditExitCode(IntEnum):
    """Process exit status of ``kernelproof audit-task``. ``ERROR`` matches ``verify``'s 4."""

    ADEQUATE = 0
    """Every must-reject mutant is rejected and every control accepted."""

    INADEQUATE = 1
    """The task is degenerate (a must-reject mutant passes) or the comparator is too tight."""

    ERROR = 4
    """The task or the command is at fault: a clear message says what to fix."""


class MutantResult(BaseModel):
    """One mutant of the true output and what the comparator made of it."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    name: str
    """Stable identifier: ``zeros``, ``constant``, ``input-passthrough``, ``bf16-round-trip``,
    ``perturbation``, ``off-by-one``, or a control (``rounding-noise``, ``exact``)."""

    must: Literal["reject", "accept"]
    """What an adequate task and comparator do with it: mutants are rejected, controls accepted."""

    accepted: bool
    """Whether the comparator passed it. ``False`` when the mutant was skipped."""

    error_ratio: float | None = None
    """The comparator's error ratio for the mutant (``None`` when skipped or not comparable)."""

    detail: str = ""
    """The comparator's explanation, or why the mutant was skipped."""

    skipped: bool = False
    """The mutant does not apply to this output (no input of the output's shape, a dtype no
    wider than bfloat16); ``detail`` says why."""

    @model_validator(mode="after")
    def _skipped_is_not_accepted(self) -> MutantResult:
        if self.skipped and self.accepted:
            raise ValueError(f"mutant {self.name!r} cannot be both skipped and accepted")
        return self

    @property
    def as_expected(self) -> bool:
        """True when the comparator did what it must (a skipped mutant counts as expected)."""
        if self.skipped:
            return True
        return self.accepted == (self.must == "accept")


class OutputAudit(BaseModel):
    """The mutants of one output tensor of the reference, on one seed."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    seed: int
    """The seed the inputs were built from."""

    index: int
    """Position among the reference's tensor outputs (0 for a single tensor)."""

    dtype: str
    """The reference's output dtype (the working dtype the mutants are cast to)."""

    shape: list[int]
    """The output's shape."""

    oracle_dtype: str = "float64"
    """The oracle's output dtype: not float64 when the task hard-codes a dtype."""

    rms: float
    """Root mean square of the finite elements of the float64 oracle: the output's scale."""

    mean: float = 0.0
    """Mean of the same elements (the ``constant`` mutant's value)."""

    std: float = 0.0
    """Standard deviation of the same elements: how much the output varies around its mean."""

    mutants: list[MutantResult] = Field(default_factory=list)
    """Every mutant and control tried on this output."""

    @property
    def wrongly_accepted(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.must == "reject" and m.accepted]

    @property
    def wrongly_rejected(self) -> list[MutantResult]:
        return [m for m in self.mutants if m.must == "accept" and not m.accepted]


class AdequacyReport(BaseModel):
    """The audit of one task: every output's mutants, and the verdict drawn from them."""

    model_config = ConfigDict(populate_by_name=True, ser_json_inf_nan="null")

    schema_: Literal["kernelproof.adequacy/1"] = Field(default=ADEQUACY_SCHEMA, alias="schema")
    """The schema version, ``kernelproof.adequacy/1`` (serialised as ``schema``)."""

    task: str
    """Path of the reference file audited."""

    sha256: str = ""
    knobs: dict[str, int] = Field(default_factory=dict)
    """Knob values the audit ran at (the default shape, after any scaling down)."""

    task_knobs: dict[str, int] = Field(default_factory=dict)
    """Knob values as written in the task file."""

    scaled_down: str | None = None
    """Why the default shape was scaled down from the task's values, when it was."""

    seeds: list[int] = Field(default_factory=list)
    """Seeds the audit ran on."""

    base_seed: int | None = None
    """Seed of the run's draws; ``--seed`` with it reproduces the same inputs (and the same
    inputs as ``kernelproof verify --seed`` with as many seeds)."""

    tolerance: dict[str, Any] = Field(default_factory=dict)
    """The tolerance model audited (``TolerancePolicy.describe()``)."""

    settings: dict[str, Any] = Field(default_factory=dict)
    """The resolved configuration the audit used."""

    outputs: list[OutputAudit] = Field(default_factory=list)
    """One audit per (seed, output)."""

    degenerate: bool
    """Some must-reject mutant was accepted: a wrong answer passes this task."""

    too_tight: bool
    """Some control was rejected: an answer as accurate as the reference could fail."""

    problems: list[str] = Field(default_factory=list)
    """Plain sentences, one per (output, mutant) that misbehaved, with the numbers behind it."""

    notes: list[str] = Field(default_factory=list)
    """Context that is not a problem (sizing, skipped mutants)."""

    duration_s: float = 0.0
    """Wall time of the audit."""

    @model_validator(mode="after")
    def _verdict_matches_outputs(self) -> AdequacyReport:
        degenerate = any(o.wrongly_accepted for o in self.outputs)
        too_tight = any(o.wrongly_rejected for o in self.outputs)
        if self.degenerate != degenerate or self.too_tight != too_tight:
            raise ValueError(
                f"degenerate={self.degenerate}, too_tight={self.too_tight} contradict the "
                f"mutant results, which imply degenerate={degenerate}, too_tight={too_tight}"
            )
        if (degenerate or too_tight) and not self.problems:
            raise ValueError("a degenerate or too-tight audit must say why in `problems`")
        return self

    @property
    def adequate(self) -> bool:
        return not (self.degenerate or self.too_tight)

    @property
    def exit_code(self) -> AuditExitCode:
        return AuditExitCode.ADEQUATE if self.adequate else AuditExitCode.INADEQUATE

    @property
    def verdict_line(self) -> str:
        """One line: ``adequate``, or ``degenerate: ...`` / ``too tight: ...`` with the first
        problem."""
        if self.adequate:
            return "adequate"
        label = "degenerate" if self.degenerate else "too tight"
        if self.degenerate and self.too_tight:
            label = "degenerate and too tight"
        return f"{label}: {self.problems[0]}"

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)
