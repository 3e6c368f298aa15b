"""Where bench verifications run: a local pool of threads, or Ray tasks on a cluster.

Each verification already runs its reference and candidate in their own worker processes
(forked from a forkserver that preloaded torch), so the local pool only needs threads to keep
several verifications in flight. Ray runs the same ``verify`` call as a task with ``num_cpus``
or ``num_gpus`` reserved, and results stream back as they finish.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol

from kernelproof.schema import Report
from kernelproof.suite.layout import BenchItem

#: Environment variables a Ray worker needs to share the project's build caches.
FORWARDED_ENVIRONMENT = ("TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "NUMBA_CACHE_DIR",
                         "TRITON_CACHE_DIR", "KERNELPROOF_CACHE_DIR", "TRITON_INTERPRET")

#: A Ray task lost with its node is retried this many times before it counts as failed.
RAY_TASK_RETRIES = 2


@dataclass(frozen=True)
class VerifyCall:
    """Everything one verification needs, picklable for Ray."""

    reference: str
    candidate: str
    profile: str
    overrides: dict[str, Any]

    def run(self) -> Report:
        from kernelproof.controller.verify import verify

        return verify(self.reference, self.candidate, profile=self.profile, **self.overrides)


def verify_call(item: BenchItem, profile: str, overrides: dict[str, Any]) -> VerifyCall:
    return VerifyCall(str(item.task.reference.resolve()), str(item.candidate.resolve()), profile,
                      dict(overrides))


class Executor(Protocol):
    def results(self, calls: list[tuple[BenchItem, VerifyCall]]) -> Iterator[tuple[BenchItem, Report]]: ...

    def cancel(self) -> None: ...


@dataclass
class LocalPool:
    """``jobs`` verifications in flight at once, in threads of this process."""

    jobs: int = 1
    _executor: ThreadPoolExecutor | None = None

    def results(self, calls: list[tuple[BenchItem, VerifyCall]]) -> Iterator[tuple[BenchItem, Report]]:
        self._executor = ThreadPoolExecutor(max_workers=max(1, self.jobs),
                                            thread_name_prefix="kernelproof-bench")
        futures: dict[Future[Report], BenchItem] = {
            self._executor.submit(call.run): item for item, call in calls
        }
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield futures[future], future.result()
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def cancel(self) -> None:
        from kernelproof.workers.process import kill_all_workers

        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        kill_all_workers()


def _run_remote(call: VerifyCall) -> str:
    """A Ray task: one verification, its report as JSON (plain text crosses Ray cheaply)."""
    return call.run().to_json()


@dataclass
class RayCluster:
    """Verifications as Ray tasks. ``address`` None starts a local cluster; otherwise joins."""

    address: str | None = None
    device: str = "cpu"
    num_cpus: int | None = None
    _refs: list[Any] = field(default_factory=list)

    def _connect(self) -> Any:
        import ray

        if not ray.is_initialized():
            environment = {k: os.environ[k] for k in FORWARDED_ENVIRONMENT if k in os.environ}
            source = str(Path(__file__).resolve().parents[2])
            environment["PYTHONPATH"] = os.pathsep.join(
                p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
            ray.init(address=self.address, num_cpus=self.num_cpus if self.address is None else None,
                     include_dashboard=False, ignore_reinit_error=True, log_to_driver=False,
                     runtime_env={"env_vars": environment})
        return ray

    def results(self, calls: list[tuple[BenchItem, VerifyCall]]) -> Iterator[tuple[BenchItem, Report]]:
        ray = self._connect()
        resources = {"num_gpus": 1, "num_cpus": 1} if self.device == "cuda" else {"num_cpus": 1}
        task = ray.remote(max_retries=RAY_TASK_RETRIES, **resources)(_run_remote)
        by_ref = {}
        for item, call in calls:
            ref = task.remote(call)
            by_ref[ref] = item
            self._refs.append(ref)
        pending = list(by_ref)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield by_ref[ref], Report.model_validate_json(ray.get(ref))

    def cancel(self) -> None:
        import ray

        for ref in self._refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass
