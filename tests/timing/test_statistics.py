"""Tests of the pure statistics of timing: summaries, speedup intervals, stopping, noise, clocks."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest

from kernelproof.errors import KernelproofError, UsageError
from kernelproof.schema.report import TimingStats
from kernelproof.timing import statistics as st
from kernelproof.timing.statistics import (
    STOP_BUDGET,
    STOP_CONTINUE,
    STOP_CONVERGED,
    STOP_MAX_ROUNDS,
    STOP_REASONS,
    SpeedupEstimate,
    StoppingRule,
    controller_cross_check,
    implausibly_fast,
    noise_diagnostic,
    speedup_interval,
    summarize,
)

MS = 1e-3


def lognormal(seed: int, n: int, median_s: float = MS, sigma: float = 0.02) -> np.ndarray:
    """Per-call times with a realistic multiplicative spread around ``median_s``."""
    return np.random.default_rng(seed).lognormal(math.log(median_s), sigma, n)


def estimate(half_width_rel: float) -> SpeedupEstimate:
    low, high = 1.0 - half_width_rel, 1.0 + half_width_rel
    return SpeedupEstimate(speedup=1.0, low=low, high=high, half_width_rel=half_width_rel)


# --------------------------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------------------------


class TestSummarize:
    def test_median_iqr_and_outliers_on_known_data(self) -> None:
        stats = summarize([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 14.0])
        assert isinstance(stats, TimingStats)
        assert stats.median_s == 5.0
        assert stats.iqr_s == 4.0  # quartiles 3 and 7
        assert stats.outliers == 1  # only 14 lies beyond 7 + 1.5 * 4 = 13

    def test_outliers_on_both_sides(self) -> None:
        # Quartiles of 0.1, 10 x9, 50 are 10 and 10: every sample off 10 is an outlier.
        stats = summarize([0.1] + [10.0] * 9 + [50.0])
        assert stats.iqr_s == 0.0
        assert stats.outliers == 2

    def test_keeps_raw_samples_in_order(self) -> None:
        samples = [3e-3, 1e-3, 2e-3, 5e-3]
        stats = summarize(samples)
        assert stats.samples == samples
        assert stats.median_s == pytest.approx(2.5e-3)

    def test_clean_data_has_no_note(self) -> None:
        stats = summarize(lognormal(0, 200, sigma=0.01).tolist())
        assert stats.note == ""
        assert stats.outliers <= 4

    def test_many_outliers_are_noted(self) -> None:
        x = lognormal(1, 100, sigma=0.01)
        x[::8] *= 5.0  # 13 preempted calls
        stats = summarize(x.tolist())
        assert stats.outliers == 13
        assert "13% of samples are outliers" in stats.note

    def test_few_outliers_are_counted_but_not_noted(self) -> None:
        x = lognormal(1, 100, sigma=0.01)
        x[::25] *= 5.0  # 4 preempted calls, plus the odd natural outlier
        stats = summarize(x.tolist())
        assert 4 <= stats.outliers <= st.OUTLIER_FRACTION_WARN * x.size
        assert "outliers" not in stats.note

    def test_wide_spread_is_noted(self) -> None:
        stats = summarize(lognormal(2, 60, sigma=0.4).tolist())
        assert "IQR is" in stats.note and "of the median" in stats.note

    def test_too_few_samples_are_noted(self) -> None:
        assert "Only 2 sample(s)" in summarize([1e-3, 1.1e-3]).note

    def test_round_trips_through_json(self) -> None:
        stats = summarize(lognormal(3, 20).tolist())
        assert TimingStats.model_validate_json(stats.model_dump_json()) == stats

    @pytest.mark.parametrize(
        ("samples", "fragment"),
        [
            ([], "empty"),
            ([1e-3, 0.0], "samples[1] = 0.0"),
            ([1e-3, -1e-3], "samples[1] = -0.001"),
            ([math.nan], "samples[0] = nan"),
            ([1e-3, math.inf], "samples[1] = inf"),
            ([[1e-3, 2e-3]], "flat sequence"),
        ],
    )
    def test_rejects_bad_samples_with_the_value(self, samples: list, fragment: str) -> None:
        with pytest.raises(UsageError) as info:
            summarize(samples)
        assert fragment in str(info.value)
        assert isinstance(info.value, ValueError) and isinstance(info.value, KernelproofError)


# --------------------------------------------------------------------------------------------
# speedup_interval
# --------------------------------------------------------------------------------------------


class TestSpeedupInterval:
    def test_point_estimate_is_the_ratio_of_medians(self) -> None:
        est = speedup_interval([2.0, 4.0, 6.0], [1.0, 2.0, 9.0], rng=0)
        assert est.speedup == pytest.approx(2.0)
        assert est.half_width_rel == pytest.approx((est.high - est.low) / 2 / est.speedup)
        assert est.interval == (est.low, est.high)

    def test_identical_distributions_contain_one(self) -> None:
        # A 95% interval misses the truth once in 20 draws; these are seeded, and the coverage
        # test below checks the rate itself.
        est = speedup_interval(lognormal(12, 200), lognormal(13, 200), rng=0)
        assert est.low <= 1.0 <= est.high
        assert est.half_width_rel < 0.02

    def test_coverage_is_near_the_confidence_level(self) -> None:
        intervals = [
            speedup_interval(lognormal(2 * s, 60), lognormal(2 * s + 1, 60), resamples=500, rng=s)
            for s in range(40)
        ]
        covered = sum(est.low <= 1.0 <= est.high for est in intervals)
        assert covered >= 34  # 95% nominal: 40 draws cover 34 or more 99% of the time

    def test_slower_candidate_is_excluded_from_one_and_centred(self) -> None:
        ref = lognormal(20, 200)
        cand = 1.25 * lognormal(21, 200)
        est = speedup_interval(ref, cand, rng=0)
        assert est.high < 1.0
        assert est.speedup == pytest.approx(0.8, rel=0.02)
        assert (est.low + est.high) / 2 == pytest.approx(0.8, rel=0.02)
        assert est.low < est.speedup < est.high

    def test_higher_confidence_is_wider(self) -> None:
        ref, cand = lognormal(30, 100, sigma=0.05), lognormal(31, 100, sigma=0.05)
        narrow = speedup_interval(ref, cand, confidence=0.8, rng=0)
        wide = speedup_interval(ref, cand, confidence=0.99, rng=0)
        assert wide.low < narrow.low and wide.high > narrow.high
        assert wide.confidence == 0.99

    def test_deterministic_given_a_seed(self) -> None:
        ref, cand = lognormal(40, 50, sigma=0.1), lognormal(41, 50, sigma=0.1)
        assert speedup_interval(ref, cand, rng=7) == speedup_interval(ref, cand, rng=7)
        assert speedup_interval(ref, cand, rng=np.random.default_rng(7)) == speedup_interval(
            ref, cand, rng=7
        )
        assert speedup_interval(ref, cand, rng=7) != speedup_interval(ref, cand, rng=8)
        paired = speedup_interval(ref, cand, rng=7, paired=True)
        assert paired == speedup_interval(ref, cand, rng=7, paired=True)

    def test_paired_is_narrower_under_shared_drift(self) -> None:
        rounds = 100
        rng = np.random.default_rng(50)
        # Each round's machine state (frequency, load) scales both sides: up to +-20%.
        drift = rng.lognormal(0.0, 0.2, rounds)
        ref = drift * lognormal(51, rounds, sigma=0.01)
        cand = drift * lognormal(52, rounds, median_s=0.8 * MS, sigma=0.01)
        unpaired = speedup_interval(ref, cand, rng=0)
        paired = speedup_interval(ref, cand, rng=0, paired=True)
        assert paired.paired and not unpaired.paired
        assert paired.speedup == unpaired.speedup == pytest.approx(1.25, rel=0.1)
        assert paired.half_width_rel < unpaired.half_width_rel / 3
        assert paired.low <= paired.speedup <= paired.high

    def test_paired_with_unequal_lengths_resamples_independently(self) -> None:
        est = speedup_interval(lognormal(60, 30), lognormal(61, 29), rng=0, paired=True)
        assert est.paired is False
        assert est.low <= est.speedup <= est.high

    def test_single_samples_give_a_point_interval(self) -> None:
        est = speedup_interval([2e-3], [1e-3], rng=0)
        assert est.low == est.high == est.speedup == pytest.approx(2.0)
        assert est.half_width_rel == 0.0

    def test_long_runs_are_chunked_without_changing_the_answer_shape(self) -> None:
        est = speedup_interval(lognormal(70, 5000), lognormal(71, 5000), resamples=500, rng=0)
        assert est.low <= 1.0 <= est.high

    def test_is_vectorised(self) -> None:
        # CPU time, not wall time, so that other processes (pytest-xdist workers) do not count.
        # A loop over resamples in Python takes several times the limit.
        ref, cand = lognormal(80, 500), lognormal(81, 500)
        best = math.inf
        for _ in range(3):
            start = time.process_time()
            speedup_interval(ref, cand, resamples=2000, rng=0, paired=True)
            speedup_interval(ref, cand, resamples=2000, rng=0)
            best = min(best, (time.process_time() - start) / 2)
        assert best < 0.1

    @pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1])
    def test_rejects_bad_confidence(self, confidence: float) -> None:
        with pytest.raises(UsageError, match="confidence"):
            speedup_interval([1.0], [1.0], confidence=confidence)

    @pytest.mark.parametrize("resamples", [0, -5, 2.5, True])
    def test_rejects_bad_resamples(self, resamples: object) -> None:
        with pytest.raises(UsageError, match="resamples"):
            speedup_interval([1.0], [1.0], resamples=resamples)  # type: ignore[arg-type]

    def test_names_the_side_with_a_bad_sample(self) -> None:
        with pytest.raises(UsageError, match=r"candidate\[2\]"):
            speedup_interval([1.0, 1.0, 1.0], [1.0, 1.0, 0.0])


# --------------------------------------------------------------------------------------------
# StoppingRule
# --------------------------------------------------------------------------------------------


class TestStoppingRule:
    rule = StoppingRule(target_half_width=0.02, min_rounds=10, max_rounds=100, budget_s=5.0)

    def test_defaults(self) -> None:
        rule = StoppingRule()
        assert rule.target_half_width == st.DEFAULT_TARGET_HALF_WIDTH == 0.02
        assert rule.min_rounds == st.DEFAULT_MIN_ROUNDS
        assert rule.max_rounds == st.DEFAULT_MAX_ROUNDS
        assert rule.budget_s == st.DEFAULT_BUDGET_S

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
        assert STOP_REASONS == {"converged", "budget", "max-rounds", ""}

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

    def test_drives_a_loop_to_convergence(self) -> None:
        rule = StoppingRule(target_half_width=0.02, min_rounds=10, max_rounds=400, budget_s=60.0)
        ref = lognormal(90, 400, sigma=0.05)
        cand = lognormal(91, 400, median_s=0.5 * MS, sigma=0.05)
        for rounds in range(1, 401):
            est = speedup_interval(ref[:rounds], cand[:rounds], resamples=500, rng=0, paired=True)
            decision = rule.decide(est, rounds, elapsed_s=0.0)
            if decision.stop:
                break
        assert decision.reason == STOP_CONVERGED
        assert 10 <= rounds < 400
        assert est.low <= 2.0 <= est.high


# --------------------------------------------------------------------------------------------
# noise_diagnostic
# --------------------------------------------------------------------------------------------


class TestNoiseDiagnostic:
    @pytest.mark.parametrize("n", [4, 12, 30, 100, 1000])
    def test_quiet_on_clean_data(self, n: int) -> None:
        for seed in range(20):
            assert noise_diagnostic(lognormal(seed, n, sigma=0.02).tolist()) is None

    def test_quiet_below_the_minimum(self) -> None:
        assert noise_diagnostic([1e-3, 5e-3, 1e-3]) is None

    def test_high_spread(self) -> None:
        message = noise_diagnostic(lognormal(100, 50, sigma=0.4).tolist())
        assert message is not None and "IQR is" in message

    def test_upward_drift(self) -> None:
        x = lognormal(101, 60, sigma=0.01) * np.linspace(1.0, 1.3, 60)
        message = noise_diagnostic(x.tolist())
        assert message is not None and "drifted" in message and "slower" in message

    def test_downward_drift(self) -> None:
        x = lognormal(102, 60, sigma=0.01) * np.linspace(1.3, 1.0, 60)
        message = noise_diagnostic(x.tolist())
        assert message is not None and "faster" in message

    def test_shuffled_drift_is_not_drift(self) -> None:
        x = lognormal(101, 60, sigma=0.01) * np.linspace(1.0, 1.3, 60)
        np.random.default_rng(0).shuffle(x)
        assert "drifted" not in (noise_diagnostic(x.tolist()) or "")

    def test_noise_alone_is_not_reported_as_drift(self) -> None:
        hits = sum(
            "drifted" in (noise_diagnostic(lognormal(s, 30, sigma=0.3).tolist()) or "")
            for s in range(100)
        )
        assert hits <= 3

    def test_two_clusters(self) -> None:
        rng = np.random.default_rng(103)
        x = lognormal(104, 100, sigma=0.01) * np.where(rng.random(100) < 0.5, 1.0, 1.5)
        message = noise_diagnostic(x.tolist())
        assert message is not None and "two clusters" in message
        assert "1 ms" in message and "1.5 ms" in message

    def test_a_tail_of_preemptions_is_not_a_second_mode(self) -> None:
        x = lognormal(105, 100, sigma=0.01)
        x[::10] *= 3.0  # 10%: below the share a cluster needs
        assert "two clusters" not in (noise_diagnostic(x.tolist()) or "")

    def test_clock_ticks_are_not_modes(self) -> None:
        # A 5 us kernel under a 0.5 us clock: three distinct values, far apart relative to each.
        rng = np.random.default_rng(106)
        x = rng.choice([5.0e-6, 5.5e-6, 6.0e-6], size=100, p=[0.45, 0.1, 0.45])
        assert "two clusters" not in (noise_diagnostic(x.tolist()) or "")

    def test_summarize_carries_the_diagnostic(self) -> None:
        x = lognormal(107, 60, sigma=0.01) * np.linspace(1.0, 1.3, 60)
        assert noise_diagnostic(x.tolist()) in summarize(x.tolist()).note


# --------------------------------------------------------------------------------------------
# controller_cross_check
# --------------------------------------------------------------------------------------------


class TestControllerCrossCheck:
    def test_honest_worker_is_near_one(self) -> None:
        ratio = controller_cross_check([10 * MS] * 10, wall_s=0.105)
        assert ratio == pytest.approx(0.952, rel=1e-3)
        assert not implausibly_fast(ratio, wall_s=0.105)

    def test_overhead_floor_is_subtracted(self) -> None:
        assert controller_cross_check([0.01] * 5, wall_s=1.0, overhead_floor_s=0.95) == (
            pytest.approx(1.0)
        )

    def test_under_reporting_worker_is_flagged(self) -> None:
        # The worker claims 100 calls of 10 us while the controller waited half a second.
        ratio = controller_cross_check([10e-6] * 100, wall_s=0.5)
        assert ratio == pytest.approx(0.002)
        assert implausibly_fast(ratio, wall_s=0.5)
        assert implausibly_fast(ratio)

    def test_short_batches_are_not_judged(self) -> None:
        ratio = controller_cross_check([1e-6] * 10, wall_s=0.01)
        assert ratio < st.IMPLAUSIBLY_FAST_RATIO
        assert not implausibly_fast(ratio, wall_s=0.01)

    def test_threshold_edges(self) -> None:
        wall = 10 * st.MIN_CROSS_CHECK_WALL_S
        assert implausibly_fast(st.IMPLAUSIBLY_FAST_RATIO * 0.99, wall_s=wall)
        assert not implausibly_fast(st.IMPLAUSIBLY_FAST_RATIO, wall_s=wall)

    @pytest.mark.parametrize("bogus", [-1e-3, math.nan, math.inf])
    def test_nonsense_worker_times_are_implausible(self, bogus: float) -> None:
        ratio = controller_cross_check([1e-3, bogus], wall_s=0.01)
        assert math.isnan(ratio)
        assert implausibly_fast(ratio, wall_s=0.01)

    def test_floor_above_wall_cannot_judge(self) -> None:
        ratio = controller_cross_check([1e-3], wall_s=0.2, overhead_floor_s=0.3)
        assert ratio == math.inf
        assert not implausibly_fast(ratio, wall_s=0.2)

    @pytest.mark.parametrize(
        ("reported", "wall", "floor", "name"),
        [
            ([], 1.0, 0.0, "reported_s"),
            ([1e-3], 0.0, 0.0, "wall_s"),
            ([1e-3], math.nan, 0.0, "wall_s"),
            ([1e-3], 1.0, -0.1, "overhead_floor_s"),
        ],
    )
    def test_rejects_bad_controller_values(
        self, reported: list[float], wall: float, floor: float, name: str
    ) -> None:
        with pytest.raises(UsageError, match=name):
            controller_cross_check(reported, wall, floor)


# --------------------------------------------------------------------------------------------
# Packaging
# --------------------------------------------------------------------------------------------


def test_package_exports_the_public_api() -> None:
    import kernelproof.timing as timing

    for name in ("summarize", "speedup_interval", "StoppingRule", "noise_diagnostic",
                 "controller_cross_check", "implausibly_fast", "SpeedupEstimate", "StopDecision"):
        assert getattr(timing, name) is getattr(st, name)
    assert set(timing.__all__) <= set(st.__all__)


def test_imports_no_torch() -> None:
    code = "import sys, kernelproof.timing; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# -- round-level bootstrap ---------------------------------------------------------------------

from kernelproof.timing.statistics import round_speedup_interval  # noqa: E402


def _rounds(rng, n_rounds, per_round, scale, shared_noise):
    """Rounds whose samples share a per-round machine state (the correlation that makes a
    sample-level bootstrap too narrow)."""
    states = rng.lognormal(0.0, shared_noise, size=n_rounds)
    return [list(scale * state * rng.lognormal(0.0, 0.02, size=per_round)) for state in states]


def test_round_bootstrap_covers_one_for_identical_sides_under_round_noise():
    rng = np.random.default_rng(5)
    covered = 0
    for trial in range(40):
        shared = rng.lognormal(0.0, 0.1, size=20)
        ref = [list(1e-3 * s * rng.lognormal(0.0, 0.02, size=8)) for s in shared]
        # The candidate's round shares the reference's state only partly (run later).
        cand = [list(1e-3 * s * rng.lognormal(0.0, 0.05) * rng.lognormal(0.0, 0.02, size=8))
                for s in shared]
        estimate = round_speedup_interval(ref, cand, rng=trial)
        covered += estimate.low <= 1.0 <= estimate.high
    assert covered >= 36


def test_round_bootstrap_resolves_a_quarter_more_work():
    rng = np.random.default_rng(6)
    ref = _rounds(rng, 30, 8, 1e-3, 0.03)
    cand = _rounds(rng, 30, 8, 1.25e-3, 0.03)
    estimate = round_speedup_interval(ref, cand, rng=1)
    assert estimate.high < 1.0 and estimate.speedup == pytest.approx(0.8, rel=0.05)


def test_round_bootstrap_with_too_few_rounds_is_unbounded():
    estimate = round_speedup_interval([[1.0, 1.1]], [[1.0, 0.9]])
    assert estimate.low == 0.0 and estimate.high == float("inf")
