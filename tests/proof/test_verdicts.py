"""Two proofs side by side: a verdict change, and a speed change only beyond both intervals."""

from __future__ import annotations

import pytest

from kernelproof.proof.verdicts import speed_change, verdict_change
from kernelproof.schema.recheck import SpeedChange, VerdictChange, VerdictSnapshot
from kernelproof.schema.verdict import Verdict


def _snap(ci: tuple[float, float] | None) -> VerdictSnapshot:
    return VerdictSnapshot(
        verdict=Verdict.VERIFIED,
        speedup=None if ci is None else sum(ci) / 2,
        speedup_ci=ci,
        where="r.json",
    )


@pytest.mark.parametrize(
    "before, after, change",
    [
        ((1.9, 2.1), (2.3, 2.5), SpeedChange.FASTER),
        ((1.9, 2.1), (1.2, 1.4), SpeedChange.SLOWER),
        ((1.9, 2.1), (2.0, 2.6), SpeedChange.WITHIN),
        ((1.9, 2.1), None, SpeedChange.NOT_TIMED),
    ],
)
def test_a_speed_change_counts_only_beyond_both_intervals(before, after, change) -> None:
    assert speed_change(_snap(before), _snap(after)) is change


@pytest.mark.parametrize(
    "before, after, change",
    [
        (Verdict.VERIFIED, Verdict.VERIFIED, VerdictChange.UNCHANGED),
        (Verdict.VERIFIED, Verdict.INCORRECT, VerdictChange.LOST_VERIFIED),
        (Verdict.BROKEN, Verdict.VERIFIED, VerdictChange.GAINED_VERIFIED),
        (Verdict.INCORRECT, Verdict.BROKEN, VerdictChange.CHANGED),
    ],
)
def test_the_verdict_change_a_ci_gate_fails_on(before, after, change) -> None:
    assert verdict_change(before, after) is change
