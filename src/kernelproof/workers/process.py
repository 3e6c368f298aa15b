"""A worker process as the controller sees it: start, request with a timeout, survive its death.

Workers are forked from a forkserver that has already imported torch, so starting one costs
milliseconds rather than the seconds of a fresh interpreter. Each worker runs in its own
process group, so killing it also kills whatever it started (compilers, forks).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import os
import signal
import subprocess
import sys
import threading
import time
import types
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import Enum
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Generic, cast

from kernelproof.protocol import transport
from kernelproof.protocol.messages import WorkerReply
from kernelproof.protocol.requests import ExitRequest, ReplyData, ReplyT, Request
from kernelproof.protocol.spec import WorkerSpec, start_worker
from kernelproof.schedstat import SchedulerSample
from kernelproof.schedstat import sample as scheduler_sample
from kernelproof.workers.candidate_environment import trusted_environment
from kernelproof.workers.freezer import Freezer
from kernelproof.workers.process_tree import Confinement, ProcessTree
from kernelproof.workers.write_cap import WriteMeter

if TYPE_CHECKING:
    import torch

#: How often the controller wakes while waiting, to check the worker's memory and liveness.
POLL_INTERVAL_S = 0.05

#: Modules the forkserver imports once, so that every worker starts with them loaded.
PRELOAD = [
    "torch",
    "numpy",
    "kernelproof.harness.warmup",
    "kernelproof.harness.worker",
    "kernelproof.protocol.requests",
    "kernelproof.harness.timed_calls",
    "kernelproof.harness.input_pool",
    "kernelproof.harness.block_gather",
    "kernelproof.harness.tensors",
    "kernelproof.tasks.inputs",
    "kernelproof.tasks.planning",
    "kernelproof.checks.probes",
    "kernelproof.checks.audit_hooks",
    "kernelproof.checks.op_recorder",
    "kernelproof.timing.call_timer",
    "kernelproof.roofline.work",
    "kernelproof.protocol.messages",
    "kernelproof.sandbox",
    "pyseccomp",
]

#: Bytes of the worker's log (its stdout and stderr) kept as evidence when it fails.
LOG_TAIL_BYTES = 3000

_CONTEXT: Any = None
_MAIN_SWAP = threading.Lock()
_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Start workers without re-running the caller's ``__main__``.

    multiprocessing's forkserver re-imports the parent's main script in every child, which
    would run an unguarded user script (or an RL loop) once per worker. A blank ``__main__``
    during ``start()`` leaves it nothing to import; workers need nothing from it.
    """
    with _MAIN_SWAP:
        original = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if original is not None:
                sys.modules["__main__"] = original


_SPAWNED: list[subprocess.Popen[bytes]] = []
"""The helper processes started with the trusted environment (the forkserver, its resource
tracker). Held for the process's life: multiprocessing waits for them itself, and a collected
``Popen`` would reap them behind its back."""


def _spawn_trusted(path: str, args: list[str], passfds: Any) -> int:
    """multiprocessing's ``util.spawnv_passfds``, but the child gets :func:`trusted_environment`
    instead of this process's whole environment: the forkserver's memory and
    ``/proc/<pid>/environ``, and every worker forked from it, then hold no secret of the
    caller's (API keys, tokens, a store URL)."""
    process = subprocess.Popen(
        args,
        executable=path,
        pass_fds=tuple(sorted(map(int, passfds))),
        close_fds=True,
        env=trusted_environment(os.environ),
        restore_signals=False,
    )
    _SPAWNED.append(process)
    return process.pid


@contextmanager
def _trusted_spawn() -> Iterator[None]:
    """Start multiprocessing's helper processes (if they are not running) with the trusted
    environment. Called with ``_MAIN_SWAP`` held, so no two threads swap at once."""
    import multiprocessing.forkserver

    original = multiprocessing.util.spawnv_passfds
    multiprocessing.util.spawnv_passfds = _spawn_trusted  # type: ignore[assignment]  # same call; typeshed's parameters are narrower
    try:
        multiprocessing.forkserver.ensure_running()
        yield
    finally:
        multiprocessing.util.spawnv_passfds = original


def _context() -> Any:
    global _CONTEXT
    with _MAIN_SWAP:
        if _CONTEXT is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            _CONTEXT = context
    return _CONTEXT


def start_forkserver() -> None:
    """Start the forkserver now, instead of at the first worker: it imports torch (about two
    seconds here) while the caller goes on with its own work. Returns at once."""
    _context()
    with _main_module_hidden(), _trusted_spawn():  # (and not the caller's main script)
        pass


class DeathCause(str, Enum):
    """Why a worker stopped answering."""

    TIMEOUT = "timeout"
    SIGNAL = "signal"
    EXIT = "exit"
    OUT_OF_MEMORY = "out-of-memory"
    WRITE_CAP = "write-cap"
    PROTOCOL = "protocol"


@dataclass(frozen=True)
class WorkerDeath:
    """The worker died or hung while handling a request. A value, not an exception."""

    cause: DeathCause
    message: str
    exit_code: int | None = None
    log_tail: str = ""


@dataclass
class Submitted(Generic[ReplyT]):
    """A request sent to a worker whose reply is still to be collected."""

    op: str
    deadline: float
    timeout_s: float
    settled: Response[ReplyT] | None = None
    """The answer already known when sending failed (a dead worker)."""
    reply_model: type[ReplyData] = ReplyData
    """The request's reply model, which its response is read as."""


@dataclass
class Response(Generic[ReplyT]):
    """The answer to one request: the worker's reply and tensors, or how it died. Typed by
    the request's reply model, which :attr:`data` reads the reply as."""

    reply: WorkerReply | None = None
    tensors: list[torch.Tensor] = field(default_factory=list)
    death: WorkerDeath | None = None
    reply_model: type[ReplyData] = ReplyData

    @property
    def data(self) -> ReplyT:
        """The reply's ``data``, validated as the request's reply model (the candidate's
        worker is untrusted). Only for a successful response."""
        assert self.reply is not None, "no reply: the worker died"
        return cast(ReplyT, self.reply_model.model_validate(self.reply.data))

    @property
    def ok(self) -> bool:
        return self.reply is not None and self.reply.ok

    @property
    def failure(self) -> str:
        """Why the request failed, in one line: the worker's death or its captured error."""
        if self.death is not None:
            return self.death.message
        if self.reply is not None and self.reply.error is not None:
            return f"{self.reply.error.type}: {self.reply.error.message}"
        return "unknown failure"


@dataclass(eq=False)
class WorkerProcess:
    """One worker process and its private channel."""

    spec: WorkerSpec
    memory_limit_bytes: int
    process: Any = None
    conn: Connection | None = None
    death: WorkerDeath | None = None
    tree: ProcessTree | None = None
    """The worker's processes, read from /proc: memory, CPU time, confinement."""

    sandbox: dict[str, Any] | None = None
    """What a sandboxed worker said it entered (its first message, sent before any candidate
    code ran); None until it arrives, and for unsandboxed workers."""

    confinement: Confinement | None = None
    """What /proc showed about the sandboxed worker once it had said hello."""

    freezer: Freezer | None = None
    """For a candidate worker: stops its whole process tree between requests (after a reply
    is read in full, until the next request is sent), so that it cannot run unasked."""

    last_request_wall_s: float = 0.0
    """The controller's seconds from sending the last request to having read its reply in
    full: the worker's runnable window, without the freezer's own work around it."""

    scheduler_at_send: SchedulerSample | None = None
    scheduler_at_reply: SchedulerSample | None = None
    """The worker's CPU accounting (/proc) just before the last request was sent and just
    after its reply was read: the same window as :attr:`last_request_wall_s`."""

    scheduler_at_freeze: SchedulerSample | None = None
    """The same, once the freeze after the last reply had landed (a frozen worker only)."""

    _sent_at: float = 0.0

    writes: WriteMeter | None = None
    """A candidate's folders, measured against the cap on what it may write."""

    def start(self) -> None:
        _LIVE.add(self)
        context = _context()
        parent, child = context.Pipe(duplex=True)
        self.process = context.Process(
            target=start_worker, args=(child, self.spec), name=f"kernelproof-{self.spec.role}"
        )
        with _main_module_hidden(), _trusted_spawn():
            self.process.start()
        child.close()
        self.conn = parent
        self.tree = ProcessTree(self.process.pid)
        if self.spec.role == "candidate":
            self.freezer = Freezer(self.tree, group=self.process.pid)
            self.writes = WriteMeter(
                [
                    self.spec.workdir,
                    self.spec.log_path,
                    *(self.spec.sandbox or {}).get("writable", []),
                ]
            )

    @property
    def alive(self) -> bool:
        return self.death is None and self.process is not None and self.process.is_alive()

    def request(
        self,
        request: Request[ReplyT],
        tensors: Sequence[torch.Tensor] = (),
        *,
        timeout_s: float,
    ) -> Response[ReplyT]:
        """Send one request and wait for its reply, the worker's death, or the timeout."""
        return self.collect(self.submit(request, tensors, timeout_s=timeout_s))

    def submit(
        self,
        request: Request[ReplyT],
        tensors: Sequence[torch.Tensor] = (),
        *,
        timeout_s: float,
    ) -> Submitted[ReplyT]:
        """Send one request without waiting: the controller works while the worker does, and
        :meth:`collect` waits for the reply. Every submitted request must be collected before
        the next is sent (replies come in order)."""
        if self.death is not None:
            return Submitted(
                request.op, 0.0, timeout_s, Response(death=self.death), request.reply_model
            )
        assert self.conn is not None
        self.thaw(watched=request.watched)
        self.scheduler_at_reply = self.scheduler_at_freeze = None
        self.scheduler_at_send = scheduler_sample(self)
        if request.watched and self.freezer is not None and self.freezer.companions:
            # The samplers' catch-up burst falls here, on an idle worker, not in the request.
            # Its CPU time counts from before the wait (what the candidate runs meanwhile is
            # its request's), its samplers' from after (their pauses here hold no call).
            self.freezer.drain_companions()
            self.scheduler_at_send = replace(
                self.scheduler_at_send, sampler_busy_s=self.freezer.companions_busy_s()
            )
        self._sent_at = time.monotonic()
        try:
            transport.send(self.conn, request.header(), list(tensors))
        except (BrokenPipeError, ConnectionResetError, OSError):
            return Submitted(
                request.op, 0.0, timeout_s, Response(death=self._died()), request.reply_model
            )
        return Submitted(
            request.op, time.monotonic() + timeout_s, timeout_s, reply_model=request.reply_model
        )

    def thaw(self, watched: bool = True) -> None:
        """Resume a frozen worker (checking from /proc that it stayed frozen); its stack
        samplers too, unless ``watched`` is False."""
        if self.freezer is not None and self.death is None:
            self.freezer.thaw(watched)

    def _freeze(self) -> None:
        """Stop the worker's tree now that its reply is read: it has nothing to do until the
        next request."""
        self.last_request_wall_s = time.monotonic() - self._sent_at
        self.scheduler_at_reply = scheduler_sample(self)
        if self.freezer is not None and self.death is None and self.alive:
            self.freezer.freeze()
            self.scheduler_at_freeze = scheduler_sample(self)

    def collect(self, submitted: Submitted[ReplyT]) -> Response[ReplyT]:
        """The reply to a submitted request, the worker's death, or the timeout."""
        response: Response[ReplyT] = self._collect(submitted)
        response.reply_model = submitted.reply_model
        return response

    def _collect(self, submitted: Submitted[ReplyT]) -> Response[Any]:
        if submitted.settled is not None:
            return submitted.settled
        assert self.conn is not None and self.process is not None, "collect before start"
        deadline, timeout_s = submitted.deadline, submitted.timeout_s
        while True:
            if self.conn.poll(POLL_INTERVAL_S):
                response = self._receive()
                if response is not None:
                    self._freeze()
                    return response
                continue
            if not self.process.is_alive():
                if self.conn.poll(0):
                    response = self._receive()
                    if response is not None:
                        return response
                return Response(death=self._died())
            rss = self.tree.resident_bytes() if self.tree else 0
            if rss > self.memory_limit_bytes:
                self.kill()
                return Response(
                    death=self._record(
                        WorkerDeath(
                            DeathCause.OUT_OF_MEMORY,
                            f"out of memory: the worker used {rss / 2**30:.1f} GiB, over the limit of "
                            f"{self.memory_limit_bytes / 2**30:.1f} GiB",
                            log_tail=self.log_tail(),
                        )
                    )
                )
            over = self.writes.over_cap() if self.writes is not None else None
            if over is not None:
                self.kill()
                return Response(
                    death=self._record(
                        WorkerDeath(DeathCause.WRITE_CAP, over, log_tail=self.log_tail())
                    )
                )
            if time.monotonic() > deadline:
                self.kill()
                return Response(
                    death=self._record(
                        WorkerDeath(
                            DeathCause.TIMEOUT,
                            f"timed out: no answer within {timeout_s:g} s (request {submitted.op!r})",
                            log_tail=self.log_tail(),
                        )
                    )
                )

    def _receive(self) -> Response | None:
        """The next reply; None after a sandboxed worker's greeting, which comes first."""
        assert self.conn is not None
        try:
            message = transport.receive(self.conn)
            if self.spec.sandbox is not None and self.sandbox is None:
                self._greeted(message.header)
                return None
            reply = WorkerReply.model_validate(message.header)
        except EOFError:
            return Response(death=self._died())
        except Exception as exc:  # noqa: BLE001 - a hostile worker may send anything
            self.kill()
            return Response(
                death=self._record(
                    WorkerDeath(
                        DeathCause.PROTOCOL,
                        f"the worker sent a malformed message: {exc}"[:500],
                        log_tail=self.log_tail(),
                    )
                )
            )
        return Response(reply=reply, tensors=message.tensors)

    def _greeted(self, header: dict[str, Any]) -> None:
        state = header.get("sandbox") if header.get("hello") is True else None
        if not isinstance(state, dict):
            raise transport.ProtocolError("a sandboxed worker must say hello first")
        self.sandbox = {
            "enforced": [str(m) for m in state.get("enforced", [])][:50],
            "missing": {str(k): str(v)[:300] for k, v in dict(state.get("missing", {})).items()},
        }
        assert self.tree is not None
        self.confinement = self.tree.confinement()

    def cpu_s(self) -> float:
        """CPU seconds the worker's processes have used, read from /proc (not from the worker)."""
        return self.tree.cpu_s() if self.tree is not None else 0.0

    def cpu_split_s(self) -> tuple[float, float]:
        """(all CPU seconds of the worker's processes, its main thread's), from /proc."""
        return self.tree.cpu_split_s() if self.tree is not None else (0.0, 0.0)

    def _died(self) -> WorkerDeath:
        self.process.join(timeout=2.0)
        code = self.process.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            message = f"the worker was killed by {name}"
            if -code == signal.SIGSEGV:
                message += " (segmentation fault)"
            cause = DeathCause.SIGNAL
        else:
            message = f"the worker exited with status {code} while handling a request"
            cause = DeathCause.EXIT
        self.kill()
        return self._record(WorkerDeath(cause, message, exit_code=code, log_tail=self.log_tail()))

    def _record(self, death: WorkerDeath) -> WorkerDeath:
        self.death = death
        return death

    def log_tail(self) -> str:
        try:
            with open(self.spec.log_path, "rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - LOG_TAIL_BYTES))
                return log.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill the worker and its process group. Safe to call repeatedly."""
        if self.process is None or self.process.pid is None:
            return
        for kill in (
            lambda: os.killpg(self.process.pid, signal.SIGKILL),
            lambda: self.process.kill(),
        ):
            try:
                kill()
            except (ProcessLookupError, PermissionError, OSError):
                pass
        self.process.join(timeout=2.0)

    def close(self, *, graceful: bool = True) -> None:
        """Ask the worker to exit, then make sure it is gone. ``graceful=False`` kills it at
        once: a candidate worker has nothing to save, and its interpreter's exit (torch's
        teardown in a pid namespace) took about a second here, on every verification."""
        if graceful and self.conn is not None and self.alive:
            self.thaw()
            try:
                transport.send(self.conn, ExitRequest().header())
                self.process.join(timeout=2.0)
            except OSError:
                pass
        self.kill()
        _LIVE.discard(self)
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def kill_all_workers() -> int:
    """Kill every worker this process started that is still alive (on Ctrl-C). Returns how
    many were killed; their requests then end as deaths, which callers discard."""
    killed = 0
    for worker in list(_LIVE):
        if worker.process is not None and worker.process.is_alive():
            worker.kill()
            killed += 1
    return killed
