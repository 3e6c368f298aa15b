"""The speedup's spread between fresh worker pairs, and intervals widened by it.

The rounds of one timing phase all run in the same two worker processes. Each process has its
own allocator state, memory layout and code placement, which bias its times by a few percent
for its whole life: identical code in the two workers read 1.213x [1.187, 1.236] at one shape.
No number of rounds inside one pair removes that bias, so an interval built from rounds alone
is overconfident.

The spread is measured once per machine and thread count (identical code timed in several
fresh worker pairs: :mod:`kernelproof.controller.spread_measurement`), cached beside the
calibration and pinned like it, and added to every speedup interval in quadrature on the log
scale. The report states it (``timing.process_spread``).

The bias is relatively larger for short calls: a few microseconds of a call are as exposed to
one process's code placement as the whole of it, where a millisecond call is dominated by its
memory traffic (measured here: identical Sum calls of 3x5x7 read 1.141 [1.086, 1.200] with a
spread measured on 10 us and 5 ms calls). So it is measured at several call times and the
spread applied to a shape is the one at its call time.
"""

from __future__ import annotations

import math
import os
import statistics
from pathlib import Path

from pydantic import BaseModel, Field

from kernelproof.config import cache_dir
from kernelproof.pins import pin, trusted_bytes

#: Two-sided 95% normal quantile: the intervals are 95% intervals.
Z_95 = 1.959963984540054

#: The spread used when it cannot be measured (no cached record, measuring failed): a few
#: percent, the size of the biases seen between worker pairs on the 2-vCPU machine.
FALLBACK_SPREAD = 0.03


class ProbeSpread(BaseModel):
    """The between-pair spread measured on one probe task."""

    call_s: float
    """The probe's median call time (the reference's), seconds."""

    spread: float
    """Standard deviation of ln(speedup) between fresh worker pairs, beyond what each pair's
    own interval explains."""

    within: float | None = None
    """The mean standard deviation (ln scale) of the pairs' own intervals."""


class ProcessSpread(BaseModel):
    """One machine's between-pair spread of log speedups on identical code."""

    fingerprint: str
    threads: int | None
    spread: float
    """The largest spread over the probes."""

    pairs: int
    """Worker pairs the spread was measured over (per probe task)."""

    probes: dict[str, ProbeSpread]
    """The spread per probe task, at its call time. Records without it (an older format) are
    measured again."""

    log_speedups: dict[str, list[float]] = Field(default_factory=dict)
    """ln(speedup) of identical code in each pair, per probe task: the raw measurements."""

    measured_at: float | None = None
    """When it was measured (Unix time): a noisy measurement is kept only for a while (see
    :mod:`kernelproof.controller.spread_measurement`)."""

    def at(self, call_s: float | None) -> float:
        """The spread for a call of ``call_s`` seconds: interpolated on log call time between
        the probes, clamped at the ends, after making it non-increasing with call time (a
        shorter call is never given less than a longer one: 5 pairs measure a spread only to
        about a third of itself, and short calls are the more exposed)."""
        points = sorted((p.call_s, p.spread) for p in self.probes.values() if p.call_s > 0)
        if not points or call_s is None or not call_s > 0:
            return self.spread
        for index in range(len(points) - 2, -1, -1):
            points[index] = (points[index][0], max(points[index][1], points[index + 1][1]))
        if call_s <= points[0][0]:
            return points[0][1]
        if call_s >= points[-1][0]:
            return points[-1][1]
        for (t0, s0), (t1, s1) in zip(points, points[1:]):
            if t0 <= call_s <= t1:
                share = math.log(call_s / t0) / math.log(t1 / t0) if t1 > t0 else 0.0
                return s0 + share * (s1 - s0)
        return self.spread


def between_pairs(log_speedups: list[float], within_sds: list[float]) -> float:
    """The spread of identical code's log speedups around the truth (0) that the pairs' own
    intervals do not explain: their mean square minus the mean sampling variance within a pair
    (never below zero).

    Around 0, not around their mean: a harness bias common to every pair (the candidate's
    worker read 4-8% slower than the reference's on 2 us softmax calls, in every pair) is as
    much an error of the speedup as a bias that changes from pair to pair."""
    if len(log_speedups) < 2:
        return 0.0
    observed = statistics.fmean(x * x for x in log_speedups)
    within = statistics.fmean(sd * sd for sd in within_sds) if within_sds else 0.0
    return math.sqrt(max(0.0, observed - within))


def within_sd(speedup: float, low: float, high: float) -> float:
    """The log-scale standard deviation a 95% interval implies."""
    if not (low > 0 and high > 0 and math.isfinite(high)):
        return 0.0
    return (math.log(high) - math.log(low)) / (2 * Z_95)


def widen(speedup: float, low: float, high: float, spread: float) -> tuple[float, float]:
    """A 95% interval widened by the between-pair spread: each side's log half-width and
    ``Z_95 * spread`` added in quadrature. Infinite or degenerate bounds are kept."""
    if spread <= 0 or not (speedup > 0 and low > 0 and math.isfinite(high)):
        return low, high
    extra = Z_95 * spread
    below = math.sqrt(math.log(speedup / low) ** 2 + extra**2)
    above = math.sqrt(math.log(high / speedup) ** 2 + extra**2)
    return speedup * math.exp(-below), speedup * math.exp(above)


def _path(fingerprint: str, threads: int | None) -> Path:
    return cache_dir() / f"process-spread-{fingerprint}-t{threads}.json"


def load_spread(fingerprint: str, threads: int | None) -> ProcessSpread | None:
    data = trusted_bytes(_path(fingerprint, threads))
    if data is None:
        return None
    try:
        return ProcessSpread.model_validate_json(data)
    except ValueError:
        return None


def save_spread(record: ProcessSpread) -> None:
    path = _path(record.fingerprint, record.threads)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(record.model_dump_json(indent=1))
    partial.replace(path)
    pin(path)
