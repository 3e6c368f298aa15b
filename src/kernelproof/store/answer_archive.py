"""The reference's remembered answers kept in the results store, across runs and processes.

A :class:`~kernelproof.workers.reference_memo.TaskMemo` lives as long as its session. With an
archive, a new session (another ``bench`` run, a restarted reward loop, another Ray actor)
starts from the answers an earlier one stored: the reference's outputs, its float64 oracle,
planning and sizing are not computed again.

Keys. A row is found by the memo's task key (task text and path, files its wrapper reads,
every non-seed setting, torch's version, the machine's fingerprint) and the answer's key (the
request and the history before it, seeds included), and is read back only by the same
*code*: a digest of the modules that produce and read the answers (the worker harness, the
task loaders, the protocol). A changed task, setting, torch, machine or harness never reads
another's rows.

Trust. Only the controller writes rows, under the memo's own rule (no candidate of the
verification could have reached the reference worker); a row that no longer parses is
skipped, never trusted.
"""

from __future__ import annotations

import hashlib
import io
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import DateTime, Index, Integer, LargeBinary, String, Text, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Mapped, mapped_column

from kernelproof.store.results import Base, ResultsStore

#: Bytes of reference outputs one task's memo keeps at most. Past it, answers are no longer stored
#: (they are still served from what is kept): a stress shape's oracle can be hundreds of MiB.
MAX_MEMO_BYTES = 1 << 30

#: Bytes of answers one session's memos keep in memory over all their tasks: past it, the
#: least recently used tasks' memos are dropped (their answers stay in the results store, if
#: any). A suite of 49 tasks once held 5.5 GiB in its controller and was killed by the kernel's
#: OOM killer on a 24 GiB machine.
MAX_SESSION_MEMO_BYTES = 2 << 30

#: Bytes of one answer past which it is not kept at all: a stress shape's answer (inputs past
#: 2**24 elements, their outputs and oracle) is cheaper for the reference to compute again than
#: to store and load, and it would crowd out the many small answers a batch replays.
MAX_ANSWER_BYTES = 64 << 20


@dataclass(frozen=True)
class Remembered:
    """One answer of the reference worker, as the controller received it."""

    reply: Any
    tensors: tuple[Any, ...]


log = logging.getLogger(__name__)

#: The packages whose code produces or reads the reference's answers: a change to any of them
#: may change what an answer means, so it changes the code digest.
ANSWER_CODE = ("workers", "harness", "protocol", "tasks", "schema", "checks")


#: Answer keys of stored values rather than answers.
VALUE_PREFIX = "value:"


@dataclass
class StoredTask:
    """What the archive holds for one task key."""

    answers: dict[str, Remembered] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    """Values derived from the reference's runs, by name (JSON text)."""


class ReferenceAnswer(Base):
    """One remembered answer of a reference worker."""

    __tablename__ = "kernelproof_reference_answers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task_key: Mapped[str] = mapped_column(String(64), nullable=False)
    code: Mapped[str] = mapped_column(String(64), nullable=False)
    answer_key: Mapped[str] = mapped_column(String(64), nullable=False)
    reply: Mapped[str] = mapped_column(Text, nullable=False)
    tensors: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    nbytes: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, nullable=False)

    __table_args__ = (
        Index(
            "ix_kernelproof_reference_answers_key", "task_key", "code", "answer_key", unique=True
        ),
    )


@cache
def code_digest() -> str:
    """A digest of the modules that produce and read the reference's answers."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for package in ANSWER_CODE:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class AnswerArchive:
    """The results store's table of remembered answers. Never raises into a verification: a
    store that fails is logged and switched off for the rest of the session."""

    def __init__(self, store: ResultsStore | str) -> None:
        self._broken = False
        self._lock = threading.Lock()
        self._owned = not isinstance(store, ResultsStore)
        self.store: ResultsStore | None = store if isinstance(store, ResultsStore) else None
        if self.store is None:
            try:
                self.store = ResultsStore(str(store))
            except Exception as exc:  # noqa: BLE001 - a store we cannot open only costs reuse
                self._fail("open", exc)
        if self.store is not None and not self._broken:
            try:  # a store made before this module was imported lacks the table
                # The Table itself: ``__table__`` is typed as any FROM clause, which has no create.
                table = ReferenceAnswer.metadata.tables[ReferenceAnswer.__tablename__]
                table.create(self.store.engine, checkfirst=True)
            except SQLAlchemyError as exc:
                if "already exists" not in str(exc):  # made by another process meanwhile
                    self._fail("create the table of", exc)

    def load(self, task_key: str) -> StoredTask:
        """The stored answers of a task, up to :data:`MAX_MEMO_BYTES` of tensors, and its
        stored values."""
        from kernelproof.protocol.messages import WorkerReply

        found = StoredTask()
        if self._broken or self.store is None:
            return found
        total = 0
        try:
            with self.store.transaction() as session:
                rows = session.execute(
                    select(
                        ReferenceAnswer.answer_key,
                        ReferenceAnswer.reply,
                        ReferenceAnswer.tensors,
                        ReferenceAnswer.nbytes,
                    )
                    .where(
                        ReferenceAnswer.task_key == task_key, ReferenceAnswer.code == code_digest()
                    )
                    .order_by(ReferenceAnswer.id)
                ).all()
        except SQLAlchemyError as exc:
            self._fail("read", exc)
            return found
        for answer_key, reply, blob, nbytes in rows:
            if answer_key.startswith(VALUE_PREFIX):
                found.values[answer_key[len(VALUE_PREFIX) :]] = reply
                continue
            if total + nbytes > MAX_MEMO_BYTES:
                continue
            try:
                found.answers[answer_key] = Remembered(
                    WorkerReply.model_validate_json(reply), tuple(_tensors(blob))
                )
            except Exception as exc:  # noqa: BLE001 - a row that does not parse is skipped
                log.warning("skipped a stored reference answer that does not parse: %s", exc)
                continue
            total += nbytes
        return found

    def save(self, task_key: str, answer_key: str, answer: Remembered, nbytes: int) -> None:
        """Store one answer (a row already there, from a concurrent run, is kept)."""
        if not self._broken:
            self._insert(
                task_key, answer_key, answer.reply.model_dump_json(), _blob(answer.tensors), nbytes
            )

    def save_value(self, task_key: str, name: str, text: str) -> None:
        """Store a value derived from the reference's runs (its native-stack profile, JSON)."""
        if not self._broken:
            self._insert(task_key, VALUE_PREFIX + name, text, b"", 0)

    def _insert(self, task_key: str, answer_key: str, reply: str, blob: bytes, nbytes: int) -> None:
        row = ReferenceAnswer(
            task_key=task_key,
            code=code_digest(),
            answer_key=answer_key,
            reply=reply,
            nbytes=nbytes,
            tensors=blob,
            created_at=datetime.now(timezone.utc).replace(tzinfo=None),
        )
        with self._lock:
            if self.store is None:
                return
            try:
                with self.store.transaction() as session:
                    session.add(row)
            except IntegrityError:
                return  # already stored (by an earlier session or another process): kept
            except SQLAlchemyError as exc:
                self._fail("write", exc)

    def close(self) -> None:
        if self._owned and self.store is not None:
            self.store.close()

    def _fail(self, action: str, exc: Exception) -> None:
        self._broken = True
        log.warning(
            "the results store could not %s remembered reference answers (%s); this "
            "session keeps them in memory only",
            action,
            str(exc).splitlines()[0][:200],
        )


def _blob(tensors: tuple[Any, ...]) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save([t.detach().cpu() for t in tensors], buffer)
    return buffer.getvalue()


def _tensors(blob: bytes) -> list[Any]:
    import torch

    # weights_only: tensors and plain containers, nothing that runs code on load
    return list(torch.load(io.BytesIO(blob), weights_only=True))
