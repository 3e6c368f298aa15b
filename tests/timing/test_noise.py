"""The summary of one side's samples, and the signs of an unstable machine."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from kernelproof.errors import KernelproofError, UsageError
from kernelproof.schema.timing import TimingStats
from kernelproof.timing import bootstrap, cross_check, noise, stopping
from kernelproof.timing.noise import noise_diagnostic, summarize
from kernelproof.units import seconds


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

    def test_clean_data_has_no_note(self, lognormal) -> None:
        stats = summarize(lognormal(0, 200, sigma=0.01).tolist())
        assert stats.note == ""
        assert stats.outliers <= 4

    def test_many_outliers_are_noted(self, lognormal) -> None:
        x = lognormal(1, 100, sigma=0.01)
        x[::8] *= 5.0  # 13 preempted calls
        stats = summarize(x.tolist())
        assert stats.outliers == 13
        assert "13% of samples are outliers" in stats.note

    def test_few_outliers_are_counted_but_not_noted(self, lognormal) -> None:
        x = lognormal(1, 100, sigma=0.01)
        x[::25] *= 5.0  # 4 preempted calls, plus the odd natural outlier
        stats = summarize(x.tolist())
        assert 4 <= stats.outliers <= noise.OUTLIER_FRACTION_WARN * x.size
        assert "outliers" not in stats.note

    def test_wide_spread_is_noted(self, lognormal) -> None:
        stats = summarize(lognormal(2, 60, sigma=0.4).tolist())
        assert "IQR is" in stats.note and "of the median" in stats.note

    def test_too_few_samples_are_noted(self) -> None:
        assert "Only 2 sample(s)" in summarize([1e-3, 1.1e-3]).note

    def test_round_trips_through_json(self, lognormal) -> None:
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


class TestNoiseDiagnostic:
    @pytest.mark.parametrize("n", [4, 12, 30, 100, 1000])
    def test_quiet_on_clean_data(self, lognormal, n: int) -> None:
        for seed in range(20):
            assert noise_diagnostic(lognormal(seed, n, sigma=0.02).tolist()) is None

    def test_quiet_below_the_minimum(self) -> None:
        assert noise_diagnostic([1e-3, 5e-3, 1e-3]) is None

    def test_high_spread(self, lognormal) -> None:
        message = noise_diagnostic(lognormal(100, 50, sigma=0.4).tolist())
        assert message is not None and "IQR is" in message

    def test_upward_drift(self, lognormal) -> None:
        x = lognormal(101, 60, sigma=0.01) * np.linspace(1.0, 1.3, 60)
        message = noise_diagnostic(x.tolist())
        assert message is not None and "drifted" in message and "slower" in message

    def test_downward_drift(self, lognormal) -> None:
        x = lognormal(102, 60, sigma=0.01) * np.linspace(1.3, 1.0, 60)
        message = noise_diagnostic(x.tolist())
        assert message is not None and "faster" in message

    def test_shuffled_drift_is_not_drift(self, lognormal) -> None:
        x = lognormal(101, 60, sigma=0.01) * np.linspace(1.0, 1.3, 60)
        np.random.default_rng(0).shuffle(x)
        assert "drifted" not in (noise_diagnostic(x.tolist()) or "")

    def test_noise_alone_is_not_reported_as_drift(self, lognormal) -> None:
        hits = sum(
            "drifted" in (noise_diagnostic(lognormal(s, 30, sigma=0.3).tolist()) or "")
            for s in range(100)
        )
        assert hits <= 3

    def test_two_clusters(self, lognormal) -> None:
        rng = np.random.default_rng(103)
        x = lognormal(104, 100, sigma=0.01) * np.where(rng.random(100) < 0.5, 1.0, 1.5)
        message = noise_diagnostic(x.tolist())
        assert message is not None and "two clusters" in message
        assert "1 ms" in message and "1.5 ms" in message

    def test_a_tail_of_preemptions_is_not_a_second_mode(self, lognormal) -> None:
        x = lognormal(105, 100, sigma=0.01)
        x[::10] *= 3.0  # 10%: below the share a cluster needs
        assert "two clusters" not in (noise_diagnostic(x.tolist()) or "")

    def test_clock_ticks_are_not_modes(self) -> None:
        # A 5 us kernel under a 0.5 us clock: three distinct values, far apart relative to each.
        rng = np.random.default_rng(106)
        x = rng.choice([5.0e-6, 5.5e-6, 6.0e-6], size=100, p=[0.45, 0.1, 0.45])
        assert "two clusters" not in (noise_diagnostic(x.tolist()) or "")

    def test_summarize_carries_the_diagnostic(self, lognormal) -> None:
        x = lognormal(107, 60, sigma=0.01) * np.linspace(1.0, 1.3, 60)
        assert noise_diagnostic(x.tolist()) in summarize(x.tolist()).note


def test_the_two_modes_note_reads_durations_like_the_report():
    x = np.concatenate([np.full(30, 1e-6), np.full(30, 2e-6)]) * np.linspace(1, 1.01, 60)
    message = noise_diagnostic(x.tolist()) or ""
    assert "\u00b5s" in message and " us " not in message


def test_a_duration_is_rounded_before_its_unit_is_chosen():
    assert seconds(0.9999e-3) == "1 ms"
    assert seconds(1.5e-6) == "1.5 \u00b5s"
    assert seconds(None) == "n/a"


def test_package_exports_the_public_api() -> None:
    import kernelproof.timing as timing

    modules = (bootstrap, cross_check, noise, stopping)
    for name in timing.__all__:
        assert any(getattr(module, name, None) is getattr(timing, name) for module in modules)
    assert not hasattr(timing, "speedup_interval")


def test_imports_no_torch() -> None:
    code = "import sys, kernelproof.timing; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
