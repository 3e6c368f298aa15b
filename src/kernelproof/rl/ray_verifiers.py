"""Reward verifications on Ray: long-lived actors, each holding a warm Session.

Each actor is one CPU slot (a GPU with ``device="cuda"`` settings) and runs one verification
at a time; its forkserver and its tasks' reference workers stay warm across batches. Calls
carry their deadline as wall-clock time, so one that waited in an actor's queue gets only
what is left of the batch's time.
"""

from __future__ import annotations

import itertools
import os
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kernelproof.rl.tasks import TaskRef
from kernelproof.schema import Report
from kernelproof.suite.executors import FORWARDED_ENVIRONMENT

__all__ = ["RayVerifiers", "RewardActor"]


class RewardActor:
    """A Ray actor: one Session for every verification it runs (reports cross as JSON)."""

    def __init__(self) -> None:
        from kernelproof.session import Session

        self.session = Session()

    def verify(
        self,
        source: str | None,
        path: str | None,
        candidate: str,
        profile: str,
        options: dict[str, Any],
        deadline_epoch: float,
        seed: int,
    ) -> str:
        import tempfile

        remaining = deadline_epoch - time.time()
        if remaining <= 0:
            raise TimeoutError("the batch's deadline passed before this pair started")
        options = {**options, "profile": profile, "deadline_s": remaining}
        if source is not None:
            return self.session.evaluate(source, candidate, **options).to_json()
        with tempfile.TemporaryDirectory(prefix="candidate-") as folder:
            file = Path(folder) / "candidate.py"
            file.write_text(candidate, encoding="utf-8")
            assert path is not None
            return self.session.verify(path, file, base_seed=seed, **options).to_json()


class RayVerifiers:
    """Actors on a Ray cluster (``address`` None starts a local one), ``jobs`` of them
    (default: the cluster's CPUs)."""

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        import ray
        from ray.actor import ActorHandle

        if not ray.is_initialized():
            environment = {k: os.environ[k] for k in FORWARDED_ENVIRONMENT if k in os.environ}
            ray.init(
                address=address,
                include_dashboard=False,
                ignore_reinit_error=True,
                log_to_driver=False,
                runtime_env={"env_vars": environment},
                num_cpus=jobs if address is None else None,
            )
        slots = jobs or int(ray.available_resources().get("CPU", 1)) or 1
        actor = ray.remote(num_cpus=1, max_restarts=1)(RewardActor)
        self._actors: list[ActorHandle[RewardActor]] = []
        for _ in range(max(1, slots)):
            handle = actor.remote()
            # Ray types a remote class's remote() as "a handle or the class"; it is the handle.
            assert isinstance(handle, ActorHandle)
            self._actors.append(handle)
        self._next = itertools.cycle(self._actors)
        self._refs: list[Any] = []

    def submit(
        self,
        task: TaskRef,
        candidate: str,
        profile: str,
        options: dict[str, Any],
        deadline: float,
        seed: int,
    ) -> Future[Report]:
        """A future of the report; the deadline is a ``time.monotonic()`` instant here."""
        deadline_epoch = time.time() + (deadline - time.monotonic())
        ref = next(self._next).verify.remote(
            task.source,
            str(task.path) if task.source is None else None,
            candidate,
            profile,
            options,
            deadline_epoch,
            seed,
        )
        self._refs.append(ref)
        outer: Future[Report] = Future()
        inner = ref.future()

        def settle(done: Future[str]) -> None:
            if outer.set_running_or_notify_cancel():
                try:
                    outer.set_result(Report.model_validate_json(done.result()))
                except Exception as exc:  # noqa: BLE001 - the actor's failure, as a value
                    outer.set_exception(exc)

        inner.add_done_callback(settle)
        return outer

    def close(self) -> None:
        import ray

        for ref in self._refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - finished or gone already
                pass
        for actor in self._actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - dead or gone already
                pass
