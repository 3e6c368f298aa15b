"""A worker: claims submissions from the queue, verifies each, stores the result.

The same :class:`WorkerLoop` runs in a worker process started by the server
(``python -m kernelproof.serve.worker``, configured through its stdin: see
:func:`read_config`), in a Ray actor, or in a thread with an injected verification function
(tests of the queue). Each verification runs its reference and candidate in their own
sandboxed processes, exactly as ``verify`` does; the worker only hands it the task and a file
holding the source, and stores the report with the server's secrets and paths taken out.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kernelproof.schema import Report
from kernelproof.schema.suite import BenchTask
from kernelproof.serve.catalog import SuiteCatalog, candidate_file_name
from kernelproof.serve.queue import Claim, SubmissionQueue
from kernelproof.serve.scrub import Scrubber

__all__ = [
    "VerifyFunction",
    "WorkerConfig",
    "WorkerLoop",
    "read_config",
    "real_verification",
    "worker_name",
]

#: Largest configuration a worker reads from its stdin (a few KiB in practice).
MAX_CONFIG_BYTES = 1 << 20

#: Seconds between a worker's heartbeats. The server treats a submission whose heartbeat is
#: :data:`STALE_AFTER_S` old as abandoned.
HEARTBEAT_S = 5.0

#: Twelve missed heartbeats: a loaded machine or a slow database never trips it, a dead worker
#: on another machine (where no supervisor sees its exit) is noticed within a minute.
STALE_AFTER_S = 60.0

#: Seconds an idle worker waits before asking the queue again.
POLL_S = 0.5

#: A worker process (and so its verifications' worker processes, which inherit it) yields
#: the CPU to the API process: a status request must answer in milliseconds while a
#: verification takes seconds. Reference and candidate inherit the same niceness, so their
#: comparison is unaffected; on an idle machine niceness changes nothing.
WORKER_NICENESS = 5

#: One verification: the task and the candidate file -> the report. Never raises for a bad
#: candidate (that is a verdict); an exception means the verifier itself failed.
VerifyFunction = Callable[[BenchTask, Path], Report]


class WorkerConfig(BaseModel):
    """What a worker process needs, handed over by the server."""

    db_url: str
    suite: Path
    run_id: int
    profile: str = "default"
    overrides: dict[str, Any] = Field(default_factory=dict)
    name: str = ""
    """The worker's name in the queue; empty: :func:`worker_name` of its process."""

    scratch: Path | None = None
    """The worker's own temp folder (its ``TMPDIR``), under which every verification's
    scratch lives: the server removes it when the worker is gone, whatever killed it."""


def worker_name(pid: int | None = None) -> str:
    """``host:pid``: the name a local worker process claims under; the supervisor, which
    knows its workers by pid, and a restarted server, which checks whether that pid is alive,
    derive the same name."""
    return f"{socket.gethostname()}:{os.getpid() if pid is None else pid}"


def real_verification(profile: str, overrides: dict[str, Any]) -> VerifyFunction:
    """The verification a server runs: ``verify`` with the server's profile and settings."""

    def run(task: BenchTask, candidate: Path) -> Report:
        from kernelproof.controller.verify import verify

        return verify(task.reference, candidate, profile=profile, **overrides)

    return run


class WorkerLoop:
    """Claim, verify, store, until :meth:`stop`."""

    def __init__(
        self,
        queue: SubmissionQueue,
        catalog: SuiteCatalog,
        run_id: int,
        verify: VerifyFunction,
        name: str,
        scrubber: Scrubber | None = None,
    ) -> None:
        self.queue, self.catalog, self.run_id = queue, catalog, run_id
        self.verify, self.name = verify, name
        self.scrubber = scrubber or Scrubber()
        """Takes the server's secrets and paths out of each report before it is stored."""
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Finish the current verification, then return from :meth:`run_forever`."""
        self._stopping.set()

    def run_forever(self) -> None:
        while not self._stopping.is_set():
            if not self.run_once():
                self._stopping.wait(POLL_S)

    def run_once(self) -> bool:
        """Verify one queued submission; ``False`` when none was queued."""
        claim = self.queue.claim(self.name)
        if claim is None:
            return False
        task = self.catalog.tasks.get(claim.task_key)
        if task is None:
            self.queue.fail(
                claim.id,
                f"the task {claim.task_key!r} is no longer in the served "
                "suite; resubmit to a task GET /api/tasks lists",
                worker=self.name,
            )
            return True
        beating = _Heartbeat(self.queue, claim, self.name)
        beating.start()
        try:
            report = self._verify(task, claim)
        except Exception as exc:  # noqa: BLE001 - the verifier's own failure, kept as a value
            beating.stop()
            self.queue.fail(
                claim.id,
                "the verifier failed (not the candidate's fault): "
                + self.scrubber.text(
                    "".join(traceback.format_exception_only(type(exc), exc)).strip()
                ),
                worker=self.name,
            )
            return True
        beating.stop()
        self.queue.finish(
            claim, self.name, self.run_id, task.level, task.problem, self.scrubber.report(report)
        )
        return True

    def _verify(self, task: BenchTask, claim: Claim) -> Report:
        with tempfile.TemporaryDirectory(prefix=f"kernelproof-serve-{claim.id}-") as folder:
            candidate = Path(folder) / candidate_file_name(claim.id)
            candidate.write_text(claim.source, encoding="utf-8")
            return self.verify(task, candidate)


class _Heartbeat:
    """A thread telling the queue every :data:`HEARTBEAT_S` that the claim is still alive."""

    def __init__(self, queue: SubmissionQueue, claim: Claim, worker: str) -> None:
        self._queue, self._claim, self._worker = queue, claim, worker
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, daemon=True, name=f"kernelproof-heartbeat-{claim.id}"
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._done.wait(HEARTBEAT_S):
            try:
                self._queue.heartbeat(self._claim.id, self._worker)
            except Exception:  # noqa: BLE001 - a database hiccup: the next beat retries
                pass


def _die_with_parent() -> None:
    """Ask the kernel to kill this worker when the server dies (Linux), so a restarted server
    finds no orphan still verifying what it requeues."""
    from kernelproof.sandbox import die_with_parent

    die_with_parent()


def read_config() -> WorkerConfig:
    """The worker's configuration, which the server writes to its stdin and then closes. Not
    the environment, which every process the worker starts inherits, and not argv, which any
    local user reads in /proc: the store's URL may hold a password. Once read, stdin is
    /dev/null, so nothing started later can read it again."""
    data = sys.stdin.buffer.read(MAX_CONFIG_BYTES)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, sys.stdin.fileno())
    os.close(null)
    return WorkerConfig.model_validate_json(data)


def _own_session() -> None:
    """Lead a new session: the server finds (and kills) every process this worker started,
    however deep, by its session id, which they keep across forks and namespaces."""
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader


def _use_scratch(folder: Path | None) -> None:
    """Make ``folder`` the temp folder of this worker and everything it starts."""
    if folder is None:
        return
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # forget the folder chosen before


def main() -> None:
    """A worker process: read the config from stdin and drain the queue until SIGTERM
    (which lets the current verification finish)."""
    from kernelproof.serve.database import open_store

    _die_with_parent()
    _own_session()
    os.nice(WORKER_NICENESS)
    config = read_config()
    _use_scratch(config.scratch)
    store = open_store(config.db_url)
    catalog = SuiteCatalog.read(config.suite, config.profile, config.overrides)
    loop = WorkerLoop(
        SubmissionQueue(store),
        catalog,
        config.run_id,
        real_verification(config.profile, config.overrides),
        config.name or worker_name(),
        Scrubber.for_server(config.db_url, config.suite),
    )
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    try:
        loop.run_forever()
    finally:
        store.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
