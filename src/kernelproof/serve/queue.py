"""The submission queue, kept in the results store's database.

Every change of a submission's state is one conditional ``UPDATE`` (compare and set on its
status and worker), never a read followed by a write. That keeps the queue correct with any
number of workers, in threads, processes, Ray actors or other servers sharing one PostgreSQL
database, and under SQLite, where a read does not lock what it read:

- two workers cannot claim one submission: the second ``UPDATE ... WHERE status = 'queued'``
  changes no row and it tries the next one;
- a result is stored in the same transaction that marks its submission done, and only if the
  submission is still this worker's, so a submission requeued under a slow worker is finished
  exactly once and its result stored exactly once;
- a worker that dies mid-verification leaves its submission ``running``; :meth:`abandon`
  requeues it once, and fails it with the reason on the second death.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import undefer

from kernelproof.schema import Report
from kernelproof.serve.tables import Submission, SubmissionStatus, utcnow
from kernelproof.store.results import ResultsStore, Verification, verification_row

__all__ = ["MAX_ATTEMPTS", "Claim", "QueueFull", "SubmissionIdentity", "SubmissionQueue"]

#: Claims per submission: the first attempt and one retry after its worker died. A candidate
#: that kills its verifier twice is not given a third machine to kill.
MAX_ATTEMPTS = 2

#: Tries of :meth:`SubmissionQueue.claim` when another worker takes each candidate row first.
CLAIM_RACES = 8

_QUEUED, _RUNNING = SubmissionStatus.QUEUED.value, SubmissionStatus.RUNNING.value
_DONE, _FAILED = SubmissionStatus.DONE.value, SubmissionStatus.FAILED.value


class QueueFull(Exception):
    """A token has as many submissions queued or running as it may."""

    def __init__(self, token_name: str, queued: int, limit: int) -> None:
        super().__init__(
            f"token {token_name!r} already has {queued} submissions queued or "
            f"running, the most it may have ({limit}); wait for some to finish "
            "(GET /api/submissions/ID)"
        )


class _NotOwned(Exception):
    """The worker finishing a submission no longer owns it: store nothing."""


@dataclass(frozen=True)
class SubmissionIdentity:
    """What makes two verifications the same: the candidate's and the task's hashes, the
    settings hash and the machine (as the store's resume lookup uses them)."""

    candidate_sha256: str
    reference_sha256: str
    settings_hash: str
    fingerprint: str


@dataclass(frozen=True)
class Claim:
    """A submission a worker claimed: what it needs to verify it."""

    id: int
    task_key: str
    source: str
    settings_hash: str
    attempt: int


class SubmissionQueue:
    """Submissions and their states, in ``store``'s database (migrated by
    :func:`kernelproof.serve.database.migrate`). Safe to share between threads."""

    def __init__(self, store: ResultsStore) -> None:
        self.store = store

    # -- submitting --------------------------------------------------------------------------

    def submit(
        self,
        token_name: str,
        task_key: str,
        source: str,
        identity: SubmissionIdentity,
        max_queued: int | None = None,
    ) -> Submission:
        """Add a submission and return it.

        With ``max_queued``, a token that already has that many submissions queued or running
        gets :class:`QueueFull` instead, and nothing is added.

        When the store already holds a verification with the same identity, the submission is
        ``done`` at once with that result (``reused``). When an identical submission is queued
        or running, this one waits for its result (``duplicate_of``) instead of being verified
        twice.
        """
        with self.store.transaction() as session:
            if max_queued is not None:
                queued = (
                    session.scalar(
                        select(func.count())
                        .select_from(Submission)
                        .where(
                            Submission.token_name == token_name,
                            Submission.status.in_((_QUEUED, _RUNNING)),
                        )
                    )
                    or 0
                )
                if queued >= max_queued:
                    raise QueueFull(token_name, queued, max_queued)
            stored = session.scalars(
                select(Verification.id)
                .where(
                    Verification.candidate_sha256 == identity.candidate_sha256,
                    Verification.reference_sha256 == identity.reference_sha256,
                    Verification.fingerprint == identity.fingerprint,
                    Verification.settings_hash == identity.settings_hash,
                )
                .order_by(Verification.id.desc())
                .limit(1)
            ).first()
            twin = (
                None
                if stored is not None
                else session.scalars(
                    select(Submission.id)
                    .where(
                        Submission.candidate_sha256 == identity.candidate_sha256,
                        Submission.reference_sha256 == identity.reference_sha256,
                        Submission.fingerprint == identity.fingerprint,
                        Submission.settings_hash == identity.settings_hash,
                        Submission.status.in_((_QUEUED, _RUNNING)),
                        Submission.duplicate_of.is_(None),
                    )
                    .order_by(Submission.id)
                    .limit(1)
                ).first()
            )
            now = utcnow()
            row = Submission(
                token_name=token_name,
                task_key=task_key,
                source=source,
                candidate_sha256=identity.candidate_sha256,
                reference_sha256=identity.reference_sha256,
                settings_hash=identity.settings_hash,
                fingerprint=identity.fingerprint,
                status=_DONE if stored is not None else _QUEUED,
                attempts=0,
                reused=stored is not None,
                verification_id=stored,
                duplicate_of=twin,
                created_at=now,
                finished_at=now if stored is not None else None,
            )
            session.add(row)
            session.flush()
            return row

    # -- working -----------------------------------------------------------------------------

    def claim(self, worker: str) -> Claim | None:
        """Claim the oldest queued submission for ``worker``; ``None`` when none is queued."""
        for _ in range(CLAIM_RACES):
            with self.store.transaction() as session:
                candidate = session.scalars(
                    select(Submission.id)
                    .where(Submission.status == _QUEUED, Submission.duplicate_of.is_(None))
                    .order_by(Submission.id)
                    .limit(1)
                ).first()
                if candidate is None:
                    return None
                now = utcnow()
                taken = session.execute(
                    update(Submission)
                    .where(Submission.id == candidate, Submission.status == _QUEUED)
                    .values(
                        status=_RUNNING,
                        worker=worker,
                        attempts=Submission.attempts + 1,
                        heartbeat_at=now,
                        started_at=now,
                    )
                ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
                if taken != 1:
                    continue  # another worker was first: try the next one
                row = session.scalars(
                    select(Submission)
                    .options(undefer(Submission.source))
                    .where(Submission.id == candidate)
                ).one()
                return Claim(
                    id=row.id,
                    task_key=row.task_key,
                    source=row.source,
                    settings_hash=row.settings_hash,
                    attempt=row.attempts,
                )
        return None

    def heartbeat(self, submission_id: int, worker: str) -> bool:
        """Say ``worker`` is still verifying the submission; ``False`` when it no longer owns
        it (it was requeued after its heartbeat went stale)."""
        with self.store.transaction() as session:
            return (
                session.execute(
                    update(Submission)
                    .where(
                        Submission.id == submission_id,
                        Submission.worker == worker,
                        Submission.status == _RUNNING,
                    )
                    .values(heartbeat_at=utcnow())
                ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
                == 1
            )

    def finish(
        self,
        claim: Claim,
        worker: str,
        run_id: int,
        level: int | None,
        problem: str,
        report: Report,
    ) -> bool:
        """Store ``report`` and mark the submission (and its waiting duplicates) done, in one
        transaction. ``False``, with nothing stored, when ``worker`` no longer owns it."""
        try:
            with self.store.transaction() as session:
                row = verification_row(
                    run_id,
                    claim.task_key,
                    level,
                    problem,
                    0,
                    report,
                    settings_hash=claim.settings_hash,
                )
                session.add(row)
                session.flush()
                now = utcnow()
                owned = session.execute(
                    update(Submission)
                    .where(
                        Submission.id == claim.id,
                        Submission.worker == worker,
                        Submission.status == _RUNNING,
                    )
                    .values(status=_DONE, verification_id=row.id, finished_at=now)
                ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
                if owned != 1:
                    raise _NotOwned  # rolls the stored row back with the transaction
                session.execute(
                    update(Submission)
                    .where(Submission.duplicate_of == claim.id, Submission.status == _QUEUED)
                    .values(status=_DONE, verification_id=row.id, reused=True, finished_at=now)
                )
        except _NotOwned:
            return False
        return True

    def fail(self, submission_id: int, reason: str, worker: str | None = None) -> bool:
        """Mark a submission (and its waiting duplicates) failed with ``reason``. With
        ``worker``, only while that worker owns it."""
        with self.store.transaction() as session:
            condition = [Submission.id == submission_id, Submission.status.in_((_QUEUED, _RUNNING))]
            if worker is not None:
                condition += [Submission.worker == worker, Submission.status == _RUNNING]
            changed = session.execute(
                update(Submission)
                .where(*condition)
                .values(status=_FAILED, reason=reason, finished_at=utcnow())
            ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
            if changed:
                session.execute(
                    update(Submission)
                    .where(Submission.duplicate_of == submission_id, Submission.status == _QUEUED)
                    .values(
                        status=_FAILED,
                        finished_at=utcnow(),
                        reason=f"the identical submission {submission_id} failed: {reason}",
                    )
                )
            return bool(changed)

    # -- recovering --------------------------------------------------------------------------

    def abandon(self, worker: str, why: str) -> list[int]:
        """``worker`` died: requeue what it was verifying, or fail it after
        :data:`MAX_ATTEMPTS` claims. Returns the ids it held."""
        with self.store.transaction() as session:
            held = list(
                session.scalars(
                    select(Submission.id).where(
                        Submission.worker == worker, Submission.status == _RUNNING
                    )
                )
            )
        for submission_id in held:
            self._abandon_one(submission_id, worker, why)
        return held

    def release(self, worker: str, why: str) -> list[int]:
        """Put back what ``worker`` was verifying when the server stopped it on purpose: the
        claim does not count as an attempt, since the candidate had no part in it."""
        with self.store.transaction() as session:
            held = list(
                session.scalars(
                    select(Submission.id).where(
                        Submission.worker == worker, Submission.status == _RUNNING
                    )
                )
            )
            session.execute(
                update(Submission)
                .where(Submission.worker == worker, Submission.status == _RUNNING)
                .values(
                    status=_QUEUED,
                    worker=None,
                    heartbeat_at=None,
                    attempts=Submission.attempts - 1,
                    reason=f"requeued: {why}",
                )
            )
        return held

    def abandon_stale(self, older_than_s: float) -> list[int]:
        """Treat running submissions whose heartbeat is older than ``older_than_s`` as
        abandoned (their worker is gone, or cut off from the database)."""
        limit = utcnow() - timedelta(seconds=older_than_s)
        with self.store.transaction() as session:
            stale = list(
                session.execute(
                    select(Submission.id, Submission.worker).where(
                        Submission.status == _RUNNING, Submission.heartbeat_at < limit
                    )
                )
            )
        for submission_id, worker in stale:
            self._abandon_one(
                submission_id,
                worker,
                f"its worker {worker} sent no heartbeat for {older_than_s:.0f} s",
            )
        return [submission_id for submission_id, _ in stale]

    def running_workers(self) -> dict[int, str]:
        """The worker of each running submission, by submission id."""
        with self.store.transaction() as session:
            rows = session.execute(
                select(Submission.id, Submission.worker).where(Submission.status == _RUNNING)
            ).all()
            return {submission_id: worker for submission_id, worker in rows if worker}

    def _abandon_one(self, submission_id: int, worker: str | None, why: str) -> None:
        submission = self.get(submission_id)
        if submission is None or submission.status != _RUNNING or submission.worker != worker:
            return  # finished or taken over meanwhile
        with self.store.transaction() as session:
            requeued = session.execute(
                update(Submission)
                .where(
                    Submission.id == submission_id,
                    Submission.worker == worker,
                    Submission.status == _RUNNING,
                    Submission.attempts < MAX_ATTEMPTS,
                )
                .values(
                    status=_QUEUED,
                    worker=None,
                    heartbeat_at=None,
                    reason=f"requeued after attempt {submission.attempts}: {why}",
                )
            ).rowcount  # type: ignore[attr-defined]  # an UPDATE's result is a CursorResult
        if not requeued:
            self.fail(
                submission_id,
                f"failed on every one of its {MAX_ATTEMPTS} attempts; the last: {why}",
                worker=worker,
            )

    # -- reading -----------------------------------------------------------------------------

    def get(self, submission_id: int, *, with_source: bool = False) -> Submission | None:
        """The submission, or ``None``; its source is loaded only ``with_source``."""
        query = select(Submission).where(Submission.id == submission_id)
        if with_source:
            query = query.options(undefer(Submission.source))
        with self.store.transaction() as session:
            return session.scalars(query).first()

    def verification(self, verification_id: int) -> Verification | None:
        """The stored verification (its report stays deferred), or ``None``."""
        with self.store.transaction() as session:
            return session.get(Verification, verification_id)

    def queued_count(self, token_name: str) -> int:
        """Submissions of this token still waiting or running."""
        with self.store.transaction() as session:
            return (
                session.scalar(
                    select(func.count())
                    .select_from(Submission)
                    .where(
                        Submission.token_name == token_name,
                        Submission.status.in_((_QUEUED, _RUNNING)),
                    )
                )
                or 0
            )

    def status_counts(self) -> dict[str, int]:
        """How many submissions are in each status."""
        with self.store.transaction() as session:
            counts = dict(
                session.execute(
                    select(Submission.status, func.count()).group_by(Submission.status)
                ).all()
            )
        return {status.value: counts.get(status.value, 0) for status in SubmissionStatus}

    def active(self, limit: int = 200) -> list[Submission]:
        """Running submissions, then queued ones, oldest first."""
        with self.store.transaction() as session:
            return list(
                session.scalars(
                    select(Submission)
                    .where(Submission.status.in_((_QUEUED, _RUNNING)))
                    .order_by(Submission.status.desc(), Submission.id)
                    .limit(limit)
                )
            )

    def results(self, task_key: str | None = None) -> list[tuple[Submission, Verification]]:
        """Done submissions with their verifications, oldest first; of one task, or all."""
        query = (
            select(Submission, Verification)
            .join(Verification, Verification.id == Submission.verification_id)
            .where(Submission.status == _DONE)
        )
        if task_key is not None:
            query = query.where(Submission.task_key == task_key)
        with self.store.transaction() as session:
            return [(s, v) for s, v in session.execute(query.order_by(Submission.id)).all()]

    def of_statuses(self, ids: Sequence[int]) -> dict[int, str]:
        """The status of each of ``ids`` that exists."""
        with self.store.transaction() as session:
            return dict(
                session.execute(
                    select(Submission.id, Submission.status).where(Submission.id.in_(list(ids)))
                ).all()
            )
