"""The floor time of a computation on a machine, and how close measured times come to it.

Only a limit that binds *every* algorithm for the task may make a time suspect: the compulsory
bytes (outputs written, the inputs every algorithm must read) at the best bandwidth. That is
:func:`floor_time`, and a measured time below it is a finding: the timing is wrong or the kernel
skipped work. The reference's FLOPs bind only the reference's own algorithm (a candidate may
honestly do less: ``diag(a) @ B`` as a broadcast multiply), so the larger of its FLOPs at peak
and all its input bytes at bandwidth is reported as information, "against the reference's
algorithm" (:func:`reference_algorithm_floor`).
"""

from __future__ import annotations

import math

from kernelproof.errors import UsageError
from kernelproof.roofline.work import WorkCount
from kernelproof.schema.roofline import Ceilings, ReferenceAlgorithm, Roofline, SolFraction

__all__ = ["floor_time", "reference_algorithm_floor", "roofline", "sol_fraction"]

#: How the report labels the FLOP-based figures: they describe one algorithm, not a limit.
REFERENCE_ALGORITHM_LABEL = "against the reference's algorithm"


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
    """Seconds below which no implementation of ``work`` can run on a machine with ``ceilings``:
    its compulsory bytes (``work.bytes``) at peak bandwidth. FLOPs are left out: they count the
    reference's algorithm, and another may need fewer."""
    return _terms(work, ceilings)[1]


def reference_algorithm_floor(
    work: WorkCount, ceilings: Ceilings, reference_bytes: float | None = None
) -> float:
    """The floor of the reference's own algorithm, for information: ``max(flops / peak_flops,
    reference_bytes / peak_bytes_per_s)``, with all of its inputs read (``work.bytes`` when
    ``reference_bytes`` is not known)."""
    compute_s, memory_s = _terms(work, ceilings)
    if reference_bytes is not None:
        memory_s = max(memory_s, reference_bytes / ceilings.peak_bytes_per_s)
    return max(compute_s, memory_s)


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
    reference_bytes: float | None = None,
) -> Roofline:
    """The speed-of-light analysis of one shape: the binding floor (compulsory bytes), the
    fraction of it each time reaches, and the same against the reference's algorithm (its
    FLOPs and ``reference_bytes``, all its inputs) as information.

    ``bound`` says which term sets the reference algorithm's floor: ``"compute"`` when its
    FLOPs dominate, ``"memory"`` otherwise (ties, including no work at all).
    """
    compute_s, memory_s = _terms(work, ceilings)
    floor_s = memory_s
    reference_memory_s = (reference_bytes or 0.0) / ceilings.peak_bytes_per_s
    algorithm_s = reference_algorithm_floor(work, ceilings, reference_bytes)
    return Roofline(
        flops=work.flops,
        bytes=work.bytes,
        floor_s=floor_s,
        sol_fraction=SolFraction(
            reference=sol_fraction(floor_s, reference_s),
            candidate=sol_fraction(floor_s, candidate_s),
        ),
        ceilings=ceilings,
        bound="compute" if compute_s > max(memory_s, reference_memory_s) else "memory",
        reference_algorithm=ReferenceAlgorithm(
            label=REFERENCE_ALGORITHM_LABEL,
            flops=work.flops,
            bytes=reference_bytes if reference_bytes is not None else work.bytes,
            floor_s=algorithm_s,
            sol_fraction=SolFraction(
                reference=sol_fraction(algorithm_s, reference_s),
                candidate=sol_fraction(algorithm_s, candidate_s),
            ),
        ),
    )
