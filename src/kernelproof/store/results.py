"""The results store: every verification of a bench run, kept in SQL through SQLAlchemy 2.

One :class:`Run` row per ``kernelproof bench`` invocation, one :class:`Verification` row per
candidate verified in it, holding the scored numbers as columns (for queries, metrics and
``compare``) and the full report as JSON (for review). The default is a SQLite file; any
SQLAlchemy URL works, PostgreSQL being the one meant for a shared server or a Ray cluster.

Durability and concurrency:

- Each write is its own committed transaction, so a crash of the controller, a worker or the
  machine loses nothing already added.
- Each call opens and closes its own session, so one :class:`ResultsStore` is safe to share
  between threads.
- SQLite runs in WAL mode with a busy timeout, so several processes on one machine may write the
  same file (readers never block writers). WAL needs a local file system: for writers on several
  machines use PostgreSQL.

Objects returned by the store are detached snapshots: reading their columns works after the call,
but :attr:`Verification.report_json` is deferred (reports are large) and must be fetched with
:meth:`ResultsStore.report`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    create_engine,
    event,
    or_,
    select,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    deferred,
    mapped_column,
    sessionmaker,
    undefer,
)
from sqlalchemy.pool import StaticPool

from kernelproof.errors import UsageError
from kernelproof.schema import Report, Verdict
from kernelproof.schema.binding import report_fingerprint
from kernelproof.schema.environment_rule import BINDING_COMPONENTS
from kernelproof.schema.interval import measured_interval
from kernelproof.store.metrics import ResultRecord, record_from_report
from kernelproof.store.schema_version import META_TABLE, check_version, upgrade

__all__ = [
    "DB_ENV",
    "DEFAULT_DB_NAME",
    "ProofHead",
    "RESULT_NEUTRAL_SETTINGS",
    "Recheck",
    "ResultsStore",
    "Run",
    "RunStatus",
    "Verification",
    "default_url",
    "settings_hash",
    "verification_row",
]

#: Environment variable naming the store's SQLAlchemy URL when no ``--db`` is given.
DB_ENV = "KERNELPROOF_DB"

#: File name of the default SQLite store, created in the current directory.
DEFAULT_DB_NAME = "kernelproof.db"

#: How long a SQLite writer waits for another process's write lock before failing. A write holds
#: the lock for one small transaction (milliseconds); a minute absorbs a WAL checkpoint or a slow
#: disk without losing a verification that took minutes to compute.
SQLITE_BUSY_TIMEOUT_MS = 60_000

#: Settings keys that do not change a verification's result, left out of :func:`settings_hash`:
#: ``build_s`` is a measurement the report adds to its settings, not a setting; the others are
#: where outputs go or how a bench run is scheduled (report paths, the store, parallelism, the Ray
#: address, the resume switch, a run label), which cannot change any verdict or number.
RESULT_NEUTRAL_SETTINGS: frozenset[str] = frozenset(
    {
        "build_s",
        "json",
        "json_path",
        "html",
        "html_path",
        "reports_dir",
        "output",
        "output_dir",
        "db",
        "db_url",
        "jobs",
        "ray",
        "ray_address",
        "resume",
        "label",
    }
)

#: Hex digits of the settings hash kept: 64 bits cannot collide among one user's settings.
SETTINGS_HASH_HEX_DIGITS = 16


def settings_hash(settings: Mapping[str, Any]) -> str:
    """A stable hash of the settings that affect results, for the resume lookup.

    The settings are dumped as JSON with sorted keys and no whitespace, after dropping the keys in
    :data:`RESULT_NEUTRAL_SETTINGS`. Two settings dicts that differ only in those keys, or in key
    order, hash the same. Values must be JSON-serialisable (``Settings.model_dump(mode="json")``).
    """
    kept = {key: value for key, value in settings.items() if key not in RESULT_NEUTRAL_SETTINGS}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:SETTINGS_HASH_HEX_DIGITS]


#: The module-level hash under a name that parameters called ``settings_hash`` do not shadow.
_hash_settings = settings_hash


def default_url() -> str:
    """The store's URL when none is given: ``$KERNELPROOF_DB``, else ``kernelproof.db`` here."""
    return os.environ.get(DB_ENV) or f"sqlite:///{Path.cwd() / DEFAULT_DB_NAME}"


def _utcnow() -> datetime:
    """The current time in UTC, naive (SQLite keeps no zone; every timestamp here is UTC)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _finite(value: float | None) -> float | None:
    """The value, or ``None`` when it is missing or not finite (SQLite stores NaN as NULL and
    JSON has no spelling for NaN or Inf, so no non-finite number is stored)."""
    return value if value is not None and math.isfinite(value) else None


class RunStatus(str, Enum):
    """Where a bench run stands."""

    RUNNING = "running"
    """Started and not finished; also what a run whose controller was killed is left as."""

    FINISHED = "finished"
    """Every task was verified or resumed."""

    INTERRUPTED = "interrupted"
    """Stopped early (Ctrl-C, a fatal error); its stored verifications remain valid."""


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""


class Run(Base):
    """One ``kernelproof bench`` invocation."""

    __tablename__ = "kernelproof_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[datetime] = mapped_column(DateTime, default=_utcnow)
    """UTC."""

    finished_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    suite: Mapped[str] = mapped_column(Text)
    """The suite directory as given."""

    solutions: Mapped[str] = mapped_column(Text)
    """The solutions directory as given."""

    kernelproof_version: Mapped[str] = mapped_column(String(64))
    fingerprint: Mapped[str] = mapped_column(String(64))
    """The machine fingerprint (``kernelproof.roofline.machine_fingerprint``)."""

    device: Mapped[str] = mapped_column(String(256))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    """The run's resolved settings (and its bench options)."""

    status: Mapped[str] = mapped_column(String(16), default=RunStatus.RUNNING.value)
    """A :class:`RunStatus` value."""

    label: Mapped[str | None] = mapped_column(Text, nullable=True)
    """A free-form name the user gave the run (a commit, a model name)."""

    def __repr__(self) -> str:
        return f"Run(id={self.id}, status={self.status!r}, suite={self.suite!r})"


class StoreMeta(Base):
    """Facts about the store itself: its schema version (:mod:`kernelproof.store.schema_version`)."""

    __tablename__ = META_TABLE

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Verification(Base):
    """One candidate verified in one run.

    The speedup columns hold *scored* values (:func:`kernelproof.store.metrics.record_from_report`):
    the report's own, scaled down where the candidate's median was below the physical floor
    (``floor_clamped``). The report as produced is in :attr:`report_json`.
    """

    __tablename__ = "kernelproof_verifications"
    __table_args__ = (
        Index(
            "ix_kernelproof_verifications_resume",
            "candidate_sha256",
            "reference_sha256",
            "fingerprint",
            "settings_hash",
        ),
        Index("ix_kernelproof_verifications_task", "task_key", "created_at"),
        Index("ix_kernelproof_verifications_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(
        ForeignKey("kernelproof_runs.id", ondelete="CASCADE"), index=True
    )
    task_key: Mapped[str] = mapped_column(String(512))
    """The task within its suite, e.g. ``"level1/3_Softmax"``."""

    level: Mapped[int | None] = mapped_column(Integer, nullable=True)
    problem: Mapped[str] = mapped_column(String(256))
    sample: Mapped[int] = mapped_column(Integer, default=0)
    candidate_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    candidate_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    reference_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    device: Mapped[str] = mapped_column(String(256))
    """The report's device name (or kind, when it has no name)."""

    settings_hash: Mapped[str] = mapped_column(String(64))
    verdict: Mapped[str] = mapped_column(String(16))
    """A :class:`~kernelproof.schema.Verdict` value."""

    exit_code: Mapped[int] = mapped_column(Integer)
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    speedup_ci_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    speedup_ci_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    speedup_vs_compile: Mapped[float | None] = mapped_column(Float, nullable=True)
    per_shape_speedups: Mapped[dict[str, float | None]] = mapped_column(JSON, default=dict)
    """Speedup per timed shape; ``null`` for a shape timed without an interval."""
    floor_clamped: Mapped[bool] = mapped_column(Boolean, default=False)
    duration_s: Mapped[float] = mapped_column(Float, default=0.0)
    report_json: Mapped[str] = deferred(mapped_column(Text), raiseload=True)
    """The full ``Report.to_json()``. Deferred: fetch it with :meth:`ResultsStore.report`."""

    created_at: Mapped[datetime] = mapped_column(DateTime, default=_utcnow)
    """UTC."""

    environment_digest: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """The digest of the components the verdict is bound to
    (:data:`~kernelproof.schema.environment_rule.BINDING_COMPONENTS`); ``None`` in rows stored
    before schema version 2."""

    environment: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """The verdict's environment fingerprint, component by component (see
    :mod:`kernelproof.schema.fingerprint`); ``None`` in rows stored before version 2."""

    def to_record(self) -> ResultRecord:
        """The row as a :class:`~kernelproof.store.metrics.ResultRecord` for the metrics."""
        ci = None
        if self.speedup_ci_low is not None and self.speedup_ci_high is not None:
            ci = (self.speedup_ci_low, self.speedup_ci_high)
        # Rows stored before the interval rule kept a speedup without an interval: it is not
        # a measurement, as in :func:`~kernelproof.store.metrics.record_from_report`.
        measured = ci is not None
        return ResultRecord(
            task_key=self.task_key,
            level=self.level,
            problem=self.problem,
            sample=self.sample,
            verdict=Verdict(self.verdict),
            speedup=self.speedup if measured else None,
            speedup_vs_compile=self.speedup_vs_compile if measured else None,
            per_shape_speedups=dict(self.per_shape_speedups or {}),
            floor_clamped=self.floor_clamped,
            speedup_ci=ci,
        )

    def __repr__(self) -> str:
        return (
            f"Verification(id={self.id}, run_id={self.run_id}, task_key={self.task_key!r}, "
            f"sample={self.sample}, verdict={self.verdict!r})"
        )


class Recheck(Base):
    """A link from a verdict an environment change invalidated to the verification that
    re-proved it (``kernelproof recheck``). The invalidated row is kept as it was."""

    __tablename__ = "kernelproof_rechecks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(
        ForeignKey("kernelproof_runs.id", ondelete="CASCADE"), index=True
    )
    """The recheck's run, which holds the new verification."""

    original_id: Mapped[int] = mapped_column(
        ForeignKey("kernelproof_verifications.id", ondelete="CASCADE"), index=True
    )
    """The invalidated verification."""

    verification_id: Mapped[int] = mapped_column(
        ForeignKey("kernelproof_verifications.id", ondelete="CASCADE"), index=True
    )
    """The verification that re-proved it, in the current environment."""

    reasons: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    """The environment differences that invalidated the original (ComponentChange dumps)."""

    created_at: Mapped[datetime] = mapped_column(DateTime, default=_utcnow)
    """UTC."""


class ResultsStore:
    """Runs and verifications in a SQL database. Safe to share between threads; several
    processes may write one SQLite file.

    ``url`` is any SQLAlchemy URL; ``None`` means :func:`default_url`. The tables are created
    when missing, unless ``create_tables`` is false (the server creates them with its Alembic
    migrations instead). With ``must_exist`` a SQLite file that does not exist yet is an error
    instead of a new empty store (for commands that only read).
    """

    def __init__(
        self, url: str | None = None, *, must_exist: bool = False, create_tables: bool = True
    ) -> None:
        self.url = url or default_url()
        self._engine = _create_engine(self.url, must_exist=must_exist)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        # A store from a newer kernelproof is refused before anything is created in it.
        check_version(self._engine, self.url)
        if create_tables:
            _create_tables(self._engine, self.url)
            upgrade(self._engine, self.url)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release the connection pool. The store must not be used afterwards."""
        self._engine.dispose()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultsStore({self._engine.url.render_as_string(hide_password=True)!r})"

    @property
    def engine(self) -> Engine:
        """The store's engine (SQLite pragmas applied), for tables that live beside the store's
        own: the server's queue and its migrations."""
        return self._engine

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One session, committed on success and rolled back on an exception. For code that
        must write the store's rows and its own in one transaction (the server's queue)."""
        with self._session() as session:
            yield session

    @contextmanager
    def _session(self) -> Iterator[Session]:
        """One session per call, committed on success and rolled back on an exception."""
        with self._sessions() as session, session.begin():
            yield session

    # -- writing -----------------------------------------------------------------------------

    def start_run(
        self,
        *,
        suite: str | Path,
        solutions: str | Path,
        settings: Mapping[str, Any] | None = None,
        fingerprint: str = "",
        device: str = "",
        label: str | None = None,
        version: str | None = None,
    ) -> int:
        """Record the start of a bench run and return its id. ``version`` defaults to the
        installed kernelproof's."""
        run = Run(
            suite=str(suite),
            solutions=str(solutions),
            settings=dict(settings or {}),
            fingerprint=fingerprint,
            device=device,
            label=label,
            kernelproof_version=version or _kernelproof_version(),
            status=RunStatus.RUNNING.value,
            started_at=_utcnow(),
        )
        with self._session() as session:
            session.add(run)
            session.flush()
            return run.id

    def finish_run(self, run_id: int, status: RunStatus | str = RunStatus.FINISHED) -> None:
        """Mark a run ``finished`` or ``interrupted`` and stamp its end time."""
        status = RunStatus(status)
        with self._session() as session:
            run = session.get(Run, run_id)
            if run is None:
                raise self._unknown_run(run_id)
            run.status, run.finished_at = status.value, _utcnow()

    def add(
        self,
        run_id: int,
        task_key: str,
        level: int | None,
        problem: str | int,
        sample: int,
        report: Report,
        *,
        settings_hash: str | None = None,
    ) -> int:
        """Store one verification in its own committed transaction and return its id.

        ``settings_hash`` defaults to :func:`settings_hash` of ``report.settings``; pass the
        value used for :meth:`find_done` if the two were computed from different dicts.
        """
        row = verification_row(
            run_id, task_key, level, problem, sample, report, settings_hash=settings_hash
        )
        return self._insert(row, run_id)

    def reuse(
        self,
        run_id: int,
        done: Verification,
        task_key: str | None = None,
        level: int | None = None,
        problem: str | int | None = None,
        sample: int | None = None,
    ) -> None:
        """Copy an earlier verification (from :meth:`find_done`) into ``run_id``, so a resumed
        run holds a result for every task. Placement fields default to the earlier row's."""
        with self._session() as session:
            source = session.scalars(
                select(Verification)
                .options(undefer(Verification.report_json))
                .where(Verification.id == done.id)
            ).one()
            values = {
                c.key: getattr(source, c.key)
                for c in Verification.__table__.columns
                if c.key not in ("id", "run_id", "created_at")
            }
        values.update(run_id=run_id, created_at=_utcnow())
        for key, value in (
            ("task_key", task_key),
            ("level", level),
            ("sample", sample),
            ("problem", None if problem is None else str(problem)),
        ):
            if value is not None:
                values[key] = value
        self._insert(Verification(**values), run_id)

    def link_recheck(
        self, run_id: int, original_id: int, verification_id: int, reasons: list[dict[str, Any]]
    ) -> None:
        """Record that ``verification_id`` (stored in the recheck run ``run_id``) re-proves
        ``original_id``, which ``reasons`` invalidated. The original row is left as it was."""
        try:
            with self._session() as session:
                session.add(
                    Recheck(
                        run_id=run_id,
                        original_id=original_id,
                        verification_id=verification_id,
                        reasons=list(reasons),
                        created_at=_utcnow(),
                    )
                )
        except IntegrityError:
            raise UsageError(
                f"cannot link verification {verification_id} to {original_id} in "
                f"run {run_id}: one of them is not in {self!r}"
            ) from None

    def _insert(self, row: Verification, run_id: int) -> int:
        try:
            with self._session() as session:
                session.add(row)
                session.flush()
                return row.id
        except IntegrityError:
            raise self._unknown_run(run_id) from None

    # -- reading -----------------------------------------------------------------------------

    def find_done(
        self,
        candidate_sha256: str | None,
        reference_sha256: str | None,
        fingerprint: str,
        settings_hash: str,
    ) -> Verification | None:
        """The latest stored verification of this candidate against this reference on this
        machine with these settings, or ``None``. A hit means the work can be skipped on resume,
        whatever its verdict was."""
        if not candidate_sha256:
            return None
        with self._session() as session:
            return session.scalars(
                select(Verification)
                .where(
                    Verification.candidate_sha256 == candidate_sha256,
                    Verification.reference_sha256 == reference_sha256,
                    Verification.fingerprint == fingerprint,
                    Verification.settings_hash == settings_hash,
                )
                .order_by(Verification.id.desc())
                .limit(1)
            ).first()

    def proof_heads(
        self, run_id: int | None = None, task_key: str | None = None
    ) -> list[ProofHead]:
        """The latest proof of every task slot (task key and sample): the newest verification
        a bench run (or the server) stored for it, followed through its rechecks to the newest
        re-proof. ``run_id``/``task_key`` restrict the slots to one run's or one task's."""
        with self._session() as session:
            links = list(session.scalars(select(Recheck).order_by(Recheck.id)))
            produced = {link.verification_id for link in links}
            query = select(Verification).order_by(Verification.id)
            if run_id is not None:
                query = query.where(Verification.run_id == run_id)
            if task_key is not None:
                query = query.where(Verification.task_key == task_key)
            slots: dict[tuple[str, int], Verification] = {}
            for row in session.scalars(query):
                if row.id not in produced:
                    slots[(row.task_key, row.sample)] = row
            newest: dict[int, Recheck] = {}
            for recheck in links:
                newest[recheck.original_id] = recheck  # ids ascend: the last one is the newest
            heads = []
            for key in sorted(slots):
                row = slots[key]
                link: Recheck | None = None
                seen = {row.id}
                while row.id in newest and newest[row.id].verification_id not in seen:
                    link = newest[row.id]
                    seen.add(link.verification_id)
                    row = session.get(Verification, link.verification_id) or row
                heads.append(ProofHead(original=slots[key], head=row, link=link))
            return heads

    def run(self, run_id: int) -> Run | None:
        """The run with this id, or ``None``."""
        with self._session() as session:
            return session.get(Run, run_id)

    def resolve_run(self, run_id: str | int) -> Run:
        """The run a user named (an id, as text or int); a :class:`UsageError` listing the known
        runs when there is no such run."""
        try:
            number = int(str(run_id).strip())
        except ValueError:
            raise self._unknown_run(run_id) from None
        run = self.run(number)
        if run is None:
            raise self._unknown_run(run_id)
        return run

    def runs(self) -> list[Run]:
        """Every run, oldest first."""
        with self._session() as session:
            return list(session.scalars(select(Run).order_by(Run.id)))

    def verifications(self, run_id: int) -> list[Verification]:
        """The verifications of one run, by task and sample."""
        with self._session() as session:
            return list(
                session.scalars(
                    select(Verification)
                    .where(Verification.run_id == run_id)
                    .order_by(Verification.task_key, Verification.sample, Verification.id)
                )
            )

    def records(self, run_id: int) -> list[ResultRecord]:
        """The verifications of one run as metric records."""
        return [row.to_record() for row in self.verifications(run_id)]

    def history(
        self, task_key: str | None = None, candidate: str | None = None, limit: int = 50
    ) -> list[Verification]:
        """The latest verifications, newest first, optionally of one task and/or one candidate.

        ``candidate`` matches a candidate's sha256 by prefix or its path exactly.
        """
        query = select(Verification)
        if task_key is not None:
            query = query.where(Verification.task_key == task_key)
        if candidate is not None:
            query = query.where(
                or_(
                    Verification.candidate_sha256.startswith(candidate.lower(), autoescape=True),
                    Verification.candidate_path == candidate,
                )
            )
        query = query.order_by(Verification.created_at.desc(), Verification.id.desc())
        with self._session() as session:
            return list(session.scalars(query.limit(limit)))

    def report(self, verification_id: int) -> Report:
        """The full stored report of one verification."""
        with self._session() as session:
            text = session.scalar(
                select(Verification.report_json).where(Verification.id == verification_id)
            )
        if text is None:
            raise UsageError(f"no verification with id {verification_id} in {self!r}")
        return Report.model_validate_json(text)

    def _unknown_run(self, run_id: object) -> UsageError:
        known = (
            "; ".join(
                f"{run.id} ({run.started_at:%Y-%m-%d %H:%M}, {run.status}"
                + (f", {run.label}" if run.label else "")
                + ")"
                for run in self.runs()
            )
            or "none yet (kernelproof bench records one per invocation)"
        )
        return UsageError(f"no run with id {run_id!r} in {self!r}; known runs: {known}")


@dataclass(frozen=True)
class ProofHead:
    """One task slot's latest proof (:meth:`ResultsStore.proof_heads`)."""

    original: Verification
    """The slot's newest verification from a bench run or the server."""

    head: Verification
    """The newest re-proof of it by ``recheck`` (the original itself when never rechecked)."""

    link: Recheck | None
    """The link that made ``head`` (None when never rechecked): its ``original_id`` is the
    proof ``head`` replaced, its ``reasons`` why."""


def verification_row(
    run_id: int,
    task_key: str,
    level: int | None,
    problem: str | int,
    sample: int,
    report: Report,
    *,
    settings_hash: str | None = None,
) -> Verification:
    """The :class:`Verification` row that stores ``report``, not yet added to any session.

    :meth:`ResultsStore.add` inserts it on its own; the server's queue adds it in the same
    transaction that marks its submission done, so a result is never stored twice.
    """
    record = record_from_report(report, task_key, level, problem, sample)
    ci = measured_interval(record.speedup_ci)
    fingerprint = report_fingerprint(report)
    return Verification(
        run_id=run_id,
        task_key=task_key,
        level=level,
        problem=str(problem),
        sample=sample,
        candidate_path=report.candidate.path if report.candidate else None,
        candidate_sha256=report.candidate.sha256 if report.candidate else None,
        reference_sha256=report.reference.sha256 if report.reference else None,
        fingerprint=report.environment.fingerprint,
        device=report.environment.device_name or report.environment.device,
        settings_hash=settings_hash or _hash_settings(report.settings),
        verdict=report.verdict.value,
        exit_code=int(report.verdict.exit_code),
        speedup=_finite(record.speedup),
        # Both bounds or neither: a lone finite low bound of an unmeasured interval is not a
        # measurement (schema/interval.py).
        speedup_ci_low=ci[0] if ci else None,
        speedup_ci_high=ci[1] if ci else None,
        speedup_vs_compile=_finite(record.speedup_vs_compile),
        per_shape_speedups={
            k: v for k, v in record.per_shape_speedups.items() if v is None or math.isfinite(v)
        },
        floor_clamped=record.floor_clamped,
        duration_s=report.duration_s,
        report_json=report.to_json(),
        created_at=_utcnow(),
        environment_digest=fingerprint.digest(BINDING_COMPONENTS),
        environment=fingerprint.model_dump(mode="json"),
    )


def _kernelproof_version() -> str:
    try:
        return importlib.metadata.version("kernelproof")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _create_engine(url: str, *, must_exist: bool) -> Engine:
    """An engine for ``url``; for SQLite, with WAL, a busy timeout and foreign keys on."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UsageError(
            f"not a database URL: {url!r}; use e.g. 'sqlite:///results.db' or "
            "'postgresql+psycopg://user@host/db'"
        ) from None
    if parsed.get_backend_name() != "sqlite":
        try:
            return create_engine(parsed, pool_pre_ping=True)
        except (ArgumentError, ImportError) as exc:
            raise UsageError(f"cannot open the results store {url!r}: {exc}") from None
    database = parsed.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in database
    if in_memory:
        # One shared connection, or each thread would see its own empty database.
        engine = create_engine(
            parsed, poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
    else:
        path = Path(database)
        if must_exist and not path.exists():
            raise UsageError(
                f"no results store at {path}; run `kernelproof bench` first, or "
                f"pass --db (or set {DB_ENV}) to an existing store"
            )
        if not path.parent.is_dir():
            raise UsageError(
                f"cannot create the results store {path}: the directory "
                f"{path.parent} does not exist; create it or choose another --db"
            )
        engine = create_engine(parsed)
    event.listen(engine, "connect", _sqlite_pragmas(wal=not in_memory))
    return engine


def _sqlite_pragmas(wal: bool) -> Any:
    """A connect hook setting the busy timeout first (so the WAL switch itself waits for other
    processes), then WAL mode and foreign keys."""

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            if wal:
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    return on_connect


def _create_tables(engine: Engine, url: str) -> None:
    """Create missing tables. Two processes creating them at once may race; the loser finds
    them made and tries again."""
    for attempt in range(2):
        try:
            Base.metadata.create_all(engine)
            return
        except DatabaseError as exc:
            if attempt == 0 and "already exists" in str(exc):
                continue
            raise UsageError(f"cannot open the results store {url!r}: {exc.orig}") from None
