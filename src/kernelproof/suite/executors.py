"""Where bench verifications run: a local pool of threads, or Ray actors on a cluster.

Each verification already runs its reference and candidate in their own worker processes
(forked from a forkserver that preloaded torch), so the local pool only needs threads to keep
several verifications in flight; they share one :class:`~kernelproof.Session`. On Ray, each
CPU slot (or GPU) holds a long-lived actor with a Session of its own: its forkserver and the
reference workers of the tasks it has seen stay warm across verifications, instead of a
forkserver per verification. Results stream back as they finish.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kernelproof.schema import Report
from kernelproof.session import Session
from kernelproof.suite.layout import BenchItem

#: Environment variables a Ray worker needs to share the project's build caches.
FORWARDED_ENVIRONMENT = (
    "TORCH_EXTENSIONS_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "NUMBA_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "KERNELPROOF_CACHE_DIR",
    "TRITON_INTERPRET",
)


#: What a caller attaches to each call and gets back with its report (a bench item, a recheck's
#: proof): the executors only carry it through.
Item = TypeVar("Item")

#: Actors a call may lose (with their nodes) before the bench stops with the error.
RAY_CALL_ATTEMPTS = 3


@dataclass(frozen=True)
class VerifyCall:
    """Everything one verification needs, picklable for Ray."""

    reference: str
    candidate: str
    profile: str
    overrides: dict[str, Any]

    def run(self, session: Session | None = None) -> Report:
        """The verification, through ``session`` when given (its memos and warm workers)."""
        if session is not None:
            return session.verify(
                self.reference, self.candidate, profile=self.profile, **self.overrides
            )
        from kernelproof.controller.verify import verify

        return verify(self.reference, self.candidate, profile=self.profile, **self.overrides)


def verify_call(item: BenchItem, profile: str, overrides: dict[str, Any]) -> VerifyCall:
    return VerifyCall(
        str(item.task.reference.resolve()), str(item.candidate.resolve()), profile, dict(overrides)
    )


class Executor(Protocol):
    def results(self, calls: list[tuple[Item, VerifyCall]]) -> Iterator[tuple[Item, Report]]: ...

    def cancel(self) -> None: ...


@dataclass
class LocalPool:
    """``jobs`` verifications in flight at once, in threads of this process."""

    jobs: int = 1
    store_url: str | None = None
    """The results store that keeps the reference's answers across runs (``bench``'s own)."""

    _executor: ThreadPoolExecutor | None = None
    _session: Session | None = None

    def results(self, calls: list[tuple[Item, VerifyCall]]) -> Iterator[tuple[Item, Report]]:
        self._executor = ThreadPoolExecutor(
            max_workers=max(1, self.jobs), thread_name_prefix="kernelproof-bench"
        )
        session = self._session = Session(store=self.store_url)
        futures: dict[Future[Report], Item] = {
            self._executor.submit(call.run, session): item for item, call in calls
        }
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield futures[future], future.result()
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)
            session.close()

    def cancel(self) -> None:
        from kernelproof.workers.process import kill_all_workers

        if self._session is not None:
            self._session.close()  # first: running verifications stop reviving workers
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        kill_all_workers()


class SessionActor:
    """A Ray actor: one Session for every verification it runs (reports cross as JSON)."""

    def __init__(self, store_url: str | None = None) -> None:
        self.session = Session(store=store_url)

    def verify(self, call: VerifyCall) -> str:
        return call.run(self.session).to_json()


@dataclass
class RayCluster:
    """Verifications in Ray actors. ``address`` None starts a local cluster; otherwise joins."""

    address: str | None = None
    device: str = "cpu"
    num_cpus: int | None = None
    store_url: str | None = None
    """The results store that keeps the reference's answers across runs: only one every
    node can reach (a server database; a SQLite file only on a one-machine cluster)."""

    _refs: list[Any] = field(default_factory=list)

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            environment = {k: os.environ[k] for k in FORWARDED_ENVIRONMENT if k in os.environ}
            source = str(Path(__file__).resolve().parents[2])
            environment["PYTHONPATH"] = os.pathsep.join(
                p for p in (source, os.environ.get("PYTHONPATH", "")) if p
            )
            ray.init(
                address=self.address,
                num_cpus=self.num_cpus if self.address is None else None,
                include_dashboard=False,
                ignore_reinit_error=True,
                log_to_driver=False,
                runtime_env={"env_vars": environment},
            )
        return ray

    def results(self, calls: list[tuple[Item, VerifyCall]]) -> Iterator[tuple[Item, Report]]:
        """One actor per slot; each runs one verification at a time. A call whose actor dies
        (its node lost) goes back to the queue for another actor, so every call yields
        exactly once."""
        ray = self._connect()
        queue = list(calls)
        in_flight: dict[Any, tuple[Any, Item, VerifyCall]] = {}
        lost: dict[int, int] = {}
        actors = self._actors(ray, len(queue))
        while queue or in_flight:
            for actor in [a for a in actors if a not in {v[0] for v in in_flight.values()}]:
                if queue:
                    item, call = queue.pop(0)
                    ref = actor.verify.remote(call)
                    in_flight[ref] = (actor, item, call)
                    self._refs.append(ref)
            if not in_flight:
                actors = self._actors(ray, len(queue))  # every actor died: start new ones
                continue
            done, _ = ray.wait(list(in_flight), num_returns=1)
            actor, item, call = in_flight.pop(done[0])
            try:
                text = ray.get(done[0])
            except ray.exceptions.RayActorError:
                actors.remove(actor)
                lost[id(call)] = lost.get(id(call), 0) + 1
                if lost[id(call)] >= RAY_CALL_ATTEMPTS:
                    raise
                queue.insert(0, (item, call))
                continue
            yield item, Report.model_validate_json(text)

    def _actors(self, ray: Any, wanted: int) -> list[Any]:
        """Session actors for the slots the cluster has now (at most ``wanted``)."""
        kind = "GPU" if self.device == "cuda" else "CPU"
        slots = int(ray.available_resources().get(kind, 0)) or 1
        resources = {"num_gpus": 1, "num_cpus": 1} if self.device == "cuda" else {"num_cpus": 1}
        actor = ray.remote(max_restarts=0, **resources)(SessionActor)
        return [actor.remote(self.store_url) for _ in range(max(1, min(slots, wanted)))]

    def cancel(self) -> None:
        import ray

        for ref in self._refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass
