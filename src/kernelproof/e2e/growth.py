"""The soak's memory rule, one for every kind of memory: a worker's resident memory (read by
the controller from /proc) and, on CUDA, its device memory (allocated and reserved, as the
worker reports them after each step).

Growth is the least-squares slope over the second half of the steps (the first fill caches
and pools), the candidate's beyond the reference's. Growth that would exhaust the memory
within :data:`FAILURE_HORIZON_STEPS` is ``broken``; beyond that horizon, a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy

from kernelproof.schema import Finding, FindingCheck, Severity, Verdict

#: Growth of the candidate's memory beyond the reference's, over the second half of a soak,
#: below which it is noise: glibc arenas and torch's allocator move resident memory by a few
#: MiB between steps of an honest loop (the CUDA caching allocator's blocks are of that order).
SIGNIFICANT_GROWTH_BYTES = 4 << 20

#: A leak that would exhaust the memory within this many steps is ``broken``: a decode service
#: makes about 10^7 steps a day (100 tokens a second), so a leak that kills it within that
#: horizon kills it in production.
FAILURE_HORIZON_STEPS = 10_000_000

#: Steps below which no slope is fitted.
MIN_STEPS = 4


@dataclass(frozen=True)
class Growth:
    """One kind of memory over a soak, judged."""

    slopes: dict[str, float]
    """Bytes per step over the second half: ``candidate``, ``reference``, ``excess``."""

    limit_bytes: int
    """What it runs out at (the machine's memory, the device's)."""

    last_bytes: int
    """The candidate's figure at the last step."""

    projected_failure_step: int | None
    """The step at which the excess would exhaust ``limit_bytes``; None when not
    significant."""


def slope(values: list[int]) -> float:
    """Bytes per step over the second half (the first steps fill caches and pools)."""
    half = values[len(values) // 2 :]
    if len(half) < 2:
        return 0.0
    return float(numpy.polyfit(numpy.arange(len(half)), numpy.array(half, dtype=float), 1)[0])


def judge_growth(candidate: list[int], reference: list[int], limit_bytes: int) -> Growth | None:
    """The growth of ``candidate`` beyond ``reference`` (per-step figures) against
    ``limit_bytes``; None with fewer than :data:`MIN_STEPS` steps."""
    steps = min(len(candidate), len(reference))
    if steps < MIN_STEPS:
        return None
    slopes = {"candidate": slope(candidate[:steps]), "reference": slope(reference[:steps])}
    slopes["excess"] = slopes["candidate"] - slopes["reference"]
    half = steps - steps // 2
    projected = None
    if slopes["excess"] * half >= SIGNIFICANT_GROWTH_BYTES:
        left = max(limit_bytes - candidate[steps - 1], 0)
        projected = steps + int(left / slopes["excess"])
    return Growth(
        slopes=slopes,
        limit_bytes=limit_bytes,
        last_bytes=candidate[steps - 1],
        projected_failure_step=projected,
    )


def growth_finding(growth: Growth, memory: str, steps: int) -> Finding | None:
    """``soak-memory``: ``broken`` when ``memory`` (``resident memory``, ``CUDA allocated
    memory``...) would run out within the horizon, a warning beyond it, None without
    significant growth."""
    if growth.projected_failure_step is None:
        return None
    slopes = growth.slopes
    evidence = {
        "memory": memory,
        "excess_bytes_per_step": slopes["excess"],
        "bytes_last": growth.last_bytes,
        "memory_limit_bytes": growth.limit_bytes,
        "projected_failure_step": growth.projected_failure_step,
    }
    message = (
        f"the candidate's {memory} grows by {slopes['excess'] / 1024:.0f} KiB per step "
        f"beyond the reference's ({slopes['candidate'] / 1024:.0f} against "
        f"{slopes['reference'] / 1024:.0f} KiB) over {steps} soak steps; at that rate "
        f"it exhausts {growth.limit_bytes / 2**30:.0f} GiB at step "
        f"{growth.projected_failure_step:,}"
    )
    if growth.projected_failure_step <= FAILURE_HORIZON_STEPS:
        return Finding(
            check=FindingCheck.SOAK_MEMORY,
            severity=Severity.FAIL,
            forces=Verdict.BROKEN,
            message=message,
            evidence=evidence,
        )
    return Finding(
        check=FindingCheck.SOAK_MEMORY,
        severity=Severity.WARN,
        message=message + f", beyond the {FAILURE_HORIZON_STEPS:,}-step horizon",
        evidence=evidence,
    )
