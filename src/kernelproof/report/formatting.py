"""Number formatting shared by every view of a report (terminal, HTML, CI files).

One place decides how a time, a speedup or an error ratio reads, so that the terminal and the
packet never disagree about the same number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from kernelproof.units import seconds  # noqa: F401 (the views call it as fmt.seconds)


def speedup(value: float | None) -> str:
    """A speedup as a multiplier, ``2.31x``; below 1 it is a slowdown, ``0.55x``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.3g}x"


#: What a confidence interval reads when it could not be computed: the bootstrap needs a few
#: rounds (``timing.bootstrap.MIN_BOOTSTRAP_ROUNDS``) and reports (0, inf) below that.
NOT_ENOUGH_SAMPLES = "n/a (not enough samples)"


def interval(bounds: tuple[float, float] | list[float] | None) -> str:
    """A confidence interval of speedups, ``0.44x-0.82x``; in words when it is unbounded
    because too few samples were timed (never ``0x-n/a``)."""
    if not bounds:
        return "n/a"
    low, high = bounds
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0:
        return NOT_ENOUGH_SAMPLES
    return f"{speedup(low)}-{speedup(high)}"


def ratio(value: float | None) -> str:
    """An error ratio (candidate error over the reference's own), three significant digits."""
    if value is None:
        return ""
    if not math.isfinite(value):
        return str(value)
    return f"{value:.3g}"


def rate(value: float | None, unit: str) -> str:
    """A throughput with an SI prefix: ``12.3 GFLOP/s``, ``11.1 GB/s``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    for prefix, factor in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def percent(value: float | None) -> str:
    """A fraction as a percentage, ``19.5%``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value * 100:.3g}%"


def knobs(values: Mapping[str, int]) -> str:
    """Knob values as ``batch_size=64, dim=4096`` (``default`` when there are none)."""
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "default"


def plural(count: int, noun: str, suffix: str = "s") -> str:
    """``1 variant``, ``3 variants``."""
    return f"{count} {noun}{'' if count == 1 else suffix}"
