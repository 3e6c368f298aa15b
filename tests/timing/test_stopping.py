"""When the timing loop stops."""

from __future__ import annotations

import math

import pytest

from kernelproof.errors import UsageError
from kernelproof.timing import stopping
from kernelproof.timing.bootstrap import SpeedupEstimate, round_speedup_interval
from kernelproof.timing.stopping import (
    STOP_BUDGET,
    STOP_CONTINUE,
    STOP_CONVERGED,
    STOP_MAX_ROUNDS,
    STOP_REASONS,
    StoppingRule,
)

MS = 1e-3


def estimate(half_width_rel: float) -> SpeedupEstimate:
    low, high = 1.0 - half_width_rel, 1.0 + half_width_rel
    return SpeedupEstimate(speedup=1.0, low=low, high=high, half_width_rel=half_width_rel)


class TestStoppingRule:
    rule = StoppingRule(target_half_width=0.02, min_rounds=10, max_rounds=100, budget_s=5.0)

    def test_defaults(self) -> None:
        rule = StoppingRule()
        assert rule.target_half_width == stopping.DEFAULT_TARGET_HALF_WIDTH == 0.02
        assert rule.min_rounds == stopping.DEFAULT_MIN_ROUNDS
        assert rule.max_rounds == stopping.DEFAULT_MAX_ROUNDS
        assert rule.budget_s == stopping.DEFAULT_BUDGET_S

    def test_continues_while_wide(self) -> None:
        decision = self.rule.decide(estimate(0.05), rounds=20, elapsed_s=1.0)
        assert decision.stop is False and decision.reason == STOP_CONTINUE == ""

    def test_continues_without_an_estimate(self) -> None:
        assert self.rule.decide(None, rounds=20, elapsed_s=1.0).stop is False

    def test_waits_for_min_rounds_even_when_narrow(self) -> None:
        assert self.rule.decide(estimate(0.001), rounds=9, elapsed_s=1.0).stop is False

    def test_converges(self) -> None:
        decision = self.rule.decide(estimate(0.02), rounds=10, elapsed_s=1.0)
        assert decision.stop and decision.reason == STOP_CONVERGED
        assert "10 rounds" in decision.detail

    def test_max_rounds(self) -> None:
        decision = self.rule.decide(estimate(0.05), rounds=100, elapsed_s=1.0)
        assert decision.stop and decision.reason == STOP_MAX_ROUNDS

    def test_budget(self) -> None:
        decision = self.rule.decide(estimate(0.05), rounds=20, elapsed_s=5.0)
        assert decision.stop and decision.reason == STOP_BUDGET

    def test_budget_overrides_min_rounds(self) -> None:
        decision = self.rule.decide(None, rounds=3, elapsed_s=6.0)
        assert decision.stop and decision.reason == STOP_BUDGET

    def test_convergence_wins_over_limits(self) -> None:
        decision = self.rule.decide(estimate(0.01), rounds=100, elapsed_s=9.0)
        assert decision.reason == STOP_CONVERGED

    def test_reasons_are_the_named_ones(self) -> None:
        assert {"converged", "budget", "max-rounds", ""} == STOP_REASONS

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"target_half_width": 0.0},
            {"target_half_width": math.nan},
            {"min_rounds": 0},
            {"min_rounds": 20, "max_rounds": 10},
            {"budget_s": 0.0},
            {"budget_s": math.nan},
        ],
    )
    def test_rejects_bad_settings(self, kwargs: dict) -> None:
        with pytest.raises(UsageError):
            StoppingRule(**kwargs)

    def test_drives_a_loop_to_convergence(self, lognormal) -> None:
        rule = StoppingRule(target_half_width=0.02, min_rounds=10, max_rounds=400, budget_s=60.0)
        ref = lognormal(90, 400, sigma=0.05)
        cand = lognormal(91, 400, median_s=0.5 * MS, sigma=0.05)
        for rounds in range(1, 401):
            est = round_speedup_interval(
                [[t] for t in ref[:rounds]], [[t] for t in cand[:rounds]], resamples=500, rng=0
            )
            decision = rule.decide(est, rounds, elapsed_s=0.0)
            if decision.stop:
                break
        assert decision.reason == STOP_CONVERGED
        assert 10 <= rounds < 400
        assert est.low <= 2.0 <= est.high


def test_grace_rounds_let_a_thin_budget_reach_an_interval_but_not_run_forever():
    rule = StoppingRule(budget_s=1.0, grace_rounds=4, min_rounds=6)
    assert not rule.decide(None, 2, 1.5).stop  # over budget, but no interval yet
    assert rule.decide(None, 4, 1.5).reason == STOP_BUDGET
    assert rule.decide(None, 2, 2.0).reason == STOP_BUDGET  # twice the budget ends it
    assert StoppingRule(budget_s=1.0).decide(None, 1, 1.0).reason == STOP_BUDGET
