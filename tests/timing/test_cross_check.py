"""The controller's clock against the worker's."""

from __future__ import annotations

import math

import pytest

from kernelproof.errors import UsageError
from kernelproof.timing import cross_check
from kernelproof.timing.cross_check import controller_cross_check, implausibly_fast

MS = 1e-3


class TestControllerCrossCheck:
    def test_honest_worker_is_near_one(self) -> None:
        ratio = controller_cross_check([10 * MS] * 10, wall_s=0.105)
        assert ratio == pytest.approx(0.952, rel=1e-3)
        assert not implausibly_fast(ratio, wall_s=0.105)

    def test_under_reporting_worker_is_flagged(self) -> None:
        # The worker claims 100 calls of 10 us while the controller waited half a second.
        ratio = controller_cross_check([10e-6] * 100, wall_s=0.5)
        assert ratio == pytest.approx(0.002)
        assert implausibly_fast(ratio, wall_s=0.5)
        assert implausibly_fast(ratio)

    def test_short_batches_are_not_judged(self) -> None:
        ratio = controller_cross_check([1e-6] * 10, wall_s=0.01)
        assert ratio < cross_check.IMPLAUSIBLY_FAST_RATIO
        assert not implausibly_fast(ratio, wall_s=0.01)

    def test_threshold_edges(self) -> None:
        wall = 10 * cross_check.MIN_CROSS_CHECK_WALL_S
        assert implausibly_fast(cross_check.IMPLAUSIBLY_FAST_RATIO * 0.99, wall_s=wall)
        assert not implausibly_fast(cross_check.IMPLAUSIBLY_FAST_RATIO, wall_s=wall)

    @pytest.mark.parametrize("bogus", [-1e-3, math.nan, math.inf])
    def test_nonsense_worker_times_are_implausible(self, bogus: float) -> None:
        ratio = controller_cross_check([1e-3, bogus], wall_s=0.01)
        assert math.isnan(ratio)
        assert implausibly_fast(ratio, wall_s=0.01)

    @pytest.mark.parametrize(
        ("reported", "wall", "name"),
        [
            ([], 1.0, "reported_s"),
            ([1e-3], 0.0, "wall_s"),
            ([1e-3], math.nan, "wall_s"),
        ],
    )
    def test_rejects_bad_controller_values(
        self, reported: list[float], wall: float, name: str
    ) -> None:
        with pytest.raises(UsageError, match=name):
            controller_cross_check(reported, wall)
