"""A worker pair that answers canned typed replies, computed in this process from two plain
functions: the controller's logic (cells, outcomes, stopping, error paths) tested in
milliseconds, with no worker process, sandbox or torch import of a task.

A *side* is a function ``(knobs, seed) -> output tensor``; it may raise (the call fails) or
return :data:`DIES` (the worker dies). The reference side's float64 oracle is its output
computed in float64 (the side gets ``dtype=torch.float64`` then).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelproof.protocol.messages import CapturedError, Phase, WorkerReply
from kernelproof.protocol.requests import (
    PrepareReply,
    PrepareRequest,
    ReplyData,
    Request,
    RunReply,
    RunRequest,
    SettleRequest,
)
from kernelproof.workers.pair import Handover
from kernelproof.workers.process import DeathCause, Response, Submitted, WorkerDeath

#: What a side returns to have its worker die on that call.
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
    """Stands in for a worker process where the matrix looks at one (``pair.candidate``)."""

    death: WorkerDeath | None = None


@dataclass
class FakePair:
    """Answers the requests the matrix runner and the timing session send."""

    reference: Side = row_sum
    candidate_side: Side = row_sum
    candidate_builds: bool = True
    asked: list[str] = field(default_factory=list)
    """Every request, as ``"<side>:<op>"``, in order."""
    restarts: int = 0
    candidate: FakeWorker = field(default_factory=FakeWorker)
    _knobs: dict[str, int] = field(default_factory=dict)

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
        self.candidate = FakeWorker()
        return _ok(ReplyData(), ReplyData)

    def ask_reference(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Response[Any]:
        self.asked.append(f"reference:{request.op}")
        if isinstance(request, RunRequest):
            return self._run(self.reference, request, oracle=True)
        return _ok(self._reply(request), request.reply_model)

    def ask_candidate(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Response[Any]:
        self.asked.append(f"candidate:{request.op}")
        if self.candidate.death is not None:
            return Response(death=self.candidate.death, reply_model=request.reply_model)
        if isinstance(request, PrepareRequest) and not self.candidate_builds:
            return _failed(ValueError("ModelNew() takes no arguments"), request.reply_model)
        if isinstance(request, RunRequest):
            return self._run(self.candidate_side, request, oracle=False)
        return _ok(self._reply(request), request.reply_model)

    def submit_candidate(self, request: Request[Any], tensors: Sequence[Any] = ()) -> Submitted:
        return Submitted(
            request.op, 0.0, 1.0, self.ask_candidate(request, tensors), request.reply_model
        )

    def collect_candidate(self, submitted: Submitted) -> Response[Any]:
        assert submitted.settled is not None
        return submitted.settled

    def _reply(self, request: Request[Any]) -> ReplyData:
        if isinstance(request, PrepareRequest):
            return PrepareReply(state_names=[])
        if isinstance(request, SettleRequest):
            return ReplyData()
        return request.reply_model()

    def _run(self, side: Side, request: RunRequest, *, oracle: bool) -> Response[RunReply]:
        knobs = {**self._knobs, **request.variant.knobs}
        try:
            output = side(knobs, request.variant.seed)
        except Exception as exc:  # noqa: BLE001 - a raising side is a failed call, as in a worker
            return _failed(exc, RunReply)
        if output is DIES:
            self.candidate.death = WorkerDeath(DeathCause.SIGNAL, "killed by signal 11")
            return Response(death=self.candidate.death, reply_model=RunReply)
        tensors = [output]
        data = RunReply(call_s=1e-4, outputs=[_described(output)])
        if oracle:
            tensors.append(side(knobs, request.variant.seed, dtype=torch.float64))
            data = RunReply(call_s=1e-4, outputs=[_described(output)], oracle_count=1)
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.CALL, data=data.dump()),
            tensors=tensors,
            reply_model=RunReply,
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
