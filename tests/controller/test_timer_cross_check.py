"""The timer cross-check separates the machine's delay from the candidate's work (issue 25
class 6): it accuses only a candidate whose processes ran for CPU time its clock did not count,
and never the candidate for a gap in another worker's clock."""

from __future__ import annotations

import random

import pytest

from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import resolve_settings
from kernelproof.controller.timing_session import Participant, TimingSession
from kernelproof.protocol.requests import TimeReply
from kernelproof.schema import FindingCheck, Severity
from kernelproof.tasks.variants import ShapeGroup
from kernelproof.timing.evidence import BatchFacts

GROUP = ShapeGroup(label="default", knobs={"dim": 64}, is_default=True)


def _session() -> TimingSession:
    return TimingSession(
        pair=None,
        settings=resolve_settings(overrides={"threads": 1}),  # type: ignore[arg-type]  # the cross-check asks the pair nothing
        init_seed=0,
        policy=TolerancePolicy(),
        rng=random.Random(0),
    )


def _judge(
    role: str, reported_s: float, wall_s: float, cpu_s: float, wait_s: float = 0.0
) -> list[tuple[str, Severity]]:
    session = _session()
    data = TimeReply(times=[reported_s / 10] * 10, generation_s=0.0, timed_wall_s=reported_s)
    facts = BatchFacts(
        calls=10,
        reported_s=reported_s,
        wall_s=wall_s,
        cpu_s=cpu_s,
        main_cpu_s=cpu_s,
        main_wait_s=wait_s,
    )
    session._cross_check(Participant(role=role, baseline="eager"), data, facts, GROUP)
    return [(str(f.check), f.severity) for f in session.findings]


def test_a_patched_clock_that_ran_far_more_cpu_than_it_reported_is_suspect():
    assert _judge("candidate", reported_s=0.002, wall_s=0.078, cpu_s=0.075) == [
        ("timer-cross-check", Severity.SUSPECT)
    ]


def test_a_candidate_that_did_not_run_for_the_gap_is_inconclusive_not_suspect():
    """At load ~20 an honest worker reported 2 ms of a 78 ms batch: it ran 3 ms of CPU; the
    rest it was blocked or descheduled, which schedstat's wait does not always show."""
    findings = _judge("candidate", reported_s=0.002, wall_s=0.078, cpu_s=0.003, wait_s=0.022)
    assert findings == [(str(FindingCheck.TIMING_INCONCLUSIVE), Severity.INFO)]


@pytest.mark.parametrize("role", ["reference", "baseline"])
def test_a_gap_in_another_workers_clock_never_accuses_the_candidate(role):
    findings = _judge(role, reported_s=0.002, wall_s=0.078, cpu_s=0.075)
    assert findings == [(str(FindingCheck.TIMING_INCONCLUSIVE), Severity.INFO)]


def test_nonsense_times_stay_suspect_whoever_reports_them():
    session = _session()
    data = TimeReply(times=[float("nan")], generation_s=0.0, timed_wall_s=float("nan"))
    facts = BatchFacts(calls=1, reported_s=float("nan"), wall_s=0.1, cpu_s=0.001)
    session._cross_check(Participant(role="candidate", baseline="eager"), data, facts, GROUP)
    assert [f.severity for f in session.findings] == [Severity.SUSPECT]


def test_a_batch_the_clock_accounts_for_raises_nothing():
    assert _judge("candidate", reported_s=0.07, wall_s=0.078, cpu_s=0.075) == []
