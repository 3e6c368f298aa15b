"""Canned reports and a stand-in Session for the adapters' fast tests (no worker processes)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelproof.schema import (
    Correctness,
    CorrectnessTest,
    Environment,
    Finding,
    FindingCheck,
    InputVariant,
    Pipeline,
    Report,
    Severity,
    Stage,
    TestOutcome,
    Timing,
    TimingStats,
    VariantKind,
    Verdict,
)

#: A finding that forces each verdict other than ``verified``.
FORCING = {
    Verdict.INCORRECT: Finding(
        check=FindingCheck.CORRECTNESS,
        severity=Severity.FAIL,
        message="silently wrong on 1 of 3 variants",
    ),
    Verdict.SUSPECT: Finding(
        check=FindingCheck.PASSTHROUGH, severity=Severity.SUSPECT, message="the reference's own ops"
    ),
    Verdict.BROKEN: Finding(
        check=FindingCheck.BUILD,
        severity=Severity.FAIL,
        forces=Verdict.BROKEN,
        message="does not import",
    ),
}


def report(
    verdict: Verdict = Verdict.VERIFIED,
    speedup_ci: tuple[float, float] | None = None,
    summary: str = "",
) -> Report:
    """A report with ``verdict``; verified ones carry one passed cell, and timing when
    ``speedup_ci`` is given."""
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    correctness = Correctness(
        seeds=[1],
        base_seed=0,
        default_knobs={},
        task_knobs={},
        tolerance={},
        tests=[CorrectnessTest(variant=variant, seed=1, outcome=TestOutcome.PASSED)],
    )
    timing = None
    if speedup_ci is not None:
        stats = TimingStats(median_s=1e-3, iqr_s=1e-5, samples=[1e-3] * 5)
        timing = Timing(
            reference=stats, candidate=stats, speedup=sum(speedup_ci) / 2, speedup_ci=speedup_ci
        )
    findings = [] if verdict is Verdict.VERIFIED else [FORCING[verdict]]
    return Report(
        verdict=verdict,
        findings=findings,
        correctness=correctness,
        timing=timing,
        summary=summary or verdict.value,
        pipeline=Pipeline(decided_by=Stage.MATRIX),
        settings={"timing": True},
        environment=Environment(device="cpu"),
        candidate=None,
        reference=None,
    )


@dataclass
class FakeSession:
    """Answers ``evaluate`` with ``judge(reference, candidate)``'s verdict after ``delay_s``,
    and records every call (with the deadline it was given)."""

    judge: Callable[[str, str], Report]
    delay_s: float = 0.0
    calls: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    most_active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def evaluate(self, reference: str, candidate: str, **options: Any) -> Report:
        with self._lock:
            self.calls.append({"reference": reference, "candidate": candidate, **options})
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            # A real verification stops at its deadline; so does this one.
            time.sleep(min(self.delay_s, options.get("deadline_s", self.delay_s)))
            return self.judge(reference, candidate)
        finally:
            with self._lock:
                self.active -= 1

    def verify(self, reference: Any, candidate: Any, **options: Any) -> Report:
        return self.evaluate(str(reference), open(candidate).read(), **options)

    def close(self) -> None:
        pass


def by_marker(reference: str, candidate: str) -> Report:
    """Verified unless the candidate says otherwise in a ``# verdict:`` comment."""
    for verdict in (Verdict.INCORRECT, Verdict.SUSPECT, Verdict.BROKEN):
        if f"# verdict: {verdict.value}" in candidate:
            return report(verdict)
    return report(Verdict.VERIFIED, (1.5, 2.5) if "# fast" in candidate else None)


REFERENCE = (
    "import torch\nclass Model: pass\ndef get_inputs(): return []\n"
    "def get_init_inputs(): return []\n"
)


def completion(marker: str = "", body: str = "pass") -> str:
    """A well-formed completion whose candidate carries ``marker``."""
    return (
        f"Here you go.\n\n```python\nimport torch.nn as nn\n{marker}\n"
        f"class ModelNew(nn.Module):\n    def forward(self, x):\n        {body}\n```\n"
    )
