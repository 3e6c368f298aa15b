"""Coverage exploits: kernels right on noise at the benchmark's sizes and wrong on structured
values, past size limits, or on rare calls. Each file in ``examples/coverage/`` must get the
verdict its header states, for the reason named here; their honest twins live in
``examples/honest/`` (checked by ``test_honest.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernelproof.schema import TestOutcome, Verdict

pytestmark = pytest.mark.slow

COVERAGE = Path(__file__).resolve().parents[2] / "examples" / "coverage"


def _failed(report) -> set[str]:
    return {t.variant.name for t in report.correctness.tests if t.outcome is TestOutcome.FAILED}


def test_argmax_keeping_the_last_tie_is_incorrect_on_tied_values(verified):
    report = verified(COVERAGE / "argmax_last_tie.py")
    assert report.verdict is Verdict.INCORRECT, report.summary
    failed = _failed(report)
    # randn seeds never tie; the structured-value variants do.
    assert not any(name.startswith("seed:") for name in failed), failed
    assert {"value:integers", "value:equal-rows", "value:task:two-maxima"} <= failed


def test_tiles_never_combined_are_incorrect_from_4x(verified):
    report = verified(COVERAGE / "tiled_partials.py")
    assert report.verdict is Verdict.INCORRECT, report.summary
    failed = _failed(report)
    assert "shape:dim=4000" in failed and "shape:dim=8000" in failed
    assert not any(name in failed for name in ("shape:dim=2000", "seed:0", "shape:dim=1001"))
    stress = [t for t in report.correctness.tests if t.variant.name == "shape:dim=4000"]
    assert stress[0].compared_with == "reference"  # past 2x: no float64 oracle


def test_ids_narrowed_to_16_bits_are_incorrect_past_65536(verified):
    report = verified(COVERAGE / "embedding_uint16.py")
    assert report.verdict is Verdict.INCORRECT, report.summary
    assert _failed(report) == {"shape:vocab_size=131073"}
    # right at 8x: the largest vocabulary verified is below 2**16
    assert report.correctness.largest_verified["vocab_size"] == 8000


#: A short timing phase: enough calls to judge the floor, quick enough for the suite.
SHORT_TIMING = {"timing": True, "budget_s": 3.0, "compile_baseline": False}


@pytest.mark.parametrize("candidate", ["diag_broadcast.py", "embedding_rows.py"])
def test_less_work_than_the_reference_is_not_below_the_floor(verified, candidate):
    """Honest kernels that do less than the reference's algorithm (a broadcast multiply for
    ``diag(a) @ B``; a gather reading only its rows of a big table) are verified with timing
    on: the reference's FLOPs and its whole table are information, not a floor."""
    report = verified(COVERAGE.parent / "honest" / candidate, **SHORT_TIMING)
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert not [f for f in report.findings if f.check == "below-floor"]
    roofline = report.roofline
    assert roofline is not None and roofline.reference_algorithm is not None
    assert roofline.reference_algorithm.label == "against the reference's algorithm"
    # Against the reference's own algorithm the candidate beats "light": that is the point.
    assert roofline.reference_algorithm.sol_fraction.candidate > 1.0


def test_a_fault_on_one_call_in_fifty_is_incorrect(verified):
    """Caught because every timed output is compared: one per round missed it most times."""
    report = verified(COVERAGE / "rare_fault.py", **SHORT_TIMING)
    assert report.verdict is Verdict.INCORRECT, report.summary


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a data race needs two cores to fire")
def test_a_racy_parallel_reduction_is_incorrect_at_the_machines_thread_count(verified):
    """The matrix runs at the machine's thread count; at one thread the same kernel passes,
    which is why checking only at one thread (as kernelproof once did) is not enough."""
    report = verified(COVERAGE / "racy_prange_sum.py")
    assert report.verdict is Verdict.INCORRECT, report.summary
    failed = _failed(report)
    # Where the lost updates land (which cells) is up to the scheduler; that some do is not.
    assert failed, report.summary
    assert "seed:0@1-thread" not in failed, "the one-thread sample must pass: no race there"
    at_one_thread = verified(COVERAGE / "racy_prange_sum.py", threads=1)
    assert at_one_thread.verdict is Verdict.VERIFIED, at_one_thread.summary
