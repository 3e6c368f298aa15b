"""The floor time of a computation on a machine, and how close measured times come to it.

The floor is the roofline's speed of light: a kernel cannot finish before it has done its FLOPs at
peak throughput, nor before it has moved its compulsory bytes at peak bandwidth, so the floor is
the larger of the two times. A measured time below the floor is a finding: either the timing is
wrong or the kernel skipped work.
"""

from __future__ import annotations

import math

from kernelproof.errors import UsageError
from kernelproof.roofline.work import WorkCount
from kernelproof.schema.report import Ceilings, Roofline, SolFraction

__all__ = ["floor_time", "roofline", "sol_fraction"]


def _terms(work: WorkCount, ceilings: Ceilings) -> tuple[float, float]:
    """(compute time, memory time) at the ceilings."""
    peaks = {"peak_flops": ceilings.peak_flops, "peak_bytes_per_s": ceilings.peak_bytes_per_s}
    for label, value in peaks.items():
        if not (math.isfinite(value) and value > 0):
            raise UsageError(
                f"ceilings.{label} must be a positive finite number, got {value!r} "
                f"(from {ceilings.source!r}); recalibrate with calibrate(force=True)"
            )
    return work.flops / ceilings.peak_flops, work.bytes / ceilings.peak_bytes_per_s


def floor_time(work: WorkCount, ceilings: Ceilings) -> float:
    """Seconds below which no implementation of ``work`` can run on a machine with ``ceilings``.

    ``max(flops / peak_flops, bytes / peak_bytes_per_s)``: the two resources overlap at best, so
    the slower of the two bounds the whole.
    """
    return max(_terms(work, ceilings))


def sol_fraction(floor_s: float, measured_s: float | None) -> float | None:
    """Fraction of the speed of light a measured time reaches: ``floor_s / measured_s``.

    1.0 is the roofline; above 1.0 the measurement beat the floor. ``None`` when nothing was
    measured.
    """
    if measured_s is None:
        return None
    if not (math.isfinite(measured_s) and measured_s > 0):
        raise UsageError(
            f"a measured time must be a positive finite number of seconds, got {measured_s!r}; "
            "pass None when the implementation was not timed"
        )
    return floor_s / measured_s


def roofline(
    work: WorkCount,
    ceilings: Ceilings,
    reference_s: float | None = None,
    candidate_s: float | None = None,
) -> Roofline:
    """The speed-of-light analysis of one shape: floor, fraction reached by each time, bound.

    ``bound`` is ``"compute"`` when the FLOP term of the floor dominates and ``"memory"``
    otherwise (ties, including no work at all, read as memory-bound).
    """
    compute_s, memory_s = _terms(work, ceilings)
    floor_s = max(compute_s, memory_s)
    return Roofline(
        flops=work.flops,
        bytes=work.bytes,
        floor_s=floor_s,
        sol_fraction=SolFraction(
            reference=sol_fraction(floor_s, reference_s),
            candidate=sol_fraction(floor_s, candidate_s),
        ),
        ceilings=ceilings,
        bound="compute" if compute_s > memory_s else "memory",
    )
