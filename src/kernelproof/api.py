"""The Python API for reward loops: score a candidate given as source text.

``evaluate`` is safe to call from many threads or processes at once: each call gets its own
scratch folder and its own worker processes, timing phases on one device take turns through a
file lock, and nothing it shares is mutated without a lock.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kernelproof.schema import Report


def evaluate(reference_src: str, candidate_src: str, *, profile: str = "default",
             **options: Any) -> Report:
    """Verify ``candidate_src`` (a KernelBench ``ModelNew`` module as text) against
    ``reference_src`` (the task's text) and return the report.

    ``options`` are any :class:`kernelproof.config.Settings` fields (``seeds``, ``timing``,
    ``budget_s``, ``device``...). Never raises for a bad candidate: it gets a verdict.
    """
    from kernelproof.controller.verify import verify

    with tempfile.TemporaryDirectory(prefix="kernelproof-evaluate-") as scratch:
        folder = Path(scratch)
        reference, candidate = folder / "reference.py", folder / "candidate.py"
        reference.write_text(reference_src, encoding="utf-8")
        candidate.write_text(candidate_src, encoding="utf-8")
        return verify(reference, candidate, profile=profile, **options)


def reward(report: Report, *, require_timing: bool = False) -> float:
    """A scalar reward from a report, for RL: 0 unless ``verified``; then the speedup's lower
    confidence bound (so noise cannot be farmed), or 1.0 when there is no timing."""
    if report.verdict.value != "verified":
        return 0.0
    if report.timing is None:
        return 0.0 if require_timing else 1.0
    return max(0.0, float(report.timing.speedup_ci[0]))
