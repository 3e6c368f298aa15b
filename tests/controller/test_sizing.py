"""Sizing against the budget: stress variants and ``--stress-shapes``, with a stand-in worker
pair whose meta-device estimate is bytes = 4 * n * m."""

from __future__ import annotations

from typing import Any

from kernelproof.config import resolve_settings
from kernelproof.controller.sizing import largest_fitting, within_budget
from kernelproof.workers.messages import Phase, WorkerReply
from kernelproof.workers.process import Response
from kernelproof.workers.protocol import PlanRequest


class _Pair:
    """Answers ``plan`` requests as the reference worker would, from a formula."""

    def __init__(self, sizeable: bool = True) -> None:
        self.sizeable = sizeable
        self.asked: list[dict[str, int]] = []

    def ask_reference(self, request: PlanRequest) -> Any:
        knobs = request.knobs
        self.asked.append(knobs)
        data = {"ok": self.sizeable, "bytes": 4.0 * knobs["n"] * knobs["m"], "flops": 0.0}
        return Response(reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data))


def test_largest_fitting_finds_the_budget_edge_within_a_sixteenth():
    settings = resolve_settings(overrides={"max_call_bytes": 4 * 1000 * 300})
    largest = largest_fitting(_Pair(), {"n": 10, "m": 1000}, "n", settings)  # type: ignore[arg-type]
    assert largest is not None and 300 * 15 / 16 <= largest <= 300


def test_largest_fitting_gives_up_when_double_does_not_fit_or_size_is_unknown():
    settings = resolve_settings(overrides={"max_call_bytes": 4 * 1000 * 15})
    assert largest_fitting(_Pair(), {"n": 10, "m": 1000}, "n", settings) is None  # type: ignore[arg-type]
    settings = resolve_settings()
    assert largest_fitting(_Pair(sizeable=False), {"n": 1, "m": 1}, "n", settings) is None  # type: ignore[arg-type]


def test_unknown_sizes_fit_ordinary_variants_but_not_stress_ones():
    settings = resolve_settings()
    pair = _Pair(sizeable=False)
    assert within_budget(pair, {"n": 1, "m": 1}, settings)  # type: ignore[arg-type]
    assert not within_budget(pair, {"n": 1, "m": 1}, settings, unknown_fits=False)  # type: ignore[arg-type]
