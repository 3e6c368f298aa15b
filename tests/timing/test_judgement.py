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
        controller_wait_s=extra.get("controller_wait_ms", 0.0) / 1e3,
        paused_s=extra.get("paused_ms", 0.0) / 1e3,
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


def test_a_joined_pool_sampled_from_outside_is_not_accused_for_the_samplers_cpu():
    """A batch of the honest per-call relu pool (examples/honest/kernelbench/relu/
    thread_pool.py) on an idle machine, its timed rounds sampled by py-spy: the sampler ran
    32.4 ms of the 54.1 ms batch, but the pool's caller neither ran nor waited for 21.3 ms
    of it, and its pool worker ran 12.1 ms while it slept: the sampler held it at most 9 ms.
    Crediting all 32.4 ms as a pause left no sleep, and the pool was called two threads at
    once (31% of its CPU; ``suspect``, in CI and in the plain CLI)."""
    pool = _facts(42.13, 54.12, 38.97, main_ms=26.89, wait_ms=2.60, controller_wait_ms=3.29)
    sampled = _facts(
        42.13, 54.12, 38.97, main_ms=26.89, wait_ms=2.60, controller_wait_ms=3.29, paused_ms=32.41
    )
    reference = _facts(1.82, 8.3, 7.9, main_ms=7.8)
    assert _judge(reference, pool, 0.65e-3).comparable
    judgement = _judge(reference, sampled, 0.65e-3)
    assert not any(f.severity is Severity.SUSPECT for f in judgement.findings), judgement.findings
    # Undecided, and said so: its speed rests on what the sampler blurred.
    assert not judgement.comparable
    rules = {
        f.evidence.get("rule")
        for f in judgement.findings
        if f.check is FindingCheck.TIMING_INCONCLUSIVE
    }
    assert rules == {"cpu-time"}


def test_a_helper_beside_the_main_thread_is_accused_however_long_the_sampler_ran():
    # Two threads busy at once at one allowed thread, sampled: even with every moment the
    # main thread did not run read as its sleep, the helper's CPU exceeds it.
    helper = _facts(9, 10, 19, main_ms=9.5, paused_ms=5.0)
    judgement = _judge(_facts(5, 10, 9.5, main_ms=9), helper, 0.9e-3)
    assert (FindingCheck.CPU_TIME.value, Severity.SUSPECT) in _checks(judgement)
    assert not judgement.comparable
