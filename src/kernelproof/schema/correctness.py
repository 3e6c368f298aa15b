"""The correctness matrix in a report: each cell (variant, seed) and what the candidate did."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.variant import InputVariant


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

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

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

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

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

    threads: int | None = None
    """Threads the matrix ran at: the machine's own count (``--threads`` caps it), where a
    parallel kernel's races fire; the default shape's first seed is repeated at one thread
    (cell ``seed:0@1-thread``). Timing runs at ``timing.threads``."""

    module_mode: str | None = None
    """The mode the reference ran in at the default shape: ``train`` (BatchNorm normalises
    with batch statistics, dropout is active), ``eval`` or ``mixed``. Set by the task's
    ``POLICY`` ``mode``, else each module's own (``settings.mode`` says which)."""

    tests: list[CorrectnessTest] = Field(default_factory=list)
    """Every cell of the matrix, in the order run."""

    @property
    def failures(self) -> list[CorrectnessTest]:
        return [t for t in self.tests if t.outcome is TestOutcome.FAILED]
