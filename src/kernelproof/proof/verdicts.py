"""Two proofs of one kernel side by side: each one's verdict and speed, and how they differ.

``recheck`` compares a verdict with its re-proof in a new environment; ``compare`` compares the
proofs of one candidate on several machines. Both judge a speed change the way ``compare`` of
two bench runs does: only intervals that do not overlap count, so timing noise never moves a
verdict on speed. Pure.
"""

from __future__ import annotations

import math

from kernelproof.schema.binding import report_fingerprint
from kernelproof.schema.environment_rule import BINDING_COMPONENTS
from kernelproof.schema.recheck import SpeedChange, VerdictChange, VerdictSnapshot
from kernelproof.schema.report import Report
from kernelproof.schema.verdict import Verdict

__all__ = ["speed_change", "verdict_change", "verdict_snapshot"]


def verdict_snapshot(report: Report, where: str) -> VerdictSnapshot:
    """``report``'s verdict, speedup at the default shape with its interval (finite ones only)
    and the candidate's fraction of the speed of light."""
    speedup = ci = sol = None
    timing = report.timing
    if timing is not None and math.isfinite(timing.speedup):
        speedup = timing.speedup
        low, high = timing.speedup_ci
        if math.isfinite(low) and math.isfinite(high) and high > 0:
            ci = (low, high)
    if report.roofline is not None:
        sol = report.roofline.sol_fraction.candidate
    return VerdictSnapshot(
        verdict=report.verdict,
        speedup=speedup,
        speedup_ci=ci,
        sol_fraction=sol,
        where=where,
        environment=report_fingerprint(report).digest(BINDING_COMPONENTS),
    )


def verdict_change(before: Verdict, after: Verdict) -> VerdictChange:
    """How the verdict moved: ``lost-verified`` is the one a CI gate fails on."""
    if before is after:
        return VerdictChange.UNCHANGED
    if before is Verdict.VERIFIED:
        return VerdictChange.LOST_VERIFIED
    if after is Verdict.VERIFIED:
        return VerdictChange.GAINED_VERIFIED
    return VerdictChange.CHANGED


def speed_change(before: VerdictSnapshot, after: VerdictSnapshot) -> SpeedChange:
    """Faster or slower only when the two intervals do not overlap."""
    if before.speedup_ci is None or after.speedup_ci is None:
        return SpeedChange.NOT_TIMED
    if after.speedup_ci[0] > before.speedup_ci[1]:
        return SpeedChange.FASTER
    if after.speedup_ci[1] < before.speedup_ci[0]:
        return SpeedChange.SLOWER
    return SpeedChange.WITHIN
