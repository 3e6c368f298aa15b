"""The workers that drain the queue, started and watched by the server.

:class:`LocalWorkers` runs each worker as its own process (``python -m
kernelproof.serve.worker``), so that a worker killed mid-verification (``kill -9``, the OOM
killer) takes nothing else down: the supervisor sees the exit, requeues what it held (once; see
:meth:`SubmissionQueue.abandon`) and starts a new worker. :class:`RayWorkers` runs the same loop
in Ray actors; :class:`ThreadWorkers` runs it in threads with an injected verification, for
tests whose subject is the queue, not the verifier.

Whatever runs the workers, stale heartbeats are swept too, so a worker lost on another machine
(or under a previous server) is noticed without its exit being seen.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kernelproof.serve.catalog import SuiteCatalog
from kernelproof.serve.leftovers import remove_worker_folder, worker_folder, workers_root
from kernelproof.serve.queue import SubmissionQueue
from kernelproof.serve.scrub import Scrubber, secret_values
from kernelproof.serve.worker import (
    STALE_AFTER_S,
    VerifyFunction,
    WorkerConfig,
    WorkerLoop,
    worker_name,
)
from kernelproof.store.results import DB_ENV

__all__ = [
    "LocalWorkers",
    "RayWorkers",
    "ThreadWorkers",
    "WorkerPool",
    "describe_exit",
    "recover_dead_local_workers",
    "worker_environment",
]

#: Seconds between the supervisor's looks at its workers and at stale heartbeats.
WATCH_S = 0.5

#: Seconds a worker gets to stop after SIGTERM before it is killed.
STOP_GRACE_S = 5.0

#: A worker that dies within this many seconds of its start counts as a failed start; after
#: :data:`MAX_QUICK_DEATHS` of those in a row the supervisor waits :data:`RESTART_BACKOFF_S`
#: between starts instead of spinning.
QUICK_DEATH_S = 5.0
MAX_QUICK_DEATHS = 3
RESTART_BACKOFF_S = 10.0


class WorkerPool(Protocol):
    """Something that drains the queue until stopped."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def describe(self) -> list[dict[str, Any]]:
        """One entry per worker, for the queue page: its name and state."""
        ...


def describe_exit(code: int) -> str:
    """A process's exit status in words (``killed by SIGKILL`` for -9)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def recover_dead_local_workers(queue: SubmissionQueue) -> list[int]:
    """At start: submissions left running by a worker process of this host that no longer
    exists (the previous server and its workers died) are requeued now, not after their
    heartbeat goes stale, and without counting the claim as an attempt: a server that died
    took its workers with it, which is no fault of the candidates they were verifying (a
    candidate cannot reach the server's process from its sandbox)."""
    recovered = []
    for _submission, worker in queue.running_workers().items():
        pid = (worker or "").rpartition(":")[2]
        if not pid.isdigit() or worker != worker_name(int(pid)) or _alive(int(pid)):
            continue  # another host's worker, a Ray actor, or alive
        recovered += queue.release(
            worker,
            f"its worker {worker} was gone when the server "
            "started (the previous server stopped or died; "
            "not counted as an attempt)",
        )
    return recovered


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs. A zombie does not: a worker killed with its server (parent-death
    signal) is reparented to whoever reaps orphans, and until that happens (never, under an
    init that does not reap) ``kill(pid, 0)`` still finds it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: kill() is all there is to go on
    return state not in ("Z", "X")


def worker_environment(
    config: WorkerConfig, environ: dict[str, str] | None = None
) -> dict[str, str]:
    """The server's environment less anything holding the store's URL or password (such as
    ``$KERNELPROOF_DB``, the way to give the server its URL without putting it in argv, which
    any local user reads): the worker gets those from its stdin, and whatever it starts
    inherits its environment."""
    environ = dict(os.environ if environ is None else environ)
    store = secret_values(config.db_url, {})
    return {
        name: value
        for name, value in environ.items()
        if name != DB_ENV and not any(secret in value for secret in store)
    }


@dataclass
class _Process:
    process: subprocess.Popen[bytes]
    name: str
    started: float


@dataclass
class LocalWorkers:
    """``count`` worker processes on this machine."""

    queue: SubmissionQueue
    config: WorkerConfig
    count: int = 1
    _processes: list[_Process | None] = field(default_factory=list)
    """One slot per worker; ``None`` while its restart backs off."""

    _stopping: threading.Event = field(default_factory=threading.Event)
    _watcher: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _quick_deaths: int = 0
    _respawn_at: float = 0.0

    def start(self) -> None:
        with self._lock:
            for _ in range(self.count):
                self._processes.append(self._spawn())
        self._watcher = threading.Thread(
            target=self._watch, daemon=True, name="kernelproof-supervisor"
        )
        self._watcher.start()

    def _spawn(self) -> _Process:
        """Start a worker; its configuration (the store's URL among it) goes down a pipe to
        its stdin, which it reads once and closes: never into an environment variable, which
        the worker's verifications (and so the candidates) would inherit."""
        process = subprocess.Popen(
            [sys.executable, "-m", "kernelproof.serve.worker"],
            stdin=subprocess.PIPE,
            env=worker_environment(self.config),
        )
        root = workers_root(self.config.db_url, self.config.suite)
        config = self.config.model_copy(update={"scratch": worker_folder(root, process.pid)})
        assert process.stdin is not None
        try:
            process.stdin.write(config.model_dump_json().encode())
            process.stdin.close()
        except OSError:
            pass  # it died at once: the watcher sees the exit
        return _Process(process, worker_name(process.pid), time.monotonic())

    def _forget(self, entry: _Process) -> None:
        """The worker has exited: kill what it left running and remove its folder (the
        scratch of every verification it ran, whatever a candidate wrote there)."""
        remove_worker_folder(workers_root(self.config.db_url, self.config.suite), entry.process.pid)

    def _watch(self) -> None:
        while not self._stopping.wait(WATCH_S):
            with self._lock:
                for index, entry in enumerate(self._processes):
                    if entry is None:  # backing off after failed starts
                        if time.monotonic() >= self._respawn_at:
                            self._processes[index] = self._spawn()
                        continue
                    code = entry.process.poll()
                    if code is None:
                        continue
                    self._forget(entry)
                    try:
                        self.queue.abandon(
                            entry.name,
                            f"its worker {entry.name} {describe_exit(code)} while verifying it",
                        )
                    except Exception as exc:  # noqa: BLE001 - the stale sweep retries later
                        print(
                            f"kernelproof serve: could not requeue the work of {entry.name}: {exc}",
                            file=sys.stderr,
                        )
                    quick = time.monotonic() - entry.started < QUICK_DEATH_S
                    self._quick_deaths = self._quick_deaths + 1 if quick else 0
                    if self._quick_deaths >= MAX_QUICK_DEATHS:
                        print(
                            f"kernelproof serve: workers keep dying at start "
                            f"({describe_exit(code)}); next start in "
                            f"{RESTART_BACKOFF_S:.0f} s",
                            file=sys.stderr,
                        )
                        self._respawn_at = time.monotonic() + RESTART_BACKOFF_S
                        self._processes[index] = None
                    else:
                        self._processes[index] = self._spawn()
            _sweep(self.queue)

    def stop(self) -> None:
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join()
        with self._lock:
            running = [entry for entry in self._processes if entry is not None]
            for entry in running:
                if entry.process.poll() is None:
                    entry.process.terminate()
            deadline = time.monotonic() + STOP_GRACE_S
            for entry in running:
                try:
                    entry.process.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    entry.process.kill()
                    entry.process.wait()
                self._forget(entry)
                self.queue.release(entry.name, "the server stopped during its verification")

    def describe(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {
                    "name": e.name,
                    "pid": e.process.pid,
                    "state": "alive" if e.process.poll() is None else "exited",
                }
                if e is not None
                else {"name": "(restarting)", "state": "backing off"}
                for e in self._processes
            ]


def _sweep(queue: SubmissionQueue) -> None:
    try:
        queue.abandon_stale(STALE_AFTER_S)
    except Exception as exc:  # noqa: BLE001 - the database is away: try again next round
        print(f"kernelproof serve: could not sweep stale submissions: {exc}", file=sys.stderr)


@dataclass
class ThreadWorkers:
    """``count`` workers in threads of this process, verifying with ``verify``."""

    queue: SubmissionQueue
    catalog: SuiteCatalog
    run_id: int
    verify: VerifyFunction
    count: int = 1
    _loops: list[WorkerLoop] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for index in range(self.count):
            loop = WorkerLoop(
                self.queue,
                self.catalog,
                self.run_id,
                self.verify,
                f"thread-{index}-{uuid.uuid4().hex[:8]}",
            )
            thread = threading.Thread(target=loop.run_forever, daemon=True, name=loop.name)
            self._loops.append(loop)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        for loop in self._loops:
            loop.stop()
        for thread, loop in zip(self._threads, self._loops):
            thread.join()
            self.queue.release(loop.name, "the server stopped during its verification")

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"name": loop.name, "state": "alive" if thread.is_alive() else "exited"}
            for loop, thread in zip(self._loops, self._threads)
        ]


class _RayWorker:
    """A Ray actor running one :class:`WorkerLoop` (made a Ray class by :class:`RayWorkers`)."""

    def __init__(self, config_json: str) -> None:
        from kernelproof.serve.database import open_store
        from kernelproof.serve.worker import real_verification

        config = WorkerConfig.model_validate_json(config_json)
        store = open_store(config.db_url)
        catalog = SuiteCatalog.read(config.suite, config.profile, config.overrides)
        self.loop = WorkerLoop(
            SubmissionQueue(store),
            catalog,
            config.run_id,
            real_verification(config.profile, config.overrides),
            config.name,
            Scrubber.for_server(config.db_url, config.suite),
        )

    def run(self) -> None:
        self.loop.run_forever()


@dataclass
class RayWorkers:
    """``count`` Ray actors, each draining the queue; ``address`` None starts a local Ray."""

    queue: SubmissionQueue
    config: WorkerConfig
    count: int = 1
    address: str | None = None
    _actors: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _watcher: threading.Thread | None = None

    def start(self) -> None:
        import ray

        from kernelproof.suite.executors import RayCluster

        RayCluster(
            address=self.address, num_cpus=self.count if self.address is None else None
        )._connect()
        resources = (
            {"num_gpus": 1} if self.config.overrides.get("device") == "cuda" else {"num_cpus": 1}
        )
        self._actor_class = ray.remote(max_restarts=0, **resources)(_RayWorker)  # type: ignore[call-overload]  # ray's overloads take each resource by name
        for _ in range(self.count):
            self._start_actor()
        self._watcher = threading.Thread(
            target=self._watch, daemon=True, name="kernelproof-ray-supervisor"
        )
        self._watcher.start()

    def _start_actor(self) -> None:
        name = f"ray-{uuid.uuid4().hex[:12]}"
        config = self.config.model_copy(update={"name": name})
        actor = self._actor_class.remote(config.model_dump_json())
        self._actors[name] = (actor, actor.run.remote())

    def _watch(self) -> None:
        import ray

        while not self._stopping.is_set():
            refs = {ref: name for name, (_, ref) in self._actors.items()}
            done, _ = ray.wait(list(refs), num_returns=1, timeout=WATCH_S)
            for ref in done:
                name = refs[ref]
                try:
                    ray.get(ref)
                    why = "returned"
                except Exception as exc:  # noqa: BLE001 - the actor died: say how
                    why = f"died ({type(exc).__name__})"
                if self._stopping.is_set():
                    return
                self.queue.abandon(name, f"its Ray actor {name} {why} while verifying it")
                del self._actors[name]
                self._start_actor()
            _sweep(self.queue)

    def stop(self) -> None:
        import ray

        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join()
        for name, (actor, _) in list(self._actors.items()):
            ray.kill(actor)
            self.queue.release(name, "the server stopped during its verification")

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": name, "state": "ray actor"} for name in self._actors]
