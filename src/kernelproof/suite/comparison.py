"""Comparing two runs of a suite task by task: what ``kernelproof compare`` and a CI gate read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kernelproof.schema.comparison import ChangeKind, RunComparison, TaskChange
from kernelproof.store.metrics import ResultRecord, best_per_task, geomean_speedup


def compare_runs(a: Sequence[ResultRecord], b: Sequence[ResultRecord]) -> RunComparison:
    """Compare run B to run A task by task, each task represented by its best sample.

    A speed change counts only when the two confidence intervals do not overlap, so timing noise
    within the CIs never fails a CI gate.
    """
    best_a, best_b = best_per_task(a), best_per_task(b)
    changes = [
        _change(key, best_a.get(key), best_b.get(key)) for key in sorted(set(best_a) | set(best_b))
    ]
    counts = Counter(c.kind for c in changes)
    return RunComparison(
        changes=changes,
        counts={kind.value: counts.get(kind, 0) for kind in ChangeKind},
        geomean_a=geomean_speedup(a),
        geomean_b=geomean_speedup(b),
    )


def _change(key: str, a: ResultRecord | None, b: ResultRecord | None) -> TaskChange:
    speedup_a = a.speedup if a else None
    speedup_b = b.speedup if b else None
    ratio = speedup_b / speedup_a if speedup_a and speedup_b is not None else None
    if a is None:
        kind = ChangeKind.ONLY_B
    elif b is None:
        kind = ChangeKind.ONLY_A
    elif a.verified and not b.verified:
        kind = ChangeKind.LOST_VERIFIED
    elif b.verified and not a.verified:
        kind = ChangeKind.GAINED_VERIFIED
    elif a.verified and a.speedup_ci and b.speedup_ci and b.speedup_ci[1] < a.speedup_ci[0]:
        kind = ChangeKind.SLOWER
    elif a.verified and a.speedup_ci and b.speedup_ci and b.speedup_ci[0] > a.speedup_ci[1]:
        kind = ChangeKind.FASTER
    else:
        kind = ChangeKind.UNCHANGED
    return TaskChange(
        task_key=key,
        verdict_a=a.verdict if a else None,
        verdict_b=b.verdict if b else None,
        speedup_a=speedup_a,
        speedup_b=speedup_b,
        ci_a=a.speedup_ci if a else None,
        ci_b=b.speedup_ci if b else None,
        ratio=ratio,
        kind=kind,
    )
