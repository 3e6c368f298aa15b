"""The timing phase end to end (slow: each test runs verifications with timing)."""

from pathlib import Path

import pytest

from kernelproof.schema import Verdict

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
EXAMPLES = HERE.parents[1] / "examples"
FAST_TIMING = {
    "timing": True,
    "budget_s": 3.0,
    "compile_baseline": False,
    "seeds": 2,
    "value_variants": False,
    "layout_variants": False,
}


def test_verified_candidate_gets_a_full_timing_section(verified):
    report = verified(EXAMPLES / "softmax" / "correct.py", **FAST_TIMING)
    assert report.verdict is Verdict.VERIFIED, report.summary
    timing = report.timing
    assert timing is not None and timing.mode == "cold" and timing.threads == 1
    assert timing.cache_flush.startswith("data:"), timing.cache_flush
    assert len(timing.candidate.samples) >= 10 and len(timing.reference.samples) >= 10
    low, high = timing.speedup_ci
    assert low <= timing.speedup <= high
    assert timing.baselines.eager == pytest.approx(timing.speedup)
    assert timing.verified_timed_calls >= 3
    assert len(timing.per_shape) >= 2  # the default plus at least one other shape
    assert set(timing.speedup_range) == {"min", "median", "max"}
    assert report.roofline is not None and report.roofline.floor_s > 0
    assert report.roofline.ceilings.source.startswith("calibration:")
    assert not any(f.check == "below-floor" for f in report.findings)


def test_torch_compile_baseline_is_reported(verified):
    report = verified(
        EXAMPLES / "softmax" / "correct.py",
        **{**FAST_TIMING, "compile_baseline": True, "timing_shapes": False},
    )
    baselines = report.timing.baselines
    assert (baselines.torch_compile is not None) != (baselines.torch_compile_error is not None)


def test_the_full_cache_flush_is_used_on_request(verified):
    report = verified(
        EXAMPLES / "softmax" / "correct.py",
        **{**FAST_TIMING, "budget_s": 1.0, "cache_flush": "full", "timing_shapes": False},
    )
    assert report.timing.cache_flush.startswith("full:"), report.timing.cache_flush


def test_a_disabled_cache_flush_is_caught(verified):
    report = verified(HERE / "candidates" / "flush_disabled.py", **FAST_TIMING)
    assert report.verdict is Verdict.SUSPECT, report.summary
    tampering = [f for f in report.findings if f.check == "tampering"]
    assert tampering and "_line_evictor" in str(tampering[0].evidence), report.findings


def test_a_patched_harness_clock_is_caught(verified):
    report = verified(HERE / "candidates" / "clock_patch.py", **FAST_TIMING)
    assert report.verdict is Verdict.SUSPECT, report.summary
    checks = {f.check for f in report.findings}
    assert "tampering" in checks or "timer-cross-check" in checks


def test_evaluator_mode_is_caught_by_verifying_timed_outputs(verified):
    report = verified(HERE / "candidates" / "evaluator_mode.py", **FAST_TIMING)
    assert report.verdict is Verdict.INCORRECT, report.summary
    assert any(f.check == "timed-output" for f in report.findings)


def test_no_timing_leaves_the_section_null(verified):
    report = verified(EXAMPLES / "softmax" / "correct.py", timing=False, seeds=2)
    assert report.timing is None and report.roofline is None
