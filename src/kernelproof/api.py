"""The Python API for reward loops: score a candidate given as source text.

``evaluate`` runs on the process's own :class:`kernelproof.Session`: the reference's work for
a task is done once per shared seed (see ``kernelproof/session.py``), and the reference worker
stays warm. It is safe to call from many threads or processes at once: each call gets its own
scratch folder and its own candidate worker, timing phases on one device take turns through a
file lock, and nothing it shares is mutated without a lock.
"""

from __future__ import annotations

import math
from typing import Any

from kernelproof.schema import Report


def evaluate(
    reference_src: str, candidate_src: str, *, profile: str = "default", **options: Any
) -> Report:
    """Verify ``candidate_src`` (a KernelBench ``ModelNew`` module as text) against
    ``reference_src`` (the task's text) and return the report.

    ``options`` are any :class:`kernelproof.config.Settings` fields (``seeds``, ``timing``,
    ``budget_s``, ``device``...). Never raises for a bad candidate: it gets a verdict.

    Without ``base_seed``, calls on one task share a base seed for
    :data:`kernelproof.session.RESEED_EVERY` calls (so the reference's outputs and oracle are
    computed once for them), then a fresh one is drawn. For a batch, or for control over the
    session's life, use :class:`kernelproof.Session` directly.
    """
    from kernelproof.session import default_session

    return default_session().evaluate(reference_src, candidate_src, profile=profile, **options)


def reward(report: Report, *, require_timing: bool = False) -> float:
    """A scalar reward from a report, for RL: 0 unless ``verified``; then the speedup's lower
    confidence bound (so noise cannot be farmed).

    Without timing it is 1.0 only when timing was not asked for (``timing=False``): a timing
    phase that was asked for and failed (a worker died twice, every round void) leaves the
    speed unmeasured, and unmeasured is 0, never 1.0. So is a speedup whose interval could not
    be computed (too few samples) or that compares unequal work (more cores than allowed)."""
    if report.verdict.value != "verified":
        return 0.0
    timing = report.timing
    if timing is None:
        asked = bool(report.settings.get("timing", True))
        return 0.0 if require_timing or asked else 1.0
    low, high = timing.speedup_ci
    if not timing.comparable or not (math.isfinite(low) and math.isfinite(high)):
        return 0.0
    return max(0.0, float(low))
