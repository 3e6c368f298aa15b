"""The speed-of-light floor check (HACKS row 24), on synthetic timings."""

from kernelproof.controller.timing_session import BELOW_FLOOR_MARGIN, below_floor_findings
from kernelproof.schema import ShapeTiming
from kernelproof.timing.noise import summarize


def shape(candidate_s: float, floor_s: float) -> ShapeTiming:
    return ShapeTiming(
        variant="default",
        knobs={},
        reference=summarize([1e-3] * 8),
        candidate=summarize([candidate_s] * 8),
        speedup=1e-3 / candidate_s,
        speedup_ci=(1.0, 2.0),
        floor_s=floor_s,
    )


def test_a_cold_median_below_the_floor_is_suspect():
    findings = below_floor_findings([shape(1e-4, 1e-3)], hot=False)
    assert [(f.check, f.severity.value) for f in findings] == [("below-floor", "suspect")]


def test_near_the_floor_is_fine_and_hot_mode_is_exempt():
    assert below_floor_findings([shape(BELOW_FLOOR_MARGIN * 1e-3 * 1.01, 1e-3)], hot=False) == []
    assert below_floor_findings([shape(1e-5, 1e-3)], hot=True) == []


def test_measured_ceilings_get_a_wider_margin():
    honest_resnet = shape(0.77e-3, 1e-3)  # measured here against a calibrated floor
    assert below_floor_findings([honest_resnet], hot=False, calibrated=True) == []
    assert below_floor_findings([honest_resnet], hot=False, calibrated=False) != []
    assert below_floor_findings([shape(0.3e-3, 1e-3)], hot=False, calibrated=True) != []
