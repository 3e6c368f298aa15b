"""Size estimates that run out of time stop being asked (an MoE task built millions of expert
modules on the meta device at every knob past 2**31 rows: 413 s of sizing for one task)."""

from __future__ import annotations

from typing import Any

from kernelproof.protocol.requests import PlanRequest, RunRequest
from kernelproof.schema.variant import InputVariant, VariantKind
from kernelproof.workers.pair import MAX_PLAN_TIMEOUTS, WorkerPair
from kernelproof.workers.process import DeathCause, Response, WorkerDeath


def _pair(asked: list[Any]) -> WorkerPair:
    pair = object.__new__(WorkerPair)
    pair.reference = object()  # type: ignore[assignment]
    pair._plan_timeouts = 0

    def ask(request: Any, tensors: Any = ()) -> Response[Any]:
        asked.append(request)
        return Response(death=WorkerDeath(DeathCause.TIMEOUT, "timed out"))

    pair._ask_reference = ask  # type: ignore[method-assign]
    return pair


def test_after_two_plans_run_out_of_time_no_more_are_asked():
    asked: list[Any] = []
    pair = _pair(asked)
    answers = [pair.ask_reference(PlanRequest(knobs={"n": 2**31})) for _ in range(4)]
    assert len(asked) == MAX_PLAN_TIMEOUTS
    assert all(not a.ok for a in answers) and "not sized" in answers[-1].failure


def test_other_requests_are_still_asked_and_never_counted():
    asked: list[Any] = []
    pair = _pair(asked)
    run = RunRequest(variant=InputVariant(name="seed:0", kind=VariantKind.SEED, seed=0))
    for _ in range(3):
        pair.ask_reference(run)
    assert len(asked) == 3 and pair._plan_timeouts == 0
