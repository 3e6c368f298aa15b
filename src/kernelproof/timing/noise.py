"""Noise in per-call times: the report's summary of one side's samples, and the signs that the
machine was unstable (spread, drift, two modes).

Pure numpy over raw samples (seconds per call, in the order measured), so a report can always
be recomputed from the samples it stores. No torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from kernelproof.errors import UsageError
from kernelproof.schema.timing import TimingStats
from kernelproof.units import seconds

#: Tukey's fence: a sample further than 1.5 IQR beyond a quartile is an outlier. For normal data
#: this flags about 0.7% of samples, so a count well above that means real interference.
TUKEY_FENCE = 1.5

#: Below four samples the quartiles are interpolations between one or two points: the IQR says
#: nothing about spread (torch.utils.benchmark hides the IQR below four samples for that reason).
MIN_SPREAD_SAMPLES = 4

#: An IQR above 10% of the median buries a speedup of a few percent in noise;
#: torch.utils.benchmark warns at the same level.
NOISY_IQR_FRACTION = 0.10

#: Occasional preemptions put a few percent of samples past the fences; beyond 10% the
#: interference is systematic (another process, a periodic daemon) rather than rare.
OUTLIER_FRACTION_WARN = 0.10

#: Drift compares the first and last thirds of the samples. With ten per third, pure noise passes
#: for drift under 1% of the time, even at an IQR of 80% of the median (measured, lognormal
#: data); with four per third it does a tenth of the time.
DRIFT_MIN_SAMPLES = 30

#: Thermal throttling and frequency scaling move times by 10% or more; smaller shifts between
#: the first and last third are within what a busy but stable machine shows.
DRIFT_FRACTION = 0.10

#: The shift must also exceed 1.5 times the thirds' own IQR (their mean), so that noise alone
#: does not pass for a trend; a 25% ramp under 5% noise still clears it nine times in ten.
DRIFT_NOISE_FACTOR = 1.5

#: The two-modes hint needs 50 samples: below that, the best split of one mode can look like two
#: (measured: single-mode exponential data scores above 3 about once in a thousand at 40).
BIMODAL_MIN_SAMPLES = 50

#: Each of the two clusters must hold at least 20% of the samples: a smaller group is a tail of
#: outliers (already counted by the fences), not a second mode.
BIMODAL_MIN_SHARE = 0.20

#: Separation = distance between the two clusters' medians over the sum of their IQRs, at the
#: best split. One mode split anywhere scores under 2.7 at 50 samples and less with more
#: (measured on normal, Student-t, lognormal, exponential and uniform data); two modes ten
#: in-mode spreads apart score above 3.
BIMODAL_SEPARATION = 3.0

#: Clusters whose medians are under 5% of the median apart do not change a speedup anyone
#: would act on, so they are not worth a warning even when each is tight.
BIMODAL_MIN_GAP_FRACTION = 0.05

#: With fewer distinct values than this, the clock's resolution (e.g. 0.5 us CUDA events on a
#: 5 us kernel) rather than the machine shapes the distribution, and steps between ticks would
#: look like modes.
BIMODAL_MIN_DISTINCT = 8


def as_times(samples: Sequence[float], name: str) -> NDArray[np.float64]:
    """The samples as a 1-d float64 array, or a UsageError naming the bad value and the fix."""
    try:
        arr = np.asarray(samples, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{name} must be a sequence of numbers (seconds per call): {exc}") from exc
    if arr.ndim != 1:
        raise UsageError(
            f"{name} must be a flat sequence of seconds per call; got shape {arr.shape}"
        )
    if arr.size == 0:
        raise UsageError(f"{name} is empty: time at least one call before computing statistics")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr <= 0.0))
    if bad.size:
        i = int(bad[0])
        raise UsageError(
            f"{name}[{i}] = {float(arr[i])!r} is not a positive finite time ({bad.size} such "
            "sample(s)). A zero time means the clock is coarser than the call: time batches of "
            "calls and divide; a negative or non-finite one means the clock or the worker is "
            "broken."
        )
    return arr


def quartiles(x: NDArray[np.float64]) -> tuple[float, float, float]:
    """First quartile, median, third quartile (numpy's linear interpolation)."""
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    return float(q1), float(med), float(q3)


def summarize(samples: Sequence[float]) -> TimingStats:
    """The report's statistics for one implementation at one shape, keeping every raw sample.

    ``median_s`` and ``iqr_s`` use numpy's linear-interpolation quartiles. ``outliers`` counts
    samples beyond :data:`TUKEY_FENCE` IQRs outside the quartiles. ``note`` is empty on clean data;
    otherwise it holds plain sentences: too few samples for a spread, a share of outliers above
    :data:`OUTLIER_FRACTION_WARN`, and whatever :func:`noise_diagnostic` says.

    Raises :class:`~kernelproof.errors.UsageError` when ``samples`` is empty or holds a time that
    is not positive and finite. Times reported by an untrusted worker should be screened (and a
    bogus one turned into a finding) before they get here.
    """
    x = as_times(samples, "samples")
    q1, med, q3 = quartiles(x)
    iqr = q3 - q1
    fence = TUKEY_FENCE * iqr
    outliers = int(np.count_nonzero((x < q1 - fence) | (x > q3 + fence)))

    notes: list[str] = []
    if x.size < MIN_SPREAD_SAMPLES:
        notes.append(f"Only {x.size} sample(s): too few to measure the spread.")
    elif outliers / x.size > OUTLIER_FRACTION_WARN:
        notes.append(
            f"{outliers / x.size:.0%} of samples are outliers (beyond {TUKEY_FENCE} IQR of the "
            "quartiles)."
        )
    diagnostic = noise_diagnostic(x.tolist())
    if diagnostic:
        notes.append(diagnostic)
    return TimingStats(
        median_s=med, iqr_s=iqr, samples=x.tolist(), outliers=outliers, note=" ".join(notes)
    )


def noise_diagnostic(samples: Sequence[float]) -> str | None:
    """A plain sentence when the samples say the machine was unstable; None when they look fine.

    Three signs are checked, on samples in the order measured:

    - **spread**: the IQR is more than :data:`NOISY_IQR_FRACTION` of the median (a robust
      coefficient of variation, blind to a few preemptions);
    - **drift**: the median of the last third differs from the first third's by more than
      :data:`DRIFT_FRACTION`, and by more than :data:`DRIFT_NOISE_FACTOR` times the thirds' own
      IQRs (so noise alone does not pass for a trend). Thermal throttling, frequency scaling
      and a background job starting or ending look like this;
    - **two modes**: the sorted samples split into two groups of at least
      :data:`BIMODAL_MIN_SHARE` each, whose medians lie :data:`BIMODAL_SEPARATION` times the sum
      of the groups' IQRs apart, and at least :data:`BIMODAL_MIN_GAP_FRACTION` of the median.
      Frequency states, core migration, or memory placement that changes between calls look
      like this. It is a hint, not a test.

    Spread needs :data:`MIN_SPREAD_SAMPLES`, drift :data:`DRIFT_MIN_SAMPLES` and modes
    :data:`BIMODAL_MIN_SAMPLES`; with fewer, that sign is not checked.
    Interleaved rounds cancel drift in the speedup, but a warning still tells a reviewer that
    absolute times at the ends of the run disagree.
    """
    x = as_times(samples, "samples")
    n = x.size
    if n < MIN_SPREAD_SAMPLES:
        return None
    sentences: list[str] = []
    q1, med, q3 = quartiles(x)
    rel_iqr = (q3 - q1) / med
    if rel_iqr > NOISY_IQR_FRACTION:
        sentences.append(
            f"IQR is {rel_iqr:.0%} of the median: the machine is noisy (other load, frequency "
            "scaling), so times and speedups are less precise."
        )
    if n >= DRIFT_MIN_SAMPLES:
        drift = _drift(x)
        if drift is not None:
            direction = "slower" if drift > 0 else "faster"
            sentences.append(
                f"Times drifted: the last third of the samples is {abs(drift):.0%} {direction} "
                "than the first (thermal throttling, frequency scaling or changing background "
                "load)."
            )
    modes = _two_modes(x)
    if modes is not None:
        low, high = modes
        sentences.append(
            f"Samples form two clusters, around {seconds(low)} and {seconds(high)} "
            "(frequency states, core migration or memory placement changing between calls)."
        )
    return " ".join(sentences) if sentences else None


def _drift(x: NDArray[np.float64]) -> float | None:
    """Relative change from the first third's median to the last third's, when it is a trend."""
    third = x.size // 3
    first, last = x[:third], x[-third:]
    f1, f_med, f3 = quartiles(first)
    l1, l_med, l3 = quartiles(last)
    shift = l_med - f_med
    within = ((f3 - f1) + (l3 - l1)) / 2
    if abs(shift) > DRIFT_FRACTION * f_med and abs(shift) > DRIFT_NOISE_FACTOR * within:
        return shift / f_med
    return None


def _two_modes(x: NDArray[np.float64]) -> tuple[float, float] | None:
    """Medians of the two clusters when the sorted samples split cleanly in two, else None.

    Every split of the sorted samples that leaves :data:`BIMODAL_MIN_SHARE` on each side is
    scored at once (quartiles of a sorted slice are index lookups), and the best one is kept.
    """
    s = np.sort(x)
    n = s.size
    if n < BIMODAL_MIN_SAMPLES or np.unique(s).size < BIMODAL_MIN_DISTINCT:
        return None
    k_min = max(math.ceil(BIMODAL_MIN_SHARE * n), 2)
    k = np.arange(k_min, n - k_min + 1)  # lower cluster s[:k], upper cluster s[k:]
    if k.size == 0:
        return None
    start = np.zeros_like(k)

    def lower(q: float) -> NDArray[np.float64]:
        return _sorted_slice_quantile(s, start, k, q)

    def upper(q: float) -> NDArray[np.float64]:
        return _sorted_slice_quantile(s, k, n - k, q)

    lo_med, up_med = lower(0.5), upper(0.5)
    spread = (lower(0.75) - lower(0.25)) + (upper(0.75) - upper(0.25))
    distance = up_med - lo_med
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(spread > 0, distance / spread, np.inf)
    best = int(np.argmax(score))
    if score[best] < BIMODAL_SEPARATION:
        return None
    if distance[best] < BIMODAL_MIN_GAP_FRACTION * float(np.median(s)):
        return None
    return float(lo_med[best]), float(up_med[best])


def _sorted_slice_quantile(
    s: NDArray[np.float64], start: NDArray[np.int64], length: NDArray[np.int64], q: float
) -> NDArray[np.float64]:
    """Quantile ``q`` of each slice ``s[start:start + length]`` of sorted ``s`` (linear method)."""
    pos = start + q * (length - 1)
    below = np.floor(pos).astype(np.int64)
    above = np.minimum(below + 1, start + length - 1)
    frac = pos - below
    return s[below] * (1.0 - frac) + s[above] * frac
