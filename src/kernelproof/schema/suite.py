"""A benchmark run over a suite: its tasks, each verification's report, and the summary scores.

These are the values ``kernelproof bench`` produces and the report layer renders, so they live
here rather than in :mod:`kernelproof.suite`: rendering needs the data, not the code that runs
a suite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.report import Report

SUITE_SUMMARY_SCHEMA: Final = "kernelproof.suite-summary/1"

#: Largest speedup (and smallest, as its inverse) that enters a geometric mean. Two orders of
#: magnitude: beyond that a speedup says more about the task (redundant work in the reference)
#: or the timer than about the kernel, and one clamped task then moves the geomean of a
#: 100-task suite by at most 100 ** (1 / 100), about 5 %.
MAX_SPEEDUP = 100.0


class BenchTask(BaseModel):
    """One task of a suite and the candidates found for it (possibly none)."""

    model_config = ConfigDict(frozen=True)

    key: str
    """Stable name, e.g. ``level1/3_Softmax`` or ``gpumode/vectorsum``."""

    reference: Path
    """The task's reference file (or folder, for GPU MODE)."""

    level: int | None
    """KernelBench level, or ``None`` for suites without levels."""

    problem: str
    """The problem's id within its level, e.g. ``"3"``."""

    candidates: tuple[Path, ...]
    """The solutions found for the task, in sample order."""


class BenchItem(BaseModel):
    """One verification to run: a candidate (sample) of a task."""

    model_config = ConfigDict(frozen=True)

    task: BenchTask
    """The task the candidate solves."""

    candidate: Path
    """The candidate's file."""

    sample: int
    """Which candidate for this task (0 for the first or only one)."""


class GroupSummary(BaseModel):
    """The metrics of one group of results: the whole suite or one level."""

    model_config = ConfigDict(frozen=True)

    tasks: int
    """Tasks in the denominator of fast_p (distinct tasks, or the suite's count when given)."""

    samples: int
    """Verification results (candidates) in the group."""

    verified: int
    """Samples whose verdict is ``verified``."""

    tasks_verified: int
    """Tasks with at least one verified sample."""

    correctness_rate: float | None
    """``verified / samples``."""

    verdicts: dict[str, int]
    """Samples per verdict."""

    fast_p: dict[float, float]
    """Share of all tasks whose best candidate is verified and faster than p, per p."""

    geomean_speedup: float | None
    """Geometric-mean speedup over eager PyTorch of the verified, timed tasks."""

    geomean_speedup_vs_compile: float | None
    """The same against ``torch.compile`` of the reference."""

    geomean_speedup_all_shapes: float | None
    """The same with each task's speedup taken as the geomean over all its timed shapes."""

    timed_tasks: int
    """Verified tasks with a speedup (those entering :attr:`geomean_speedup`): a speedup
    timed without an interval (too few rounds) is not one."""

    shapes_without_interval: int = 0
    """Timed shapes of the tasks' best verified samples left out of every speedup here for
    having no interval (too few rounds for a bootstrap)."""

    floor_clamped: int
    """Samples with a candidate time raised to the physical floor before scoring."""

    pass_at_k: dict[int, float]
    """Mean pass@k over tasks, for each k every task has enough samples for."""


class SuiteSummary(BaseModel):
    """Every suite metric, overall and per level. JSON-serialisable with :meth:`to_json`."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    schema_: str = Field(default=SUITE_SUMMARY_SCHEMA, alias="schema")
    """The schema version, ``kernelproof.suite-summary/1`` (serialised as ``schema``)."""

    overall: GroupSummary
    """The metrics over every result of the run."""

    levels: dict[int, GroupSummary] = Field(default_factory=dict)
    """Per KernelBench level; records without a level count only in :attr:`overall`."""

    max_speedup: float = MAX_SPEEDUP
    """The clamp applied to each speedup before a geometric mean (and its inverse below)."""

    def to_json(self) -> str:
        """The summary as indented JSON, with ``schema`` as its first key."""
        return self.model_dump_json(by_alias=True, indent=2)


class BenchOutcome(BaseModel):
    """What one ``kernelproof bench`` run produced, as the leaderboard renders it."""

    run_id: int
    """The run's id in the results store."""

    layout: str
    """The suite layout that read the suite (``kernelbench``, ``gpumode``, ``native``)."""

    tasks: list[BenchTask]
    """Every task of the suite, those without a solution included."""

    summary: SuiteSummary
    """The suite metrics over every stored result of the run (resumed ones included)."""

    reports: list[tuple[BenchItem, Report]] = Field(default_factory=list)
    """The verifications run this time, in the order they finished."""

    resumed: int = 0
    """Verifications taken from the store instead of run again."""

    interrupted: bool = False
    """Ctrl-C stopped the run; what finished is stored."""

    wall_s: float = 0.0
    """Wall time of the run."""
