"""Floor-time arithmetic and the Roofline model it produces."""

from __future__ import annotations

import math

import pytest

from kernelproof.errors import UsageError
from kernelproof.roofline import WorkCount, floor_time, roofline
from kernelproof.schema.report import Ceilings, Roofline

CEILINGS = Ceilings(peak_flops=1e12, peak_bytes_per_s=1e11, source="test")


def test_memory_bound_floor_is_bytes_over_bandwidth() -> None:
    work = WorkCount(flops=1e6, bytes=1e9)
    assert floor_time(work, CEILINGS) == pytest.approx(1e-2)
    assert roofline(work, CEILINGS).bound == "memory"


def test_compute_bound_floor_is_flops_over_peak() -> None:
    work = WorkCount(flops=5e12, bytes=1e6)
    assert floor_time(work, CEILINGS) == pytest.approx(5.0)
    assert roofline(work, CEILINGS).bound == "compute"


def test_sol_fraction_is_floor_over_measured() -> None:
    work = WorkCount(flops=2e9, bytes=1e8)  # compute 2 ms, memory 1 ms
    result = roofline(work, CEILINGS, reference_s=4e-3, candidate_s=1e-3)
    assert result.floor_s == pytest.approx(2e-3)
    assert result.sol_fraction.reference == pytest.approx(0.5)
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
