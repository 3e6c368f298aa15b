"""The findings drawn from one shape's rounds (timing/judgement.py), on synthetic facts: what
accuses, what only says the machine was too busy, and what is charged."""

from __future__ import annotations

from kernelproof.schema import FindingCheck, Severity
from kernelproof.timing.evidence import BatchEvidence, BatchFacts
from kernelproof.timing.judgement import EvidenceJudgement, judge_evidence


def _facts(reported_ms: float, wall_ms: float, cpu_ms: float, **extra: float) -> BatchFacts:
    main = extra.get("main_ms", cpu_ms)
    return BatchFacts(
        calls=10,
        reported_s=reported_ms / 1e3,
        wall_s=wall_ms / 1e3,
        cpu_s=cpu_ms / 1e3,
        main_cpu_s=main / 1e3,
        main_wait_s=extra.get("wait_ms", 0.0) / 1e3,
    )


def _judge(reference: BatchFacts, candidate: BatchFacts, median_s: float) -> EvidenceJudgement:
    evidence = BatchEvidence()
    for _ in range(6):
        evidence.add(reference, candidate)
    judgement = EvidenceJudgement("timing:default")
    judge_evidence(
        evidence,
        judgement,
        "default",
        median_s,
        evidence.untimed_cpu_excess(),
        allowed=1,
        fetch_excess=[],
        on_cpu=True,
    )
    return judgement


def _checks(judgement: EvidenceJudgement) -> set[tuple[str, Severity]]:
    return {(f.check.value, f.severity) for f in judgement.findings}


def test_an_honest_pair_leaves_nothing_to_say():
    judgement = _judge(_facts(5, 20, 19), _facts(2, 17, 16), 0.2e-3)
    assert judgement.findings == [] and judgement.comparable


def test_work_outside_the_calls_on_a_quiet_machine_is_suspect_and_charged():
    # Reported 0.5 ms for ten calls; its main thread ran 24.5 ms more outside them.
    judgement = _judge(_facts(5, 20, 19), _facts(0.5, 40, 39), 0.05e-3)
    assert (FindingCheck.UNTIMED_WORK.value, Severity.SUSPECT) in _checks(judgement)
    assert (FindingCheck.UNTIMED_WORK.value, Severity.INFO) in _checks(judgement)  # charged


def test_the_same_excess_on_a_busy_machine_is_inconclusive_never_suspect():
    # Its wall time is untimed, its main thread waited for a CPU most of each batch, and it
    # spent no more CPU outside its calls than the reference: the machine's time.
    busy = _facts(2, 100, 16, wait_ms=40)
    judgement = _judge(_facts(5, 20, 19), busy, 0.2e-3)
    assert not any(f.severity is Severity.SUSPECT for f in judgement.findings)
    assert (FindingCheck.TIMING_INCONCLUSIVE.value, Severity.INFO) in _checks(judgement)
    assert not judgement.comparable
    # Said once per rule, however many times the rule abstains.
    inconclusive = [f for f in judgement.findings if f.check is FindingCheck.TIMING_INCONCLUSIVE]
    assert len(inconclusive) == 1 and inconclusive[0].evidence["rule"] == "untimed-work"


def test_a_second_thread_is_suspect_and_a_smaller_one_is_charged():
    helper = _facts(2, 10, 20, main_ms=10)  # two cores busy at one allowed thread
    assert (FindingCheck.CPU_TIME.value, Severity.SUSPECT) in _checks(
        _judge(_facts(5, 10, 9.5, main_ms=9), helper, 0.2e-3)
    )
    # A helper below the rule's share (its CPU diluted by the harness's): charged, said so.
    small = _facts(2.5, 9.5, 11.0, main_ms=8.5, wait_ms=1.0)
    judgement = _judge(_facts(3, 9, 9.5, main_ms=9), small, 0.25e-3)
    assert _checks(judgement) == {(FindingCheck.CPU_TIME.value, Severity.INFO)}
    assert judgement.findings[0].evidence["charged_per_call_s"] > 0


def test_stolen_reference_rounds_are_reported():
    judgement = _judge(_facts(5, 40, 12), _facts(2, 17, 16), 0.2e-3)
    stolen = [f for f in judgement.findings if f.check is FindingCheck.REFERENCE_ROUND_STOLEN]
    assert stolen and stolen[0].evidence["discarded"] == 6
