"""A worker pair that answers canned typed replies, computed in this process from plain
functions: the controller's logic (the matrix's cells, outcomes, stopping and error paths; the
timing session's rounds, evidence rules and stopping) tested in milliseconds, with no worker
process, sandbox or torch import of a task.

A *side* is a function ``(knobs, seed) -> output tensor``; it may raise (the call fails) or
return :data:`DIES` (the worker dies). The reference side's float64 oracle is its output
computed in float64 (the side gets ``dtype=torch.float64`` then). A timed call's output is the
side's output of its seed, computed when the controller fetches it.

A *clock* (:mod:`tests.controller.fake_timing`) says, per timed batch, what the worker reports
and what the controller saw of it from outside; the scheduler facts it gives are what the
worker object holds for ``request_facts`` after the request, as a real worker process does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from tests.controller.fake_timing import MS, QUIET, Batch, Clock, Seen, honest, plus

from kernelproof.protocol.messages import CapturedError, Phase, WorkerReply
from kernelproof.protocol.requests import (
    FetchReply,
    FetchRequest,
    PrepareReply,
    PrepareRequest,
    ReplyData,
    Request,
    RunReply,
    RunRequest,
    SettleRequest,
    TimeReply,
    TimeRequest,
)
from kernelproof.schedstat import SchedulerSample
from kernelproof.workers.pair import Handover
from kernelproof.workers.process import DeathCause, Response, Submitted, WorkerDeath

#: What a side or a clock returns to have its worker die on that call.
DIES = object()

Side = Callable[..., Any]


def row_sum(knobs: dict[str, int], seed: int, dtype: torch.dtype = torch.float32) -> Any:
    """The reference the tests use: a row sum of seeded inputs."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(knobs.get("batch", 4), knobs.get("dim", 64), generator=generator)
    return x.to(dtype).sum(-1)


def _described(tensor: torch.Tensor) -> dict[str, Any]:
    return {
        "kind": "tensor",
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "device": "cpu",
    }


@dataclass
class FakeWorker:
    """Stands in for one worker process: what it computes and how its batches time, its
    death, and the controller's facts about its last request (``request_facts`` reads them)."""

    side: Side = row_sum
    clock: Clock = field(default_factory=lambda: honest(MS))
    death: WorkerDeath | None = None
    last_request_wall_s: float = 0.0
    scheduler_at_send: SchedulerSample | None = None
    scheduler_at_reply: SchedulerSample | None = None
    scheduler_at_freeze: SchedulerSample | None = None
    batches: int = 0
    """Timed batches answered so far, the warm-up included."""

    timed: dict[str, list[int]] = field(default_factory=dict)
    """Per baseline, the seeds of its last timed batch (a fetch sends their outputs)."""

    proc: SchedulerSample = field(default_factory=lambda: SchedulerSample(0.0, 0.0, 0.0, 0.0))
    """Its /proc totals so far."""

    def saw(self, seen: Seen) -> None:
        """Record what the controller saw of the request just answered."""
        self.scheduler_at_send = self.proc
        self.scheduler_at_reply = plus(self.proc, seen.proc)
        self.scheduler_at_freeze = (
            None if seen.after_freeze is None else plus(self.proc, seen.after_freeze)
        )
        self.proc = self.scheduler_at_freeze or self.scheduler_at_reply
        self.last_request_wall_s = seen.wall_s


class FakePair:
    """Answers the requests the matrix runner and the timing session send. ``reference`` and
    ``candidate_side`` are the sides; each worker's clock defaults to honest calls of 1 ms.
    The baseline worker (``torch.compile`` of the reference) is started on first use, as in
    :class:`~kernelproof.workers.pair.WorkerPair`. Like the real pair's, ``pair.reference``,
    ``pair.candidate`` and ``pair.baseline`` are workers (the timing session reads their
    scheduler facts), so the reference's side goes in as ``reference`` and lives on its
    worker."""

    def __init__(
        self,
        reference: Side = row_sum,
        candidate_side: Side = row_sum,
        candidate_builds: bool = True,
        *,
        reference_clock: Clock | None = None,
        candidate_clock: Clock | None = None,
        baseline_clock: Clock | None = None,
        baseline_prepares: bool = True,
    ) -> None:
        self.reference = FakeWorker(reference, reference_clock or honest(MS))
        self.candidate = FakeWorker(candidate_side, candidate_clock or honest(MS))
        self.baseline: FakeWorker | None = None
        self.candidate_builds = candidate_builds
        self.baseline_clock = baseline_clock or self.reference.clock
        self.baseline_prepares = baseline_prepares
        self.asked: list[str] = []
        """Every request, as ``"<side>:<op>"``, in order."""
        self.restarts = 0
        self._knobs: dict[str, int] = {}

    @property
    def candidate_death(self) -> WorkerDeath | None:
        return self.candidate.death

    def prepare(self, knobs: dict[str, int], init_seed: int) -> Handover:
        self._knobs = dict(knobs)
        reference = self.ask_reference(PrepareRequest(knobs=knobs, init_seed=init_seed))
        candidate = self.ask_candidate(
            PrepareRequest(knobs=knobs, init_seed=init_seed, state_names=[])
        )
        return Handover(reference, candidate)

    def restart(self) -> Response[ReplyData]:
        self.restarts += 1
        self.candidate = FakeWorker(self.candidate.side, self.candidate.clock)
        return _ok(ReplyData(), ReplyData)

    def ask_reference(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Response[Any]:
        self.asked.append(f"reference:{request.op}")
        return self._answer(self.reference, request, oracle=True)

    def ask_candidate(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Response[Any]:
        self.asked.append(f"candidate:{request.op}")
        if self.candidate.death is not None:
            return Response(death=self.candidate.death, reply_model=request.reply_model)
        if isinstance(request, PrepareRequest) and not self.candidate_builds:
            return _failed(ValueError("ModelNew() takes no arguments"), request.reply_model)
        return self._answer(self.candidate, request, oracle=False)

    def ask_baseline(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Response[Any]:
        self.asked.append(f"baseline:{request.op}")
        if self.baseline is None or self.baseline.death is not None:
            self.baseline = FakeWorker(self.reference.side, self.baseline_clock)
        if isinstance(request, PrepareRequest) and not self.baseline_prepares:
            return _failed(RuntimeError("torch.compile failed"), request.reply_model)
        return self._answer(self.baseline, request, oracle=False)

    def submit_candidate(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Submitted:
        return Submitted(
            request.op, 0.0, 1.0, self.ask_candidate(request, tensors), request.reply_model
        )

    def collect_candidate(self, submitted: Submitted) -> Response[Any]:
        assert submitted.settled is not None
        return submitted.settled

    def _answer(self, worker: FakeWorker, request: Request[Any], *, oracle: bool) -> Response[Any]:
        if isinstance(request, TimeRequest):
            return self._time(worker, request)
        worker.saw(QUIET)
        if isinstance(request, RunRequest):
            return self._run(worker, request, oracle=oracle)
        if isinstance(request, FetchRequest):
            return self._fetch(worker, request)
        return _ok(self._reply(request), request.reply_model)

    def _reply(self, request: Request[Any]) -> ReplyData:
        if isinstance(request, PrepareRequest):
            return PrepareReply(state_names=[])
        if isinstance(request, SettleRequest):
            return ReplyData()
        return request.reply_model()

    def _run(self, worker: FakeWorker, request: RunRequest, *, oracle: bool) -> Response[RunReply]:
        knobs = {**self._knobs, **request.variant.knobs}
        try:
            output = worker.side(knobs, request.variant.seed)
        except Exception as exc:  # noqa: BLE001 - a raising side is a failed call, as in a worker
            return _failed(exc, RunReply)
        if output is DIES:
            return _dies(worker, RunReply)
        tensors = [output]
        data = RunReply(call_s=1e-4, outputs=[_described(output)])
        if oracle:
            tensors.append(worker.side(knobs, request.variant.seed, dtype=torch.float64))
            data = RunReply(call_s=1e-4, outputs=[_described(output)], oracle_count=1)
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.CALL, data=data.dump()),
            tensors=tensors,
            reply_model=RunReply,
        )

    def _time(self, worker: FakeWorker, request: TimeRequest) -> Response[TimeReply]:
        """One timed batch, as the worker's clock has it; its seeds are kept for a fetch."""
        batch = Batch(tuple(request.seeds), worker.batches, request.baseline, dict(self._knobs))
        worker.batches += 1
        try:
            seen = worker.clock(batch)
        except Exception as exc:  # noqa: BLE001 - a raising clock is a failed batch, as in a worker
            worker.saw(QUIET)
            return _failed(exc, TimeReply)
        if seen is DIES:
            return _dies(worker, TimeReply)
        assert isinstance(seen, Seen), f"a clock returns a Seen or DIES, not {seen!r}"
        worker.saw(seen)
        worker.timed[request.baseline] = list(request.seeds)
        data = TimeReply(
            times=list(seen.times),
            generation_s=seen.generation_s,
            timed_wall_s=seen.timed_wall_s,
            flush="data",
            threads=request.threads,
        )
        return _ok(data, TimeReply)

    def _fetch(self, worker: FakeWorker, request: FetchRequest) -> Response[FetchReply]:
        """The outputs of the chosen calls of the last timed batch: the side's, of their seeds."""
        seeds = worker.timed.get(request.baseline, [])
        try:
            outputs = [worker.side(self._knobs, seeds[index]) for index in request.indices]
        except Exception as exc:  # noqa: BLE001 - a raising side is a failed fetch, as in a worker
            return _failed(exc, FetchReply)
        if any(output is DIES for output in outputs):
            return _dies(worker, FetchReply)
        data = FetchReply(
            counts=[1] * len(outputs), described=[[_described(output)] for output in outputs]
        )
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.CALL, data=data.dump()),
            tensors=outputs,
            reply_model=FetchReply,
        )


def _ok(data: ReplyData, model: type[ReplyData]) -> Response[Any]:
    return Response(
        reply=WorkerReply(ok=True, phase=Phase.CALL, data=data.dump()), reply_model=model
    )


def _failed(exc: Exception, model: type[ReplyData]) -> Response[Any]:
    return Response(
        reply=WorkerReply(ok=False, phase=Phase.CALL, error=CapturedError.from_exception(exc)),
        reply_model=model,
    )


def _dies(worker: FakeWorker, model: type[ReplyData]) -> Response[Any]:
    worker.death = WorkerDeath(DeathCause.SIGNAL, "killed by signal 11")
    return Response(death=worker.death, reply_model=model)
