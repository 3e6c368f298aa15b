"""The default shape's rounds go on until the stacks sampled from outside hold enough of the
candidate's calls (HACKS row 35 beside another verification)."""

from __future__ import annotations

from kernelproof.controller.timing_session import (
    TIMED_STACKS_CALL_S,
    TIMED_STACKS_STRETCH,
    TimingSession,
)
from kernelproof.tasks.variants import ShapeGroup
from kernelproof.timing.evidence import BatchEvidence, BatchFacts


def _session(sampled: bool) -> TimingSession:
    # Only the attribute the rule reads: a session without workers.
    session = TimingSession.__new__(TimingSession)
    session.stacks = object() if sampled else None  # type: ignore[assignment]
    return session


def _evidence(call_s: float, rounds: int = 6) -> BatchEvidence:
    evidence = BatchEvidence()
    for _ in range(rounds):
        facts = BatchFacts(calls=10, reported_s=call_s / rounds, wall_s=0.1, cpu_s=0.05)
        evidence.add(facts, facts)
    return evidence


DEFAULT = ShapeGroup(label="default", knobs={}, is_default=True)


def test_thin_sampled_rounds_go_on_within_the_stretch():
    thin = _evidence(TIMED_STACKS_CALL_S / 10)
    assert _session(True)._stacks_too_thin(DEFAULT, thin, elapsed_s=3.0, budget_s=3.0)
    # Past the stretch the budget wins.
    late = TIMED_STACKS_STRETCH * 3.0
    assert not _session(True)._stacks_too_thin(DEFAULT, thin, elapsed_s=late, budget_s=3.0)


def test_enough_calls_unsampled_rounds_and_other_shapes_stop_as_usual():
    thick = _evidence(TIMED_STACKS_CALL_S * 1.1)
    thin = _evidence(TIMED_STACKS_CALL_S / 10)
    assert not _session(True)._stacks_too_thin(DEFAULT, thick, elapsed_s=1.0, budget_s=3.0)
    assert not _session(False)._stacks_too_thin(DEFAULT, thin, elapsed_s=1.0, budget_s=3.0)
    other = ShapeGroup(label="dim=2048", knobs={"dim": 2048})
    assert not _session(True)._stacks_too_thin(other, thin, elapsed_s=1.0, budget_s=3.0)


def test_the_stop_reason_says_when_rounds_went_on_for_the_stacks():
    from kernelproof.controller.timing_session import _stop_reason

    assert _stop_reason("converged", False, 0.1) == "converged"
    filled = _stop_reason("converged", True, TIMED_STACKS_CALL_S)
    assert filled.startswith("converged, after rounds added") and "held 0.4 s" in filled
    short = _stop_reason("budget", True, 0.12)
    assert "short of 0.4 s" in short and "0.12 s" in short
