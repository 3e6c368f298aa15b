"""What the API answers and the pages show, as pydantic models built from stored rows.

The leaderboard of a task ranks its *verified* results by the lower bound of the speedup's
confidence interval: a claim is only as good as what the measurement supports, so a noisy
2x whose interval reaches down to 0.9x ranks below a steady 1.3x. Suspect and incorrect
results are listed apart, never ranked, and fast_p counts every result of the task.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from typing import overload

from pydantic import BaseModel, Field

from kernelproof.schema import Verdict
from kernelproof.serve.tables import Submission, SubmissionStatus
from kernelproof.store.metrics import DEFAULT_FAST_P, fast_p
from kernelproof.store.results import Verification

__all__ = [
    "Entry",
    "Result",
    "SubmissionView",
    "TaskLeaderboard",
    "TaskSummary",
    "submission_view",
    "task_leaderboard",
]


class Result(BaseModel):
    """A done submission's scored result."""

    verdict: Verdict
    speedup: float | None = None
    """Scored speedup over eager PyTorch at the default shape; ``None`` when not timed, or
    timed without an interval (too few rounds: not a measurement)."""

    speedup_ci: tuple[float, float] | None = None
    """Its confidence interval, two finite numbers; ``None`` when not measured."""

    verification_id: int
    """The stored verification (``kernelproof history`` shows it too)."""


class SubmissionView(BaseModel):
    """``GET /api/submissions/{id}``."""

    id: int
    task: str
    status: SubmissionStatus
    submitted_by: str
    attempts: int
    worker: str | None = None
    """The worker verifying it (``host:pid`` for a local worker), while it runs."""

    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    reused: bool = False
    """The result is an earlier, identical verification's (same candidate, task, settings and
    machine), returned without verifying again."""

    reason: str | None = None
    """Why it failed, or why it was requeued."""

    result: Result | None = None
    """Once done."""

    packet: str | None = None
    """The review packet's page, once done."""

    source: str | None = None
    """The submitted source: only for the token that submitted it."""


def _result(verification: Verification) -> Result:
    # One rule for the store, the metrics and the API: no interval, no speedup.
    record = verification.to_record()
    return Result(
        verdict=Verdict(verification.verdict),
        speedup=record.speedup,
        speedup_ci=record.speedup_ci,
        verification_id=verification.id,
    )


@overload
def _utc(moment: datetime) -> datetime: ...
@overload
def _utc(moment: None) -> None: ...
def _utc(moment: datetime | None) -> datetime | None:
    """A stored time (naive, in UTC: SQLite keeps no zone) with its zone, so the API's times
    are RFC 3339 (``...Z``/``+00:00``), as its schema says."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=timezone.utc)


def submission_view(
    submission: Submission, verification: Verification | None, source: str | None = None
) -> SubmissionView:
    done = submission.status == SubmissionStatus.DONE.value and verification is not None
    return SubmissionView(
        id=submission.id,
        task=submission.task_key,
        status=SubmissionStatus(submission.status),
        submitted_by=submission.token_name,
        attempts=submission.attempts,
        worker=submission.worker if submission.status == SubmissionStatus.RUNNING.value else None,
        created_at=_utc(submission.created_at),
        started_at=_utc(submission.started_at),
        finished_at=_utc(submission.finished_at),
        reused=submission.reused,
        reason=submission.reason,
        result=_result(verification) if done and verification is not None else None,
        packet=f"/submissions/{submission.id}" if done else None,
        source=source,
    )


class Entry(BaseModel):
    """One distinct result on a leaderboard (identical submissions share one)."""

    submission_id: int
    """The first submission that produced it."""

    submitted_by: str
    submitted_at: datetime
    result: Result
    packet: str


class TaskLeaderboard(BaseModel):
    """``GET /api/leaderboard/{task}`` and the task's page."""

    task: str
    ranked: list[Entry] = Field(default_factory=list)
    """Verified results, best lower CI bound first; untimed ones last."""

    suspect: list[Entry] = Field(default_factory=list)
    incorrect: list[Entry] = Field(default_factory=list)
    other: list[Entry] = Field(default_factory=list)
    """Broken candidates and errors."""

    fast_p: dict[str, float] = Field(default_factory=dict)
    """For each p, the share of *all* distinct results here that are verified and faster than
    p times eager PyTorch (KernelBench's fast_p over this task's submissions)."""


class TaskSummary(BaseModel):
    """One task in ``GET /api/tasks``."""

    task: str
    level: int | None
    problem: str
    results: int
    """Distinct results stored for it."""

    verified: int
    best_speedup_ci_low: float | None = None
    """The leader's lower CI bound."""


def _ci_low(entry: Entry) -> float:
    low = entry.result.speedup_ci[0] if entry.result.speedup_ci else None
    return low if low is not None and math.isfinite(low) else -math.inf


def task_leaderboard(task: str, rows: list[tuple[Submission, Verification]]) -> TaskLeaderboard:
    """The leaderboard of ``task`` from its done submissions (oldest first)."""
    first: dict[int, tuple[Submission, Verification]] = {}
    for submission, verification in rows:
        first.setdefault(verification.id, (submission, verification))
    board = TaskLeaderboard(task=task)
    records = []
    for submission, verification in first.values():
        entry = Entry(
            submission_id=submission.id,
            submitted_by=submission.token_name,
            submitted_at=_utc(submission.created_at),
            result=_result(verification),
            packet=f"/submissions/{submission.id}",
        )
        verdict = entry.result.verdict
        {
            Verdict.VERIFIED: board.ranked,
            Verdict.SUSPECT: board.suspect,
            Verdict.INCORRECT: board.incorrect,
        }.get(verdict, board.other).append(entry)
        records.append(
            dataclasses.replace(verification.to_record(), task_key=f"submission-{submission.id}")
        )
    board.ranked.sort(key=lambda e: (-_ci_low(e), e.submission_id))
    board.fast_p = {f"{p:g}": share for p, share in fast_p(records, DEFAULT_FAST_P).items()}
    return board
