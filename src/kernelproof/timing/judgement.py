"""Findings from the controller's own facts about one shape's timed rounds
(:mod:`kernelproof.timing.evidence`): stolen reference rounds, threads beside the calls, work
outside the timed calls or while the outputs were fetched, and what was charged to the
candidate's calls. A time-based rule that the machine's load leaves undecided says so
(``timing-inconclusive``) and never accuses; where the speedup rests on what that rule could
not decide (work outside the timed calls), the speedup is marked not comparable. A suspect
is said once per shape and check: later batches that raise it again are counted in its
evidence (``occurrences``), not repeated."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from kernelproof.schema import Finding, FindingCheck, Severity
from kernelproof.timing.evidence import (
    BESIDE_CPU_FLOOR_SHARE,
    MIN_EVIDENCE_ROUNDS,
    STOLEN_CPU_SHARE,
    BatchEvidence,
)

#: A batch whose workers waited for a CPU this share of its wall time (median over the
#: rounds, /proc schedstat) ran on a machine too busy for the untimed-work comparison: at a
#: load of 3.5 on 2 cores an honest triple row sum left 767 us more untimed time per call than
#: the reference in 2 runs of 4.
LOADED_WAIT_SHARE = 0.25

#: Verified rounds needed before the fetches' CPU time is judged.
MIN_FETCH_ROUNDS = 4

#: CPU seconds per fetch the candidate's threads besides the main one may take while its
#: outputs are fetched. Measured at a load of about 20 on 2 cores: an honest softmax's
#: fetches took 34-191 us there (the sandbox's waiting processes, woken by the thaw), attack
#: 36e's 0.8-2.1 ms.
FETCH_WORK_FLOOR_S = 1e-3


@dataclass
class EvidenceJudgement:
    """What one shape's rounds showed: its findings, and whether its speedup stays
    comparable."""

    variant: str
    """The findings' variant, ``timing:<shape>``."""

    findings: list[Finding] = field(default_factory=list)
    """Where its findings go (the timing session passes its own list)."""

    comparable: bool = True

    def suspect(self, check: str, message: str, **evidence: Any) -> None:
        for index, finding in enumerate(self.findings):
            if (
                finding.check == check
                and finding.variant == self.variant
                and finding.severity is Severity.SUSPECT
            ):
                seen = finding.evidence.get("occurrences", 1) + 1
                self.findings[index] = finding.model_copy(
                    update={"evidence": {**finding.evidence, "occurrences": seen}}
                )
                return
        self.findings.append(
            Finding(
                check=FindingCheck(check),
                severity=Severity.SUSPECT,
                message=message,
                evidence=evidence,
                variant=self.variant,
            )
        )

    def inconclusive(self, rule: str, message: str, **evidence: Any) -> None:
        """A time-based check (``rule``) the machine's load left undecided: said once per
        shape and rule, never as an accusation."""
        if any(
            f.check == FindingCheck.TIMING_INCONCLUSIVE
            and f.variant == self.variant
            and f.evidence.get("rule") == rule
            for f in self.findings
        ):
            return
        self.findings.append(
            Finding(
                check=FindingCheck.TIMING_INCONCLUSIVE,
                severity=Severity.INFO,
                message=message,
                evidence={"rule": rule, **evidence},
                variant=self.variant,
            )
        )


def judge_evidence(
    evidence: BatchEvidence,
    judgement: EvidenceJudgement,
    variant_label: str,
    reported_median_s: float,
    charge: float | None,
    allowed: int | None,
    fetch_excess: list[float],
    on_cpu: bool,
) -> None:
    """Findings from the kept rounds of one shape. ``reported_median_s``: the candidate's
    median call as it reported it; ``charge``: the untimed CPU per call added to its calls;
    ``allowed``: the thread count both workers were timed at (None off the CPU);
    ``fetch_excess``: per verified round, the candidate's CPU off the harness's thread while
    its outputs were fetched, beyond the reference's."""
    if evidence.stolen_rounds:
        judgement.findings.append(
            Finding(
                check=FindingCheck.REFERENCE_ROUND_STOLEN,
                severity=Severity.INFO,
                message=f"at {variant_label}, {evidence.stolen_rounds} round(s) were discarded: "
                f"the reference worker got less than {STOLEN_CPU_SHARE:.0%} of a core "
                "during its batch (stopped or starved), so the comparison was void",
                evidence={
                    "discarded": evidence.stolen_rounds,
                    "kept": len(evidence.reference) - evidence.stolen_rounds,
                },
                variant=judgement.variant,
            )
        )
    judge_cpu_time(evidence, judgement, reported_median_s, allowed, fetch_excess)
    excess = evidence.untimed_work(reported_median_s)
    if charge is not None:
        larger = excess is not None and excess > charge
        # Charged, never accused: an honest candidate's allocations can make the garbage
        # collector run outside its calls (an honest numba loss showed 1.8x its call), so
        # no size of excess tells forgery from that; charged, a forger gains nothing.
        judgement.findings.append(
            Finding(
                check=FindingCheck.UNTIMED_WORK,
                severity=Severity.INFO,
                message=f"at {variant_label}, the candidate's main thread spent "
                f"{charge * 1e6:.1f} us more CPU time per call outside its reported calls "
                "than the reference's (/proc, beyond the rounds' noise): "
                + (
                    "the larger untimed time of the controller's clock (untimed-work) was "
                    "added to each of its calls instead"
                    if larger
                    else "it was added to each of its calls before the speedup was computed"
                ),
                evidence={
                    "charged_per_call_s": excess if larger else charge,
                    "reported_median_s": reported_median_s,
                },
                variant=judgement.variant,
            )
        )
    wait_share = evidence.wait_share()
    if excess is not None and (charge is None or excess >= charge):
        shown = (
            f"; {excess * 1e6:.0f} us was added to each of its calls before the speedup "
            "was computed (the controller's clock, not the candidate's)"
        )
    else:
        shown = ""
    if excess is not None and wait_share > LOADED_WAIT_SHARE:
        # The machine, not the candidate, may have put the excess there: the speedup
        # goes, the accusation does not come.
        judgement.comparable = False
        judgement.inconclusive(
            "untimed-work",
            f"each timed call of the candidate left {excess * 1e6:.0f} us more untimed "
            f"time in its batch than the reference's did, but the workers waited for a CPU "
            f"{wait_share:.0%} of a batch's wall time (median, /proc schedstat): the "
            "machine is too busy to tell work outside the timed calls from load, so the "
            f"check is inconclusive and the speedup not comparable{shown}",
            excess_per_call_s=excess,
            wait_share=wait_share,
        )
    elif excess is not None and _cpu_saw_nothing(evidence, charge, on_cpu):
        # The candidate's main thread spent no more CPU outside its calls than the
        # reference's (/proc): the untimed wall time was not its work but the machine's
        # (an honest blocked sum showed 221 us a call beside another verification).
        judgement.comparable = False
        judgement.inconclusive(
            "untimed-work",
            f"each timed call of the candidate left {excess * 1e6:.0f} us more untimed "
            "time in its batch than the reference's did, but its main thread spent no more "
            "CPU time outside its calls than the reference's (/proc): the time was the "
            "machine's, not work of the candidate's, so the check is inconclusive and the "
            f"speedup not comparable{shown}",
            excess_per_call_s=excess,
        )
    elif excess is not None:
        judgement.suspect(
            FindingCheck.UNTIMED_WORK,
            f"each timed call of the candidate left {excess * 1e6:.0f} us more untimed "
            f"time in its batch than the reference's did (its median call: "
            f"{reported_median_s * 1e6:.0f} us): it works outside the timed calls "
            f"(during the cache flush or input generation) or under-reports its call times{shown}",
            excess_per_call_s=excess,
            candidate_median_s=reported_median_s,
        )
    beside = evidence.unpaused().beside_cpu_excess(allowed, reported_median_s)
    blurred = evidence.beside_cpu_excess(allowed, reported_median_s)
    if (
        blurred is not None
        and blurred - (beside or 0.0) > BESIDE_CPU_FLOOR_SHARE * reported_median_s
    ):
        # What its other threads did beside the calls depends on how long the sampler held
        # it paused, which is known only from above: the charge cannot be sized, so the
        # speedup is not shown as comparable.
        judgement.comparable = False
        judgement.inconclusive(
            "cpu-time",
            f"at {variant_label}, threads other than the candidate's main thread ran "
            f"{blurred * 1e6:.1f} us of CPU per call beside its calls if every moment the "
            "controller's stack sampler ran held it paused, "
            f"{(beside or 0.0) * 1e6:.1f} us if none did; the sampler's CPU time bounds its "
            "pauses from above only, so that work could not be charged to the calls, and the "
            "speedup is not comparable",
            charged_per_call_s=beside or 0.0,
            unpaused_bound_s=blurred,
            sampler_s=evidence.paused_s(),
        )
    if beside is not None:
        judgement.findings.append(
            Finding(
                check=FindingCheck.CPU_TIME,
                severity=Severity.INFO,
                message=f"at {variant_label}, threads other than the candidate's main thread "
                f"ran {beside * 1e6:.1f} us of CPU per call beside its calls, beyond the "
                "reference's (/proc, beyond the rounds' noise): work in parallel that one "
                "allowed thread would have done inside the calls, so it was added to each of "
                "its calls before the speedup was computed",
                evidence={"charged_per_call_s": beside},
                variant=judgement.variant,
            )
        )


def _cpu_saw_nothing(evidence: BatchEvidence, charge: float | None, on_cpu: bool) -> bool:
    """Whether, on CPU, /proc's accounting of the rounds shows no untimed CPU excess
    (a GPU's work outside the calls is not CPU time, so there it says nothing)."""
    if not on_cpu or charge is not None:
        return False
    usable = [c for c in evidence.candidate if c.main_cpu_s > 0]
    return len(usable) >= MIN_EVIDENCE_ROUNDS


def judge_cpu_time(
    evidence: BatchEvidence,
    judgement: EvidenceJudgement,
    candidate_median_s: float,
    allowed: int | None,
    fetch_excess: list[float],
) -> None:
    """Findings from CPU time alone (threads beside the main thread, work while fetched):
    the machine's load stretches wall times, not CPU times, so these are judged even when
    every round was void for the speedup."""
    # Accused only on the reading most lenient to it (no pause of the sampler's credited):
    # the sampler's CPU time bounds its pauses from above only (see BatchEvidence.unpaused).
    parallel = evidence.unpaused().too_many_cores(allowed)
    blurred = evidence.too_many_cores(allowed) if parallel is None else None
    if blurred is not None:
        cores, beside = blurred
        judgement.comparable = False
        judgement.inconclusive(
            "cpu-time",
            f"while it was timed at {allowed} thread(s), {beside:.0%} of the candidate's CPU "
            "time ran off its main thread while the main thread itself ran or waited for a "
            "CPU only if every moment the controller's stack sampler ran "
            f"({evidence.paused_s() * 1e3:.1f} ms a batch, median) held it paused; if none "
            "did, its other threads ran while its main thread slept (a pool it joins). The "
            "sampler's CPU time bounds its pauses from above only, so the check is "
            "inconclusive and the speedup not comparable",
            cores=cores,
            beside_main_thread_share=beside,
            allowed_threads=allowed,
            sampler_s=evidence.paused_s(),
        )
    if parallel is not None:
        cores, beside = parallel
        judgement.comparable = False
        judgement.suspect(
            FindingCheck.CPU_TIME,
            f"while it was timed at {allowed} thread(s), the candidate used {cores:.2f} "
            f"cores per batch, and {beside:.0%} of its CPU time ran off its main thread "
            "while the main thread itself ran or waited for a CPU (per-thread CPU and "
            "wait times from /proc against the controller's wall clock): it works on "
            "threads of its own beside the timed calls or behind the reported thread "
            "count, so its speedup is not comparable",
            cores=cores,
            beside_main_thread_share=beside,
            allowed_threads=allowed,
        )
    fetched = fetch_work(fetch_excess)
    if fetched is not None:
        judgement.suspect(
            FindingCheck.UNTIMED_WORK,
            f"while its timed outputs were fetched, threads other than the harness's took "
            f"{fetched * 1e6:.0f} us of CPU time per fetch (median over "
            f"{len(fetch_excess)} rounds, /proc; its median call: "
            f"{candidate_median_s * 1e6:.0f} us): it finishes its work while its "
            "outputs are fetched, outside the timed calls",
            fetch_side_cpu_s=fetched,
            rounds=len(fetch_excess),
            candidate_median_s=candidate_median_s,
        )


def fetch_work(excess_s: list[float]) -> float | None:
    """The median CPU seconds per fetch that the candidate's threads besides the main one
    took beyond the reference's, when it is work and not noise: at least
    :data:`MIN_FETCH_ROUNDS` verified rounds, the median past :data:`FETCH_WORK_FLOOR_S` and
    three quarters of the fetches past half of it. CPU time, not wall time: a loaded machine
    stretches a fetch's wall time, not its CPU time."""
    if len(excess_s) < MIN_FETCH_ROUNDS:
        return None
    median = statistics.median(excess_s)
    above = sum(e > FETCH_WORK_FLOOR_S / 2 for e in excess_s)
    if median > FETCH_WORK_FLOOR_S and above >= 0.75 * len(excess_s):
        return median
    return None
