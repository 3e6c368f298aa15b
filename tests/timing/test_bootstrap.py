"""The speedup's confidence interval over interleaved rounds."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproof.timing.bootstrap import round_speedup_interval


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
        cand = [
            list(1e-3 * s * rng.lognormal(0.0, 0.05) * rng.lognormal(0.0, 0.02, size=8))
            for s in shared
        ]
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
