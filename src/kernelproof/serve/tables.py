"""The server's table: one row per submission, beside the results store's tables.

The queue *is* this table: a submission's ``status`` moves ``queued`` -> ``running`` ->
``done`` or ``failed``, and everything a worker needs to verify it (the task, the source) is in
the row, so a restart of the server or of any worker loses nothing.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, deferred, mapped_column

__all__ = ["Submission", "SubmissionStatus", "utcnow"]


def utcnow() -> datetime:
    """The current time in UTC, naive, as the results store keeps its timestamps."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class SubmissionStatus(str, Enum):
    """Where a submission stands."""

    QUEUED = "queued"
    """Waiting for a worker (or, with ``duplicate_of`` set, for an identical submission)."""

    RUNNING = "running"
    """A worker claimed it and is verifying it."""

    DONE = "done"
    """Verified; ``verification_id`` names the stored report, whatever its verdict."""

    FAILED = "failed"
    """No report could be produced (the worker died on every attempt); ``reason`` says why."""


class ServeBase(DeclarativeBase):
    """Declarative base of the server's own tables (the store's are in ``store/results.py``)."""


class Submission(ServeBase):
    """One candidate submitted over HTTP, and where its verification stands."""

    __tablename__ = "kernelproof_submissions"
    __table_args__ = (
        Index("ix_kernelproof_submissions_status", "status", "id"),
        Index("ix_kernelproof_submissions_token", "token_name", "status"),
        Index("ix_kernelproof_submissions_task", "task_key", "status"),
        Index(
            "ix_kernelproof_submissions_identity",
            "candidate_sha256",
            "reference_sha256",
            "fingerprint",
            "settings_hash",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_name: Mapped[str] = mapped_column(String(128))
    """The name of the token that submitted it (never the token itself)."""

    task_key: Mapped[str] = mapped_column(String(512))
    source: Mapped[str] = deferred(mapped_column(Text))
    """The candidate's source. Deferred: only its owner may read it, and lists never need it."""

    candidate_sha256: Mapped[str] = mapped_column(String(64))
    reference_sha256: Mapped[str] = mapped_column(String(64))
    settings_hash: Mapped[str] = mapped_column(String(64))
    fingerprint: Mapped[str] = mapped_column(String(64))
    """With the three hashes above: the identity under which a stored result is reused."""

    status: Mapped[str] = mapped_column(String(16), default=SubmissionStatus.QUEUED.value)
    """A :class:`SubmissionStatus` value."""

    attempts: Mapped[int] = mapped_column(Integer, default=0)
    """How many times a worker claimed it."""

    worker: Mapped[str | None] = mapped_column(String(256), nullable=True)
    """The worker verifying it (``host:pid``), or that last did."""

    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    """When its worker last said it is alive (UTC)."""

    duplicate_of: Mapped[int | None] = mapped_column(
        ForeignKey("kernelproof_submissions.id"), nullable=True
    )
    """An identical submission queued or running when this one came in: this one takes that
    one's result instead of being verified again."""

    reused: Mapped[bool] = mapped_column(Boolean, default=False)
    """Whether its result is an earlier, identical verification's."""

    verification_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """The stored verification holding its report, once done. The database holds the
    foreign key (migration 0002); the model leaves it out because the store's tables belong
    to another declarative base."""

    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    """Why it failed, or was requeued."""

    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)

    def __repr__(self) -> str:
        return (
            f"Submission(id={self.id}, task_key={self.task_key!r}, "
            f"status={self.status!r}, attempts={self.attempts})"
        )
