"""Floor-time arithmetic and the Roofline model it produces."""

from __future__ import annotations

import math

import pytest

from kernelproof.errors import UsageError
from kernelproof.roofline import WorkCount, floor_time, roofline
from kernelproof.schema.roofline import Ceilings, Roofline

CEILINGS = Ceilings(peak_flops=1e12, peak_bytes_per_s=1e11, source="test")


def test_memory_bound_floor_is_bytes_over_bandwidth() -> None:
    work = WorkCount(flops=1e6, bytes=1e9)
    assert floor_time(work, CEILINGS) == pytest.approx(1e-2)
    assert roofline(work, CEILINGS).bound == "memory"


def test_flops_never_bind_the_floor_and_are_reported_against_the_reference() -> None:
    work = WorkCount(flops=5e12, bytes=1e6)  # compute 5 s, memory 10 us
    assert floor_time(work, CEILINGS) == pytest.approx(1e-5)
    result = roofline(work, CEILINGS, candidate_s=1e-3)
    assert result.bound == "compute"
    assert result.sol_fraction.candidate == pytest.approx(1e-2)  # no suspicion from FLOPs
    algorithm = result.reference_algorithm
    assert algorithm is not None and algorithm.label == "against the reference's algorithm"
    assert algorithm.floor_s == pytest.approx(5.0)
    assert algorithm.sol_fraction.candidate == pytest.approx(5e3)  # less work than reference


def test_reference_algorithm_reads_all_inputs() -> None:
    work = WorkCount(flops=0.0, bytes=1e6)  # a gather: outputs and ids only
    result = roofline(work, CEILINGS, reference_bytes=1e9)  # the reference reads the table
    assert result.floor_s == pytest.approx(1e-5)
    assert result.reference_algorithm is not None
    assert result.reference_algorithm.floor_s == pytest.approx(1e-2)
    assert result.reference_algorithm.bytes == 1e9


def test_sol_fraction_is_floor_over_measured() -> None:
    work = WorkCount(flops=2e9, bytes=1e8)  # compute 2 ms (not binding), memory 1 ms
    result = roofline(work, CEILINGS, reference_s=4e-3, candidate_s=5e-4)
    assert result.floor_s == pytest.approx(1e-3)
    assert result.sol_fraction.reference == pytest.approx(0.25)
    assert result.sol_fraction.candidate == pytest.approx(2.0)  # faster than light: a finding
    assert result.flops == 2e9 and result.bytes == 1e8
    assert result.ceilings == CEILINGS
    assert Roofline.model_validate_json(result.model_dump_json()) == result


def test_untimed_implementations_have_no_fraction() -> None:
    result = roofline(WorkCount(flops=1.0, bytes=1.0), CEILINGS)
    assert result.sol_fraction.reference is None
    assert result.sol_fraction.candidate is None


def test_no_work_has_a_zero_floor() -> None:
    result = roofline(WorkCount(flops=0.0, bytes=0.0), CEILINGS, candidate_s=1e-6)
    assert result.floor_s == 0.0
    assert result.sol_fraction.candidate == 0.0


@pytest.mark.parametrize("measured", [0.0, -1.0, math.nan, math.inf])
def test_impossible_measured_times_are_refused(measured: float) -> None:
    with pytest.raises(UsageError, match="positive finite"):
        roofline(WorkCount(flops=1.0, bytes=1.0), CEILINGS, candidate_s=measured)


def test_zero_ceiling_is_refused_with_its_source() -> None:
    broken = Ceilings(peak_flops=0.0, peak_bytes_per_s=1e11, source="calibration:abc")
    with pytest.raises(UsageError, match="calibration:abc"):
        floor_time(WorkCount(flops=1.0, bytes=1.0), broken)
