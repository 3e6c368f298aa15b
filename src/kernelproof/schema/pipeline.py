"""The stages of one verification as they ran: which stage decided the verdict, how long each
took, and why the pipeline stopped before its last stage. Pure pydantic, no torch."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from kernelproof.schema.verdict import Verdict

__all__ = ["Pipeline", "PipelineStop", "Stage", "StageRecord", "decisive_stage"]


class Stage(str, Enum):
    """The stages of a verification, cheapest decisive evidence first."""

    LOAD = "load"
    """The task and the candidate read as text (a candidate without its entry point, or that
    does not parse, is ``broken`` here)."""

    STATIC_SCAN = "static-scan"
    """The candidate's source scanned (evidence only: it never decides a verdict)."""

    BUILD = "build"
    """The candidate imported and constructed in its sandboxed worker."""

    FIRST_INPUT = "first-input"
    """One call on the default shape's first input, compared with the reference."""

    MATRIX = "matrix"
    """The rest of the correctness matrix (seeds, values, layouts, shapes)."""

    OP_AUDIT = "op-audit"
    """The ops the candidate ran, against the reference's."""

    TIMING = "timing"
    """The timing phase and the speed-of-light check."""


class StageRecord(BaseModel):
    """One stage that ran."""

    stage: Stage
    duration_s: float = 0.0
    verdict: Verdict
    """The verdict the findings implied when the stage ended."""


#: Why the stages stopped before the last (:attr:`Pipeline.stopped`).
PipelineStop = Literal["fail-fast", "deadline"]


class Pipeline(BaseModel):
    """How the verification's stages ran."""

    decided_by: Stage | None = None
    """The stage whose evidence decided the verdict (for ``verified``: the last stage run)."""

    stopped: PipelineStop | None = None
    """Why the stages stopped before the last: the first decisive failure (``fail_fast``),
    or the caller's deadline; None when every stage that applies ran."""

    stages: list[StageRecord] = Field(default_factory=list)
    """The stages that ran, in order."""


def decisive_stage(stages: list[StageRecord], final: Verdict) -> Stage | None:
    """The stage from which the findings implied ``final`` and kept implying it; for a
    ``verified`` report, the last stage run (every stage had to pass)."""
    if not stages:
        return None
    if final is Verdict.VERIFIED:
        return stages[-1].stage
    decided: Stage | None = None
    for record in stages:
        if record.verdict is final:
            decided = decided or record.stage
        else:
            decided = None
    return decided or stages[-1].stage
