"""What depends only on the task, computed once and replayed for every candidate.

The reference worker runs trusted task code, deterministically given what the controller
sends it. Its answers to ``prepare``, ``run``, ``work`` and ``plan`` requests therefore depend
only on the task, the settings, the machine and the request itself (seeds included), never on
the candidate. A :class:`TaskMemo` keeps those answers, with the reference's outputs, its float64
oracle and the stacks sampled from it, so that a session verifying many candidates of one task
computes them once (see DESIGN.md, "Cheap proof at scale").

Keys. A memo is found by :func:`task_key`: the task's text and path, the bytes of every file
its wrapper reads, every setting that is not a seed, torch's version and the machine's
fingerprint. A changed task, torch, setting or machine never finds another's memo. Within a
memo, an answer is keyed by the request *and every request made since the last prepare*: a
model with state (a BatchNorm in training mode updates its statistics on every call) answers
a call according to the calls before it, so only the same history replays the same answer.

Trust. Only the controller writes a memo, and only from a reference worker that no candidate
could reach: while any candidate worker of the verification ran outside a confirmed sandbox
(``sandbox=False``, or walls /proc did not show), nothing is stored and the reference worker
is not kept (see :meth:`kernelproof.workers.pair.WorkerPair.candidates_contained`).

Replay. A replayed answer leaves the real worker behind the state the controller believes it
is in. Before the next request that must really run (a timed batch, a miss), the worker is
brought up to that state by re-sending the requests of the logical history
(:meth:`ReferenceReplay._sync`). Timed batches and fetches are never remembered: every timed
call runs on fresh inputs, and after one the history is unrepeatable, so nothing more is
remembered until the next prepare.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kernelproof.protocol.requests import Request, parse_request
from kernelproof.store.answer_archive import (
    MAX_ANSWER_BYTES,
    MAX_MEMO_BYTES,
    MAX_SESSION_MEMO_BYTES,
    AnswerArchive,
    Remembered,
)
from kernelproof.workers.process import Response, WorkerProcess

_Value = TypeVar("_Value")

if TYPE_CHECKING:
    from kernelproof.config import Settings
    from kernelproof.tasks.source import TaskSource

#: Operations whose answers depend on the task and the worker's history only.
REMEMBERED_OPS = frozenset({"prepare", "run", "work", "plan"})

#: Operations that neither read nor change the prepared model (planning renders the task on
#: the meta device): keyed by the request alone, not by the history.
HISTORY_FREE_OPS = frozenset({"plan"})

#: Settings that are seeds: the requests carry the seeds they use, so the same memo serves
#: every seed and only the same seeds hit.
SEED_SETTINGS = frozenset({"base_seed", "input_seeds"})

#: The archive's name for the reference's native-stack profile.
STACKS_VALUE = "reference-stacks"

#: Stored values naming an answer too large to keep (its key follows): the next session counts
#: its recomputation as such, not as a miss.
TOO_LARGE_VALUE = "too-large:"

#: Idle reference workers kept per task: one per verification that may run at once here.
MAX_IDLE_REFERENCES = 2

#: Entries of a directory hashed into the key (a GPU MODE task's folder), at most.
MAX_HASHED_ENTRIES = 2000


def task_key(task: TaskSource, readable_paths: list[str], settings: Settings) -> str:
    """The key of everything task-only: task text and path, the files its wrapper reads, the
    settings other than seeds, torch's version and the machine."""
    import torch

    from kernelproof.roofline.fingerprint import machine_fingerprint

    digest = hashlib.sha256()
    for part in (
        str(task.path.resolve()),
        task.text,
        torch.__version__,
        machine_fingerprint(settings.device),
        json.dumps(settings.model_dump(mode="json", exclude=set(SEED_SETTINGS)), sort_keys=True),
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    for path in sorted(readable_paths):
        _hash_path(digest, Path(path))
    return digest.hexdigest()


def _hash_path(digest: Any, path: Path) -> None:
    digest.update(str(path).encode() + b"\0")
    if path.is_file():
        digest.update(path.read_bytes())
    elif path.is_dir():
        for index, entry in enumerate(sorted(path.rglob("*"))):
            if index >= MAX_HASHED_ENTRIES:
                break
            if entry.is_file():
                digest.update(str(entry.relative_to(path)).encode() + b"\0")
                digest.update(entry.read_bytes())


@dataclass
class WarmReference:
    """An idle reference worker and the requests it has run since its last prepare."""

    worker: WorkerProcess
    history: list[str]


@dataclass
class TaskMemo:
    """The remembered answers of one task key, and its idle reference workers."""

    key: str
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kernelproof-warm-")))
    """Where this task's reference workers keep their scratch folders and logs."""

    answers: dict[str, Remembered] = field(default_factory=dict)
    stored_bytes: int = 0
    hits: int = 0
    misses: int = 0
    too_large: int = 0
    """Lookups of answers known to be past :data:`MAX_ANSWER_BYTES` (computed every time)."""
    too_large_keys: set[str] = field(default_factory=set)
    reference_stacks: Any = None
    """The reference's native stack profile, sampled while it ran the default shape once."""

    archive: AnswerArchive | None = None
    """Where answers are also kept across sessions (the results store), if anywhere."""

    derived: dict[str, Any] = field(default_factory=dict)
    """What the controller computed from remembered answers alone (the task's adequacy
    findings), keyed by what it was computed from."""

    idle: list[WarmReference] = field(default_factory=list)
    started_references: int = 0
    closed: bool = False
    """Set by :meth:`close`: verifications still running use their workers directly from
    then on, as without a memo (a cancelled bench must not have them rebuilt)."""

    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: str) -> Response | None:
        with self.lock:
            found = self.answers.get(key)
            if found is None:
                if key in self.too_large_keys:
                    self.too_large += 1
                else:
                    self.misses += 1
                return None
            self.hits += 1
            return remembered_response(found)

    def put(self, key: str, response: Response) -> None:
        if response.reply is None or response.death is not None:
            return  # a death says nothing about the task
        size = sum(t.numel() * t.element_size() for t in response.tensors)
        if size > MAX_ANSWER_BYTES:
            with self.lock:
                known = key in self.too_large_keys
                self.too_large_keys.add(key)
            if self.archive is not None and not known:
                self.archive.save_value(self.key, TOO_LARGE_VALUE + key, str(size))
            return
        remembered = Remembered(response.reply, tuple(response.tensors))
        with self.lock:
            if key in self.answers or self.stored_bytes + size > MAX_MEMO_BYTES:
                return
            self.answers[key] = remembered
            self.stored_bytes += size
        if self.archive is not None:
            self.archive.save(self.key, key, remembered, size)

    def remember_stacks(self, stacks: Any) -> None:
        """Keep the reference's native-stack profile (and archive it): a verification whose
        reference answers are all replayed leaves the reference worker idle, with nothing
        to sample."""
        if stacks is self.reference_stacks:
            return
        self.reference_stacks = stacks
        if self.archive is not None:
            from dataclasses import asdict

            self.archive.save_value(self.key, STACKS_VALUE, json.dumps(asdict(stacks)))

    def restore(self) -> None:
        """Take the answers the archive holds for this task (a new memo's first step)."""
        if self.archive is None:
            return
        stored = self.archive.load(self.key)
        stacks = stored.values.get(STACKS_VALUE)
        if stacks is not None and self.reference_stacks is None:
            from kernelproof.checks.native_stacks import NativeProfile

            try:
                self.reference_stacks = NativeProfile(**json.loads(stacks))
            except (TypeError, ValueError):
                pass  # stored by other code: sampled again
        with self.lock:
            self.too_large_keys.update(
                name.removeprefix(TOO_LARGE_VALUE)
                for name in stored.values
                if name.startswith(TOO_LARGE_VALUE)
            )
            for key, remembered in stored.answers.items():
                size = sum(t.numel() * t.element_size() for t in remembered.tensors)
                if key not in self.answers and self.stored_bytes + size <= MAX_MEMO_BYTES:
                    self.answers[key] = remembered
                    self.stored_bytes += size

    def derived_value(self, key: str, compute: Callable[[], _Value]) -> _Value:
        """``compute()``, once per ``key`` for this task: a value that depends only on the
        reference's answers (which the memo replays alike for every candidate)."""
        with self.lock:
            if key in self.derived:
                return self.derived[key]
        value = compute()
        with self.lock:
            return self.derived.setdefault(key, value)

    def next_reference_index(self) -> int:
        with self.lock:
            self.started_references += 1
            return self.started_references

    def borrow(self) -> WarmReference | None:
        """An idle reference worker that is still alive, or None."""
        with self.lock:
            if self.closed:
                return None
            while self.idle:
                warm = self.idle.pop()
                if warm.worker.alive:
                    return warm
                warm.worker.close()
        return None

    def give_back(self, warm: WarmReference) -> None:
        """Keep a live reference worker for the next verification of this task."""
        with self.lock:
            if warm.worker.alive and not self.closed and len(self.idle) < MAX_IDLE_REFERENCES:
                self.idle.append(warm)
                return
        warm.worker.close()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            idle, self.idle = self.idle, []
            self.answers.clear()
        for warm in idle:
            warm.worker.close()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class ReferenceReplay:
    """The reference worker of one verification, behind the memo.

    ``logical`` is the history the controller believes the worker has (requests since the last
    prepare, as JSON), ``actual`` the one it really has; they differ after replayed answers.
    ``chain`` keys the logical history; None once it holds a request that is never remembered
    (a timed batch), until the next prepare."""

    memo: TaskMemo
    may_store: Callable[[], bool]
    """Whether answers may be stored now: no candidate worker of this verification could
    have reached the reference worker."""

    logical: list[str] = field(default_factory=list)
    actual: list[str] = field(default_factory=list)
    chain: str | None = None

    def ask(
        self, worker: WorkerProcess, request: Request[Any], tensors: list[Any], timeout_s: float
    ) -> Response:
        header = json.dumps(request.header(), sort_keys=True)
        op = request.op
        if op in HISTORY_FREE_OPS:
            return self._remembered(
                _digest(self.memo.key, header), worker, request, tensors, timeout_s, history=False
            )
        if op == "prepare":
            self.logical, self.chain = [], _digest(self.memo.key)
        if op not in REMEMBERED_OPS or self.chain is None:
            self.chain = None
            return self._real(worker, request, tensors, timeout_s, header)
        key = _digest(self.chain, header)
        self.logical.append(header)
        self.chain = key
        return self._remembered(
            key, worker, request, tensors, timeout_s, history=True, header=header
        )

    def _remembered(
        self,
        key: str,
        worker: WorkerProcess,
        request: Request[Any],
        tensors: list[Any],
        timeout_s: float,
        *,
        history: bool,
        header: str = "",
    ) -> Response:
        found = self.memo.get(key)
        if found is not None:
            return found
        if history:
            self.logical.pop()  # _real appends it again once the worker is in step
            response = self._real(worker, request, tensors, timeout_s, header)
        else:
            response = worker.request(request, tensors, timeout_s=timeout_s)
        if self.may_store():
            self.memo.put(key, response)
        return response

    def _real(
        self,
        worker: WorkerProcess,
        request: Request[Any],
        tensors: list[Any],
        timeout_s: float,
        header: str,
    ) -> Response:
        """Send ``request`` to the worker itself, once the worker's history is the logical
        one (a prepare starts a new history, so it needs none)."""
        if request.op == "prepare":
            self.actual = []
        else:
            failed = self._sync(worker, timeout_s)
            if failed is not None:
                return failed
        response = worker.request(request, tensors, timeout_s=timeout_s)
        self.actual.append(header)
        self.logical = list(self.actual)
        return response

    def _sync(self, worker: WorkerProcess, timeout_s: float) -> Response | None:
        """Re-run the logical history on the worker; the failure that stopped it, if any."""
        if self.actual == self.logical:
            return None
        self.actual = []
        for header in self.logical:
            request: Request[Any] = parse_request(json.loads(header))
            response = worker.request(request, timeout_s=timeout_s)
            if not response.ok:
                return response
            self.actual.append(header)
        return None

    def restarted(self) -> None:
        """The worker was replaced by a fresh one, which has no history."""
        self.actual = []


def _digest(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass
class TaskMemos:
    """The memos of one session, by task key (the oldest dropped past ``capacity`` tasks or
    ``max_bytes`` of answers held)."""

    capacity: int = 16
    max_bytes: int = MAX_SESSION_MEMO_BYTES
    archive: AnswerArchive | None = None
    """The results store's table of answers: new memos start from it and add to it."""

    memos: dict[str, TaskMemo] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def memo_for(self, task: TaskSource, readable_paths: list[str], settings: Settings) -> TaskMemo:
        key = task_key(task, readable_paths, settings)
        dropped: list[TaskMemo] = []
        with self.lock:
            memo = self.memos.pop(key, None)
            fresh = memo is None
            if memo is None:
                memo = TaskMemo(key=key, archive=self.archive)
            self.memos[key] = memo  # most recent last
            while len(self.memos) > self.capacity or (
                len(self.memos) > 1
                and sum(m.stored_bytes for m in self.memos.values()) > self.max_bytes
            ):
                dropped.append(self.memos.pop(next(iter(self.memos))))
        for old in dropped:
            old.close()
        if fresh:
            memo.restore()
        return memo

    def close(self) -> None:
        with self.lock:
            memos, self.memos = list(self.memos.values()), {}
        for memo in memos:
            memo.close()

    def counts(self) -> dict[str, int]:
        """Hits, misses and lookups of answers too large to keep, over every memo, for
        benchmarks and tests."""
        with self.lock:
            memos = list(self.memos.values())
        return {
            "hits": sum(m.hits for m in memos),
            "misses": sum(m.misses for m in memos),
            "too_large": sum(m.too_large for m in memos),
            "tasks": len(memos),
            "idle_references": sum(len(m.idle) for m in memos),
            "derived": sum(len(m.derived) for m in memos),
        }


def remembered_response(remembered: Remembered) -> Response:
    """A remembered answer as the reply the controller would have read from the worker."""
    return Response(reply=remembered.reply, tensors=list(remembered.tensors))
