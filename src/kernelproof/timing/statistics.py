"""Statistics of per-call times: summaries, the speedup's confidence interval, when to stop.

Everything here is a pure function of raw samples (seconds per call, in the order measured), so a
report can always be recomputed from the samples it stores. No torch: the controller, the store
and the report renderer import this cheaply.

The pieces, in the order the timing loop uses them:

- :class:`StoppingRule` decides after each round whether to keep measuring, from a
  :class:`SpeedupEstimate` made by :func:`speedup_interval` (a bootstrap of the ratio of medians).
- :func:`summarize` turns each side's samples into the report's :class:`TimingStats`, with a
  ``note`` that carries :func:`noise_diagnostic`'s warning when the machine looked unstable.
- :func:`controller_cross_check` and :func:`implausibly_fast` compare what a worker says its calls
  took with what the controller's own clock saw around the batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from kernelproof.errors import UsageError
from kernelproof.schema.report import TimingStats

__all__ = [
    "BIMODAL_MIN_DISTINCT",
    "BIMODAL_MIN_GAP_FRACTION",
    "BIMODAL_MIN_SAMPLES",
    "BIMODAL_MIN_SHARE",
    "BIMODAL_SEPARATION",
    "DEFAULT_BUDGET_S",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_MIN_ROUNDS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_TARGET_HALF_WIDTH",
    "DRIFT_FRACTION",
    "DRIFT_MIN_SAMPLES",
    "DRIFT_NOISE_FACTOR",
    "IMPLAUSIBLY_FAST_RATIO",
    "MIN_CROSS_CHECK_WALL_S",
    "MIN_SPREAD_SAMPLES",
    "NOISY_IQR_FRACTION",
    "OUTLIER_FRACTION_WARN",
    "STOP_BUDGET",
    "STOP_CONTINUE",
    "STOP_CONVERGED",
    "STOP_MAX_ROUNDS",
    "STOP_REASONS",
    "TUKEY_FENCE",
    "SpeedupEstimate",
    "StopDecision",
    "StoppingRule",
    "controller_cross_check",
    "implausibly_fast",
    "noise_diagnostic",
    "speedup_interval",
    "round_speedup_interval",
    "summarize",
]

# --------------------------------------------------------------------------------------------
# Thresholds. Each says why it has its value.
# --------------------------------------------------------------------------------------------

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

#: The usual two-sided level: a 1-in-20 chance that the interval misses the true speedup.
DEFAULT_CONFIDENCE = 0.95

#: 2000 resamples put 50 resamples beyond each end of a 95% interval, enough for stable ends,
#: and cost about 30 ms for 500 rounds.
DEFAULT_RESAMPLES = 2000

#: Bootstrap index matrices are built in chunks of at most this many elements (4 MiB of int16
#: indices) so that long runs do not allocate resamples x samples at once.
_MAX_CHUNK_ELEMENTS = 1 << 21

#: A speedup known to +-2% tells a 5% gain, about the smallest worth shipping, from none.
DEFAULT_TARGET_HALF_WIDTH = 0.02

#: Ten rounds before trusting any interval: the bootstrap of fewer samples underestimates the
#: spread (it can only reshuffle the handful of values it has seen).
DEFAULT_MIN_ROUNDS = 10

#: The interval narrows as 1/sqrt(rounds): past 500 rounds, halving it costs 1500 more. A run
#: that has not converged by then is too noisy for more rounds to fix.
DEFAULT_MAX_ROUNDS = 500

#: Ten seconds per shape keeps a verification of a handful of shapes within a couple of minutes.
DEFAULT_BUDGET_S = 10.0

#: An honest worker's timed calls fill most of the batch once the controller's measured overhead
#: (IPC, fresh inputs, cache flushes) is subtracted, so the ratio sits near 1. A tenth leaves a
#: 10x margin for scheduler noise and unsubtracted overhead; only work moved outside the timed
#: window (side threads, deferred work, a patched clock) falls that low.
IMPLAUSIBLY_FAST_RATIO = 0.1

#: Below 50 ms of wall time, process wake-ups, IPC latency and timer granularity (milliseconds on
#: a loaded machine) dominate the batch, so a low ratio says nothing about the worker.
MIN_CROSS_CHECK_WALL_S = 0.05

#: Reasons a :class:`StopDecision` can give. The empty string means "keep measuring".
STOP_CONVERGED = "converged"
STOP_BUDGET = "budget"
STOP_MAX_ROUNDS = "max-rounds"
STOP_CONTINUE = ""
STOP_REASONS = frozenset({STOP_CONVERGED, STOP_BUDGET, STOP_MAX_ROUNDS, STOP_CONTINUE})


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _as_times(samples: Sequence[float], name: str) -> NDArray[np.float64]:
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


def _quartiles(x: NDArray[np.float64]) -> tuple[float, float, float]:
    """First quartile, median, third quartile (numpy's linear interpolation)."""
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    return float(q1), float(med), float(q3)


def _fmt_s(t: float) -> str:
    """A time in the unit that reads best, to three significant figures: 12.3 us, 1 ms, 1.23 s."""
    t = float(f"{t:.3g}")  # round first, so that 0.9999e-3 reads "1 ms", not "1e+03 us"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


# --------------------------------------------------------------------------------------------
# Summary and noise
# --------------------------------------------------------------------------------------------


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
    x = _as_times(samples, "samples")
    q1, med, q3 = _quartiles(x)
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
    x = _as_times(samples, "samples")
    n = x.size
    if n < MIN_SPREAD_SAMPLES:
        return None
    sentences: list[str] = []
    q1, med, q3 = _quartiles(x)
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
            f"Samples form two clusters, around {_fmt_s(low)} and {_fmt_s(high)} "
            "(frequency states, core migration or memory placement changing between calls)."
        )
    return " ".join(sentences) if sentences else None


def _drift(x: NDArray[np.float64]) -> float | None:
    """Relative change from the first third's median to the last third's, when it is a trend."""
    third = x.size // 3
    first, last = x[:third], x[-third:]
    f1, f_med, f3 = _quartiles(first)
    l1, l_med, l3 = _quartiles(last)
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


# --------------------------------------------------------------------------------------------
# Speedup and its confidence interval
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpeedupEstimate:
    """The speedup of a candidate over a reference, with a bootstrap confidence interval.

    A speedup above 1 means the candidate is faster.
    """

    speedup: float
    """median(reference) / median(candidate)."""

    low: float
    """Lower end of the percentile-bootstrap interval of the speedup."""

    high: float
    """Upper end of the interval."""

    half_width_rel: float
    """(high - low) / 2 / speedup: the interval's half-width relative to the speedup."""

    confidence: float = DEFAULT_CONFIDENCE
    """The interval's two-sided confidence level."""

    resamples: int = DEFAULT_RESAMPLES
    paired: bool = False
    """Whether rounds were resampled jointly (True only when asked and the lengths matched)."""

    @property
    def interval(self) -> tuple[float, float]:
        """``(low, high)``, the shape the report's ``speedup_ci`` takes."""
        return (self.low, self.high)


def speedup_interval(
    reference: Sequence[float],
    candidate: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    rng: np.random.Generator | int | None = None,
    paired: bool = False,
) -> SpeedupEstimate:
    """Bootstrap confidence interval of the ratio of medians, median(reference) / median(candidate).

    Each resample draws, with replacement, as many samples as each side has, and takes the ratio
    of the two medians; the interval is the central ``confidence`` share of those ratios (the
    percentile bootstrap). The median, not the mean, because per-call times have a long right
    tail of preemptions that the mean follows and the median ignores.

    ``paired=True`` says the samples come in rounds: ``reference[i]`` and ``candidate[i]`` were
    measured back to back in round ``i``. Then the same round indices are drawn for both sides, so
    a slow round slows both medians of a resample together and machine drift cancels out of the
    ratio: the interval is narrower, and honest about the rounds being correlated. When the
    lengths differ (a round lost on one side), rounds cannot be matched and the sides are
    resampled independently; ``SpeedupEstimate.paired`` records which was done.

    The same ``rng`` seed gives the same interval. All resamples are drawn as index matrices and
    reduced with one vectorised median, in chunks that bound memory.
    """
    ref = _as_times(reference, "reference")
    cand = _as_times(candidate, "candidate")
    if not 0.0 < confidence < 1.0:
        raise UsageError(
            f"confidence={confidence!r} must lie strictly between 0 and 1, e.g. 0.95"
        )
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise UsageError(f"resamples={resamples!r} must be a positive integer, e.g. 2000")
    resamples = int(resamples)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    joint = paired and ref.size == cand.size

    # Resamples are drawn as ranks into each side's sorted samples: the resample's median is then
    # the sorted value at the median rank, and a partition of small integers (int16 for up to
    # 32767 samples) is about twice as fast as gathering floats and taking np.median.
    ref_sorted, cand_sorted = np.sort(ref), np.sort(cand)
    if joint:
        # Round i's rank on each side, so that one index draw picks the same rounds on both.
        ref_rank = _ranks(ref)
        cand_rank = _ranks(cand)
    ratios = np.empty(resamples, dtype=np.float64)
    row_elements = ref.size if joint else max(ref.size, cand.size)
    chunk = max(1, _MAX_CHUNK_ELEMENTS // row_elements)
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        if joint:
            rounds = gen.integers(0, ref.size, size=(rows, ref.size), dtype=_index_dtype(ref.size))
            med_ref = _row_medians(ref_sorted, ref_rank[rounds])
            med_cand = _row_medians(cand_sorted, cand_rank[rounds])
        else:
            med_ref = _row_medians(ref_sorted, _draw(gen, rows, ref.size))
            med_cand = _row_medians(cand_sorted, _draw(gen, rows, cand.size))
        ratios[start : start + rows] = med_ref / med_cand

    tail = (1.0 - confidence) / 2.0
    low, high = (float(v) for v in np.quantile(ratios, [tail, 1.0 - tail]))
    speedup = float(np.median(ref) / np.median(cand))
    return SpeedupEstimate(
        speedup=speedup,
        low=low,
        high=high,
        half_width_rel=(high - low) / 2.0 / speedup,
        confidence=confidence,
        resamples=resamples,
        paired=joint,
    )


#: Rounds needed before a round-level bootstrap means anything; below it the interval is
#: reported as unbounded on the side that cannot be resolved.
MIN_BOOTSTRAP_ROUNDS = 4


def round_speedup_interval(
    reference_rounds: Sequence[Sequence[float]],
    candidate_rounds: Sequence[Sequence[float]],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    rng: np.random.Generator | int | None = None,
) -> SpeedupEstimate:
    """Confidence interval of the speedup when samples come in interleaved rounds (batches).

    Calls within one batch share the machine's state (frequency, other load, allocator), so
    they are not independent draws: a sample-level bootstrap then gives intervals that are too
    narrow (with the 2-vCPU machine under load, an identical candidate's 95% interval held 1.0
    in only 12 of 20 runs). Here the unit of resampling is the round: each round contributes
    the ratio of its reference median to its candidate median, which also cancels drift
    between rounds (load that lands on one participant's batches). The speedup is the median
    of those per-round ratios of medians, and its interval the percentile bootstrap of that
    median. Under a load shift the ratio of pooled medians can fall outside every round's
    ratio (seen here: 0.45 pooled against rounds near 0.8 for a 1.25x-work candidate).
    """
    ref_rounds = [_as_times(r, "reference round") for r in reference_rounds]
    cand_rounds = [_as_times(c, "candidate round") for c in candidate_rounds]
    if len(ref_rounds) != len(cand_rounds) or not ref_rounds:
        raise UsageError("reference and candidate need the same, non-zero number of rounds")
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence={confidence!r} must lie strictly between 0 and 1")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    ratios = np.array([np.median(r) / np.median(c) for r, c in zip(ref_rounds, cand_rounds)])
    speedup = float(np.median(ratios))
    if ratios.size < MIN_BOOTSTRAP_ROUNDS:
        low, high = 0.0, math.inf
    else:
        draws = gen.integers(0, ratios.size, size=(int(resamples), ratios.size))
        medians = np.median(ratios[draws], axis=1)
        tail = (1.0 - confidence) / 2.0
        low, high = (float(v) for v in np.quantile(medians, [tail, 1.0 - tail]))
    return SpeedupEstimate(speedup=speedup, low=low, high=high,
                           half_width_rel=(high - low) / 2.0 / speedup, confidence=confidence,
                           resamples=int(resamples), paired=True)


def _index_dtype(n: int) -> type[np.signedinteger]:
    """The smallest signed integer type that indexes ``n`` samples (smaller partitions faster)."""
    return np.int16 if n <= np.iinfo(np.int16).max else np.int64


def _draw(gen: np.random.Generator, rows: int, n: int) -> NDArray[np.signedinteger]:
    """``rows`` bootstrap resamples of ``n`` indices in ``[0, n)``, drawn with replacement."""
    return gen.integers(0, n, size=(rows, n), dtype=_index_dtype(n))


def _ranks(x: NDArray[np.float64]) -> NDArray[np.signedinteger]:
    """Position of each sample in ``np.sort(x)`` (ties broken by order, which changes nothing)."""
    ranks = np.empty(x.size, dtype=_index_dtype(x.size))
    ranks[np.argsort(x, kind="stable")] = np.arange(x.size)
    return ranks


def _row_medians(
    sorted_values: NDArray[np.float64], ranks: NDArray[np.signedinteger]
) -> NDArray[np.float64]:
    """Median of ``sorted_values[ranks[r]]`` for each row ``r``.

    ``sorted_values`` is non-decreasing, so the middle order statistics of a row's values are
    the values at the row's middle ranks: the partition runs on the small integer ranks.
    """
    n = ranks.shape[1]
    k_lo, k_hi = (n - 1) // 2, n // 2
    middle = np.partition(ranks, sorted({k_lo, k_hi}), axis=1)
    return (sorted_values[middle[:, k_lo]] + sorted_values[middle[:, k_hi]]) / 2.0


# --------------------------------------------------------------------------------------------
# When to stop
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StopDecision:
    """Whether the timing loop should stop after this round, and why."""

    stop: bool
    reason: str
    """One of :data:`STOP_CONVERGED`, :data:`STOP_BUDGET`, :data:`STOP_MAX_ROUNDS`, or
    :data:`STOP_CONTINUE` (the empty string) while measuring goes on."""

    detail: str = ""
    """A plain sentence with the numbers behind the decision, for logs and the report."""


@dataclass(frozen=True)
class StoppingRule:
    """Adaptive stopping on the speedup's confidence interval, within a time and round budget.

    Measuring stops at the first of:

    1. **converged**: at least ``min_rounds`` rounds, and the interval's relative half-width is at
       most ``target_half_width``;
    2. **max-rounds**: ``max_rounds`` rounds done;
    3. **budget**: ``budget_s`` seconds spent. The budget is a hard limit and overrides
       ``min_rounds``: a kernel too slow for ten rounds in the budget still ends, and the reason
       tells the reviewer why the interval is wide.

    Convergence is checked first, so a run that converges on its last allowed round says so.
    """

    target_half_width: float = DEFAULT_TARGET_HALF_WIDTH
    """Stop once (high - low) / 2 / speedup is at most this."""

    min_rounds: int = DEFAULT_MIN_ROUNDS
    max_rounds: int = DEFAULT_MAX_ROUNDS
    budget_s: float = DEFAULT_BUDGET_S
    """Seconds of measuring allowed, from the first round."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.target_half_width) and self.target_half_width > 0):
            raise UsageError(
                f"target_half_width={self.target_half_width!r} must be a positive relative "
                f"half-width, e.g. {DEFAULT_TARGET_HALF_WIDTH} for +-2%"
            )
        if self.min_rounds < 1:
            raise UsageError(f"min_rounds={self.min_rounds!r} must be at least 1")
        if self.max_rounds < self.min_rounds:
            raise UsageError(
                f"max_rounds={self.max_rounds!r} is below min_rounds={self.min_rounds!r}: raise "
                "max_rounds or lower min_rounds"
            )
        if not (self.budget_s > 0):
            raise UsageError(f"budget_s={self.budget_s!r} must be a positive number of seconds")

    def decide(
        self, estimate: SpeedupEstimate | None, rounds: int, elapsed_s: float
    ) -> StopDecision:
        """Whether to stop after ``rounds`` rounds and ``elapsed_s`` seconds.

        ``estimate`` is the latest interval, or None when none has been computed yet (the loop
        may skip the bootstrap until ``min_rounds``).
        """
        if (
            estimate is not None
            and rounds >= self.min_rounds
            and estimate.half_width_rel <= self.target_half_width
        ):
            return StopDecision(
                True,
                STOP_CONVERGED,
                f"speedup {estimate.speedup:.3g}x known to +-{estimate.half_width_rel:.1%} "
                f"(target +-{self.target_half_width:.1%}) after {rounds} rounds",
            )
        if rounds >= self.max_rounds:
            return StopDecision(
                True, STOP_MAX_ROUNDS, f"{rounds} rounds reached the limit of {self.max_rounds}"
            )
        if elapsed_s >= self.budget_s:
            return StopDecision(
                True,
                STOP_BUDGET,
                f"{elapsed_s:.3g} s spent of a {self.budget_s:.3g} s budget after {rounds} rounds",
            )
        return StopDecision(False, STOP_CONTINUE)


# --------------------------------------------------------------------------------------------
# The controller's clock against the worker's
# --------------------------------------------------------------------------------------------


def controller_cross_check(
    reported_s: Sequence[float], wall_s: float, overhead_floor_s: float = 0.0
) -> float:
    """The share of the controller's wall time around a batch that the worker says it timed.

    Returns ``sum(reported_s) / (wall_s - overhead_floor_s)``.

    ``wall_s`` is the controller's own clock from sending the batch to receiving its results;
    the candidate cannot touch it. ``overhead_floor_s`` is the part of that time the controller
    knows is not timed calls (IPC, fresh inputs, cache flushes), best measured by the controller
    with the same batch of a trivial callable. An honest worker gives a ratio near 1, a little
    below because of untimed work the floor misses. A worker whose calls run work outside the
    timed window (a side thread, deferred launches) or whose clock was patched reports times whose
    sum is far below the wall: see :func:`implausibly_fast`.

    The worker's times are untrusted and are not validated as errors: if any is negative or not
    finite, the result is NaN, which :func:`implausibly_fast` treats as implausible. When the floor
    is at least the wall time, nothing is left to compare against and the result is ``inf``
    (never implausibly fast). The controller's own ``wall_s`` and ``overhead_floor_s`` must be
    sane; a bad one raises :class:`~kernelproof.errors.UsageError`.
    """
    if not (math.isfinite(wall_s) and wall_s > 0):
        raise UsageError(
            f"wall_s={wall_s!r} must be the positive, finite batch wall time in seconds"
        )
    if not (math.isfinite(overhead_floor_s) and overhead_floor_s >= 0):
        raise UsageError(
            f"overhead_floor_s={overhead_floor_s!r} must be a finite number of seconds >= 0"
        )
    reported = np.asarray(reported_s, dtype=np.float64)
    if reported.ndim != 1 or reported.size == 0:
        raise UsageError(
            f"reported_s must be a non-empty flat sequence of per-call seconds; got shape "
            f"{reported.shape}"
        )
    if not np.all(np.isfinite(reported) & (reported >= 0)):
        return math.nan
    window = wall_s - overhead_floor_s
    if window <= 0:
        return math.inf
    return float(reported.sum()) / window


def implausibly_fast(ratio: float, wall_s: float | None = None) -> bool:
    """Whether a :func:`controller_cross_check` ratio means the worker under-reports its time.

    True when ``ratio`` is below :data:`IMPLAUSIBLY_FAST_RATIO`, or is NaN (the worker's times were
    nonsense). Pass the batch's ``wall_s`` so that batches shorter than
    :data:`MIN_CROSS_CHECK_WALL_S`, where fixed overheads swamp the calls, are never flagged for
    a low ratio; without it the caller vouches that the batch was long enough.
    """
    if math.isnan(ratio):
        return True
    if wall_s is not None and wall_s < MIN_CROSS_CHECK_WALL_S:
        return False
    return ratio < IMPLAUSIBLY_FAST_RATIO
