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


class ProcessSpread(BaseModel):
    """One machine's between-pair spread of log speedups on identical code."""

    fingerprint: str
    threads: int | None
    spread: float
    """Standard deviation of ln(speedup) between fresh worker pairs, beyond what each pair's
    own interval explains."""

    pairs: int
    """Worker pairs the spread was measured over (per probe task)."""

    log_speedups: dict[str, list[float]] = Field(default_factory=dict)
    """ln(speedup) of identical code in each pair, per probe task: the raw measurements."""


def between_pairs(log_speedups: list[float], within_sds: list[float]) -> float:
    """The standard deviation between pairs that their own intervals do not explain: the
    observed variance of the pairs' log speedups minus the mean sampling variance within a
    pair (never below zero)."""
    if len(log_speedups) < 2:
        return 0.0
    observed = statistics.variance(log_speedups)
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
    below = math.sqrt(math.log(speedup / low) ** 2 + extra ** 2)
    above = math.sqrt(math.log(high / speedup) ** 2 + extra ** 2)
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
