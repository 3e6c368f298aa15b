"""Suite metrics: pure functions from verification results to the scores a researcher reports.

The summary models they fill live in :mod:`kernelproof.schema.suite`; comparing two runs is
:mod:`kernelproof.suite.comparison`.

Every function here takes a sequence of :class:`ResultRecord` values (one per verified sample of a
task) and returns numbers; nothing touches a database, a file or torch. The store turns its rows
into records (:meth:`kernelproof.store.results.Verification.to_record`) and a :class:`Report` becomes
one with :func:`record_from_report`.

The scores are built so that a candidate cannot game them:

- ``fast_p`` divides by *every* task, so skipping hard tasks or failing them costs the same;
- a candidate time below the physical floor is raised to the floor before any speedup is scored
  (:func:`record_from_report`), so an impossible time cannot buy a speedup;
- each speedup is clamped to ``[1 / MAX_SPEEDUP, MAX_SPEEDUP]`` before a geometric mean, so one
  near-zero time can neither explode nor collapse a suite's score;
- with several samples per task, only the best *verified* sample counts, so a wrong sample's
  speed never counts.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kernelproof.errors import UsageError
from kernelproof.schema import Report, Verdict
from kernelproof.schema.interval import measured_interval
from kernelproof.schema.suite import MAX_SPEEDUP, GroupSummary, SuiteSummary

__all__ = [
    "DEFAULT_FAST_P",
    "DEFAULT_PASS_K",
    "ResultRecord",
    "best_per_task",
    "clamp_speedup",
    "correctness_rate",
    "fast_p",
    "geomean_speedup",
    "pass_at_k",
    "pass_at_k_suite",
    "record_from_report",
    "summarize",
    "verdict_counts",
]

#: The thresholds KernelBench reports: fast_0 is the correctness rate among all tasks, fast_1
#: "correct and faster than PyTorch", 1.5 and 2.0 the tiers its paper tabulates.
DEFAULT_FAST_P: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)

#: The k of pass@k reported by default, as in the Codex and KernelBench papers. A k is reported
#: only when every task has at least k samples (the estimator is undefined below that).
DEFAULT_PASS_K: tuple[int, ...] = (1, 5, 10)


@dataclass(frozen=True)
class ResultRecord:
    """The part of one verification the suite metrics need. Speedups are *scored* values: the
    report's, scaled down where the candidate's median was below the physical floor."""

    task_key: str
    """The task's identity within its suite, e.g. ``"level1/3_Softmax"``."""

    level: int | None
    """KernelBench level, or ``None`` for suites without levels."""

    problem: str
    """The problem's id within its level, e.g. ``"3"``."""

    sample: int
    """Which candidate for this task (0 for the first or only one)."""

    verdict: Verdict
    speedup: float | None = None
    """Speedup over eager PyTorch at the default shape; ``None`` when not timed."""

    speedup_vs_compile: float | None = None
    """Speedup over ``torch.compile`` of the reference at the default shape, when timed."""

    per_shape_speedups: Mapping[str, float | None] = field(default_factory=dict)
    """Speedup per timed shape variant (the default shape included), floor-adjusted likewise;
    ``None`` for a shape timed without an interval (too few rounds), which no metric uses."""

    floor_clamped: bool = False
    """Some timed shape had a candidate median below its floor and was raised to it."""

    speedup_ci: tuple[float, float] | None = None
    """Confidence interval of :attr:`speedup`, scaled like it."""

    @property
    def verified(self) -> bool:
        """True when the verdict is ``verified``: the only outcome that counts as correct."""
        return self.verdict is Verdict.VERIFIED


def record_from_report(
    report: Report, task_key: str, level: int | None, problem: str | int, sample: int = 0
) -> ResultRecord:
    """Turn a report into a record, applying the per-shape floor.

    At each timed shape with a floor, a candidate median below the floor is raised to it: the
    shape's speedup (and, at the default shape, its CI and the ``torch.compile`` speedup) is
    multiplied by ``median / floor``. Such a time is also a ``below-floor`` finding, which makes
    the verdict ``suspect`` unless the time is within the finding's margin or the run was timed
    hot; this adjustment covers those cases, so no speedup is scored from an impossible time.
    """
    timing = report.timing
    if timing is None:
        return ResultRecord(
            task_key=task_key,
            level=level,
            problem=str(problem),
            sample=sample,
            verdict=report.verdict,
        )
    clamped = False
    per_shape: dict[str, float | None] = {}
    for shape in timing.per_shape:
        factor = _floor_factor(shape.candidate.median_s, shape.floor_s)
        clamped |= factor < 1.0
        per_shape[shape.variant] = shape.speedup * factor if shape.has_interval else None
    default_floor = timing.per_shape[0].floor_s if timing.per_shape else None
    if default_floor is None and report.roofline is not None:
        default_floor = report.roofline.floor_s
    factor = _floor_factor(timing.candidate.median_s, default_floor)
    clamped |= factor < 1.0
    compile_speedup = timing.baselines.torch_compile
    interval = measured_interval(timing.speedup_ci)
    # A default-shape speedup without an interval (two samples a side) is not a measurement:
    # it enters no leaderboard or metric, as the RL reward gives it nothing either.
    measured = interval is not None
    return ResultRecord(
        task_key=task_key,
        level=level,
        problem=str(problem),
        sample=sample,
        verdict=report.verdict,
        speedup=timing.speedup * factor if measured else None,
        speedup_vs_compile=(
            compile_speedup * factor if compile_speedup is not None and measured else None
        ),
        per_shape_speedups=per_shape,
        floor_clamped=clamped,
        speedup_ci=(interval[0] * factor, interval[1] * factor) if interval else None,
    )


def shapes_without_interval(records: Iterable[ResultRecord]) -> int:
    """Timed shapes of ``records`` left out of every speedup for having no interval."""
    return sum(v is None for r in records for v in r.per_shape_speedups.values())


def _floor_factor(median_s: float, floor_s: float | None) -> float:
    """``median / floor`` when the median is below a known floor, else 1."""
    if floor_s is None or not floor_s > 0 or not median_s >= 0 or median_s >= floor_s:
        return 1.0
    return median_s / floor_s


# -- selection ---------------------------------------------------------------------------------


def best_per_task(records: Iterable[ResultRecord]) -> dict[str, ResultRecord]:
    """One record per task: its fastest verified sample, else its first sample.

    A verified sample without a speedup ranks below any timed verified sample, so "best" never
    prefers an untimed result over a measured one.
    """
    best: dict[str, ResultRecord] = {}
    for record in sorted(records, key=lambda r: (r.task_key, r.sample)):
        current = best.get(record.task_key)
        if current is None or _rank(record) > _rank(current):
            best[record.task_key] = record
    return best


def _rank(record: ResultRecord) -> tuple[int, float]:
    if not record.verified:
        return (0, 0.0)
    speedup = record.speedup
    if speedup is None or math.isnan(speedup):
        return (1, 0.0)
    return (2, speedup)


# -- the metrics -------------------------------------------------------------------------------


def correctness_rate(records: Sequence[ResultRecord]) -> float | None:
    """Share of samples whose verdict is ``verified``; ``None`` for no samples."""
    if not records:
        return None
    return sum(r.verified for r in records) / len(records)


def fast_p(
    records: Sequence[ResultRecord],
    ps: Sequence[float] = DEFAULT_FAST_P,
    total_tasks: int | None = None,
) -> dict[float, float]:
    """KernelBench's fast_p for each p: the share of *all* tasks whose candidate is verified and
    has a speedup above p.

    The denominator is every task in ``records`` (or ``total_tasks``, when the suite has tasks
    without any candidate), never only the correct ones. With several samples per task the best
    verified sample counts. A verified but untimed candidate counts only for p <= 0: every real
    speedup is above 0, but no larger threshold can be claimed without a measurement.
    """
    best = best_per_task(records)
    denominator = _denominator(len(best), total_tasks)
    result: dict[float, float] = {}
    for p in ps:
        hits = sum(1 for r in best.values() if r.verified and _faster_than(r.speedup, p))
        result[float(p)] = hits / denominator if denominator else 0.0
    return result


def _faster_than(speedup: float | None, p: float) -> bool:
    if speedup is None or math.isnan(speedup):
        return p <= 0.0
    return speedup > p


def _denominator(seen: int, total_tasks: int | None) -> int:
    if total_tasks is None:
        return seen
    if total_tasks < seen:
        raise UsageError(
            f"total_tasks={total_tasks} is smaller than the {seen} distinct tasks in the records; "
            "pass the suite's full task count, or None to use the records' own"
        )
    return total_tasks


def clamp_speedup(speedup: float) -> float:
    """Clamp a speedup into ``[1 / MAX_SPEEDUP, MAX_SPEEDUP]`` (0 and +inf included)."""
    return min(MAX_SPEEDUP, max(1.0 / MAX_SPEEDUP, speedup))


def _geomean(values: Iterable[float | None]) -> float | None:
    logs = [
        math.log(clamp_speedup(v)) for v in values if v is not None and not math.isnan(v) and v >= 0
    ]
    if not logs:
        return None
    return math.exp(sum(logs) / len(logs))


def geomean_speedup(records: Sequence[ResultRecord], baseline: str = "eager") -> float | None:
    """Geometric-mean speedup over the verified tasks that were timed; ``None`` if there are none.

    One record per task enters (its fastest verified sample); each speedup is clamped with
    :func:`clamp_speedup`. ``baseline`` is ``"eager"`` (the default shape's speedup over eager
    PyTorch), ``"compile"`` (over ``torch.compile``; the same sample, which may lack this
    baseline) or ``"shapes"`` (per task the geomean over its timed shapes, then over tasks).
    """
    chosen = [r for r in best_per_task(records).values() if r.verified]
    if baseline == "eager":
        return _geomean(r.speedup for r in chosen)
    if baseline == "compile":
        return _geomean(r.speedup_vs_compile for r in chosen)
    if baseline == "shapes":
        return _geomean(_geomean(r.per_shape_speedups.values()) for r in chosen)
    raise UsageError(f"unknown baseline {baseline!r}; use 'eager', 'compile' or 'shapes'")


def verdict_counts(records: Iterable[ResultRecord]) -> dict[str, int]:
    """Samples per verdict, every verdict present (zero when absent), in the contract's order."""
    counts = Counter(r.verdict for r in records)
    return {verdict.value: counts.get(verdict, 0) for verdict in Verdict}


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator ``1 - C(n-c, k) / C(n, k)`` for n samples, c of them correct.

    It is the probability that k samples drawn without replacement from the n include a correct
    one. Raises :class:`~kernelproof.errors.UsageError` unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise UsageError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k_suite(
    records: Sequence[ResultRecord], ks: Sequence[int] = DEFAULT_PASS_K
) -> dict[int, float]:
    """Mean pass@k over tasks, for each k no larger than every task's sample count.

    A k above some task's sample count is left out rather than estimated from fewer tasks, which
    would bias it towards the well-sampled ones.
    """
    samples: dict[str, int] = Counter(r.task_key for r in records)
    correct: dict[str, int] = Counter(r.task_key for r in records if r.verified)
    if not samples:
        return {}
    fewest = min(samples.values())
    return {
        k: sum(pass_at_k(n, correct[task], k) for task, n in samples.items()) / len(samples)
        for k in ks
        if 1 <= k <= fewest
    }


# -- the summary -------------------------------------------------------------------------------


def _group(
    records: Sequence[ResultRecord], ps: Sequence[float], ks: Sequence[int], total_tasks: int | None
) -> GroupSummary:
    best = best_per_task(records)
    return GroupSummary(
        tasks=_denominator(len(best), total_tasks),
        samples=len(records),
        verified=sum(r.verified for r in records),
        tasks_verified=sum(r.verified for r in best.values()),
        correctness_rate=correctness_rate(records),
        verdicts=verdict_counts(records),
        fast_p=fast_p(records, ps, total_tasks),
        geomean_speedup=geomean_speedup(records, "eager"),
        geomean_speedup_vs_compile=geomean_speedup(records, "compile"),
        geomean_speedup_all_shapes=geomean_speedup(records, "shapes"),
        timed_tasks=sum(
            1
            for r in best.values()
            if r.verified and r.speedup is not None and not math.isnan(r.speedup)
        ),
        shapes_without_interval=shapes_without_interval(r for r in best.values() if r.verified),
        floor_clamped=sum(r.floor_clamped for r in records),
        pass_at_k=pass_at_k_suite(records, ks),
    )


def summarize(
    records: Sequence[ResultRecord],
    ps: Sequence[float] = DEFAULT_FAST_P,
    ks: Sequence[int] = DEFAULT_PASS_K,
    total_tasks: int | None = None,
) -> SuiteSummary:
    """All suite metrics over ``records``, overall and per level.

    ``total_tasks`` is the suite's task count when some tasks have no candidate at all; they
    then count as failures in the overall fast_p (per-level denominators use the records').
    """
    by_level: dict[int, list[ResultRecord]] = defaultdict(list)
    for record in records:
        if record.level is not None:
            by_level[record.level].append(record)
    return SuiteSummary(
        overall=_group(records, ps, ks, total_tasks),
        levels={level: _group(group, ps, ks, None) for level, group in sorted(by_level.items())},
    )
