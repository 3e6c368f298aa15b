"""The timing phase, driven by the controller: interleaved, shuffled rounds on fresh inputs.

Each participant (the reference, the candidate, and at the default shape the reference under
``torch.compile``) is timed in its own worker. A round draws fresh seeds, and each participant
times one batch of calls on inputs built from them, in shuffled order. After every candidate
batch, the controller picks calls at random and verifies their outputs against the reference:
a candidate that answers correctly only when checked (caches, batch-and-skip, evaluator mode)
is caught here. Stopping is adaptive on the speedup's confidence interval, within the budget.
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any

from kernelproof.checks.tolerance import TolerancePolicy, compare_output
from kernelproof.config import Settings
from kernelproof.protocol.requests import (
    FetchRequest,
    RunRequest,
    TimeReply,
    TimeRequest,
    WorkerRequest,
    WorkRequest,
)
from kernelproof.schedstat import SchedulerSample
from kernelproof.schema import (
    Baselines,
    Finding,
    FindingCheck,
    InputVariant,
    Severity,
    ShapeTiming,
    Timing,
    VariantKind,
    Verdict,
)
from kernelproof.tasks.variants import ShapeGroup
from kernelproof.timing import (
    StoppingRule,
    controller_cross_check,
    implausibly_fast,
    round_speedup_interval,
    summarize,
)
from kernelproof.timing.bootstrap import MIN_BOOTSTRAP_ROUNDS
from kernelproof.timing.cross_check import MIN_CROSS_CHECK_WALL_S
from kernelproof.timing.device_lock import device_timing_lock
from kernelproof.timing.evidence import (
    BatchEvidence,
    BatchFacts,
)
from kernelproof.timing.judgement import EvidenceJudgement, judge_cpu_time, judge_evidence
from kernelproof.workers.pair import WorkerPair, prepare_request, worker_threads
from kernelproof.workers.process import Response

#: Calls per participant before measuring, per shape: first-call costs (compilation, page
#: faults, allocator growth) must not enter the samples.
WARMUP_CALLS = 3

#: A batch should take about this long (calls, cache flushes and input generation together):
#: long enough that the per-batch round trip is small next to it, short enough that rounds
#: interleave often and drift cancels.
TARGET_BATCH_S = 0.06

MIN_BATCH, MAX_BATCH = 2, 1024

#: Calls per batch allowed whatever their outputs weigh (the workers keep a batch's outputs
#: until the round is verified) ...
OUTPUT_BOUND_BATCH = 64

#: ... and, past it, as many as this many bytes of outputs hold. Short calls then get batches
#: of :data:`TARGET_BATCH_S` too: capped at 64 calls, a batch of 7 us softmax calls lasted
#: 2 ms, next to 1-2 ms of round trip, settling call and bookkeeping per batch, and the
#: reference's duty cycle was 0.10.
MAX_BATCH_OUTPUT_BYTES = 64 << 20

#: Output bytes of timed calls compared per round at most. Both workers already hold their
#: outputs of the round's seeds, so a comparison costs two transfers and the comparator: every
#: call for outputs up to ~1 MiB; a random share of the calls above that, so that checking
#: never dominates the timing budget.
MAX_VERIFIED_BYTES_PER_ROUND = 32 << 20

#: Share of the timing phase that verifying timed outputs may take, on average. Comparing the
#: outputs of one 16 MiB call took 0.2 s here, four times a round of timed calls: verifying
#: every round left the LayerNorm suite task 6 samples per side in the quick budget. Past this
#: share, each round is verified with a probability that keeps to it, drawn after the round's
#: batches have run, so a candidate never knows whether its outputs will be checked.
VERIFY_SHARE = 0.25

#: What a calibration's source says when it was taken on a busy machine and not cached
#: (roofline/calibration.py): its ceilings read low.
NOISY_CALIBRATION = "taken on a noisy machine"

#: Seconds of the candidate's calls the default shape's rounds gather, at least, while its
#: stacks are sampled from outside: at 100 samples a second and a kernel taking half a call,
#: enough for the timed window's kernel evidence (``MIN_TIMED_KERNEL_SAMPLES``) ...
TIMED_STACKS_CALL_S = 0.4

#: ... as long as the default shape's rounds have run for less than this many times its budget
#: (a loaded machine gives the calls a small share of the rounds' wall time).
TIMED_STACKS_STRETCH = 2.0

#: Share of the budget the default shape gets when other shapes are timed too.
DEFAULT_SHAPE_SHARE = 0.5

#: A cold-cache median below this share of the floor time is physically implausible; the
#: margin absorbs error in datasheet ceilings.
BELOW_FLOOR_MARGIN = 0.8

#: The margin when the ceilings were measured here (``kernelproof calibrate``): a calibration
#: taken while the machine was busy reads low, and oneDNN convolutions beat torch's own GEMM
#: that calibrates the FLOP ceiling (an honest ResNet block ran at 0.77x such a floor).
BELOW_CALIBRATED_FLOOR_MARGIN = 0.5


#: A batch whose worker ran for no more CPU than this many times what its clock reported (per
#: thread), plus :data:`CPU_EXCUSE_S` of the harness's own work (IPC, flushes), did no work its
#: clock missed: a wall-time gap beyond it is the machine's delay, not the candidate's.
CPU_EXCUSE_FACTOR = 1.5
CPU_EXCUSE_S = 0.01


@dataclass
class Participant:
    role: str  # "reference", "candidate" or "baseline" (the reference in a worker of its own)
    baseline: str  # "eager" or "compile"
    samples: list[float] = field(default_factory=list)
    rounds: list[list[float]] = field(default_factory=list)
    """The samples again, one list per round (batch), for the round-level bootstrap."""

    error: str | None = None

    @property
    def label(self) -> str:
        return self.role if self.baseline == "eager" else f"{self.role}+{self.baseline}"


@dataclass
class TimingSession:
    pair: WorkerPair
    settings: Settings
    init_seed: int
    policy: TolerancePolicy
    rng: random.Random
    findings: list[Finding] = field(default_factory=list)
    verified_calls: int = 0
    batches: int = 0
    ceilings: Any = None
    """The device's ceilings (a Ceilings model), for each shape's floor time; None skips it."""

    work: dict[str, dict[str, Any]] = field(default_factory=dict)
    """FLOPs and bytes of one reference call, per shape label."""

    deaths: list[str] = field(default_factory=list)
    """Why timing ended early: a worker that died, or rounds that were all void."""

    stolen_rounds: int = 0
    comparable: bool = True
    """False when the candidate used more cores than it was timed at."""

    own_errors: dict[int, Any] = field(default_factory=dict)
    """The reference's own error per output (OwnError), learned in the correctness matrix."""

    bounds: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    """Per shape group and output, the largest forward error bound learned in the matrix
    (one element's, the RMS; absolute): a timed output may differ from the reference's timed
    output by twice it, as both may lose that much."""

    inside_s: dict[str, float] = field(default_factory=dict)
    """Per participant, seconds inside its timed calls (its worker's report), for the duty
    cycle."""

    batch_wall_s: dict[str, float] = field(default_factory=dict)
    """Per participant, the controller's wall seconds around its batches."""

    pooled: bool | None = None
    """Whether timed calls take their inputs from the workers' input pools: with
    ``input_pool`` on, once the reference's own error is known for its outputs (a pooled
    call's inputs cannot be rebuilt from its seed for a fresh float64 oracle)."""

    stacks: Any = None
    """A :class:`~kernelproof.controller.native_audit.TimedStacks` that samples both
    workers from outside while the default shape's rounds run, or None."""

    _verify_cost_s: float | None = None
    """What verifying the last verified round's outputs took."""

    _last_stop: str = ""
    _flush_method: str = ""
    _output_bytes_per_call: int = 0
    _fetch_excess: list[float] = field(default_factory=list)
    """Per verified round of the shape being timed: CPU seconds of the candidate's threads
    other than the main one while its outputs were fetched, beyond the reference's."""

    def run(self, groups: list[ShapeGroup]) -> Timing | None:
        """Time every group (the default first). None when the default cannot be timed.
        Holds the device's timing lock: no two timing phases share a device."""
        with device_timing_lock(self.settings.device):
            return self._run(groups)

    def _run(self, groups: list[ShapeGroup]) -> Timing | None:
        started = time.monotonic()
        if self.pooled is None:
            self.pooled = self.settings.input_pool and bool(self.own_errors)
        others = [g for g in groups if not g.is_default] if self.settings.timing_shapes else []
        default = next(g for g in groups if g.is_default)
        share = DEFAULT_SHAPE_SHARE if others else 1.0
        default_timing, compiled = self._time_shape(
            default, self.settings.budget_s * share, compile_baseline=self.settings.compile_baseline
        )
        if default_timing is None:
            return None
        per_shape = [default_timing]
        for index, group in enumerate(others):
            remaining = self.settings.budget_s - (time.monotonic() - started)
            if remaining <= 0:
                break
            shape_timing, _ = self._time_shape(
                group, remaining / (len(others) - index), compile_baseline=False
            )
            if shape_timing is not None:
                per_shape.append(shape_timing)
        return self._timing(default_timing, per_shape, compiled, time.monotonic() - started)

    # -- one shape -------------------------------------------------------------------------

    def _time_shape(
        self, group: ShapeGroup, budget_s: float, compile_baseline: bool
    ) -> tuple[ShapeTiming | None, Participant | None]:
        if not self._prepare(group):
            return None, None
        participants = [Participant("reference", "eager"), Participant("candidate", "eager")]
        if compile_baseline:
            baseline = Participant("baseline", "compile")
            if not self.pair.ask_baseline(prepare_request(group.knobs, self.init_seed)).ok:
                baseline.error = "the baseline worker could not prepare the reference"
            participants.append(baseline)
        self._sample_stacks(group)
        per_call_s = self._warm_up([p for p in participants if p.error is None])
        if any(p.error for p in participants[:2]):
            return None, None
        batch = _batch_size(per_call_s, self._output_bytes_per_call)
        rule = StoppingRule(
            target_half_width=self.settings.target_ci,
            min_rounds=self.settings.min_rounds,
            max_rounds=self.settings.max_rounds,
            budget_s=budget_s,
            grace_rounds=MIN_BOOTSTRAP_ROUNDS,
        )
        active = [p for p in participants if p.error is None]
        started, rounds = time.monotonic(), 0
        stretched = False  # rounds went on past the rule's stop, for the timed stacks
        per_call_costs: list[float] = []
        reference, candidate = participants[0], participants[1]
        evidence = BatchEvidence()
        self._fetch_excess = []
        estimate = None
        while True:
            seeds = [self.rng.randrange(2**31) for _ in range(batch)]
            round_started = time.monotonic()
            batches: dict[str, tuple[list[float], BatchFacts]] = {}
            for participant in self.rng.sample(active, len(active)):
                timed = self._time_batch(participant, seeds, group)
                if timed is None:
                    if participant is candidate or participant is reference:
                        return None, None
                    active.remove(participant)
                else:
                    batches[participant.label] = timed
            timed_s = time.monotonic() - round_started
            # Verified after the whole round, so that the reference run it needs never sits
            # between a participant's batches (it would disturb the next batch's allocator).
            if self._verifies_round(timed_s):
                verify_started = time.monotonic()
                self._verify_timed_outputs(seeds, group)
                self._verify_cost_s = time.monotonic() - verify_started
            rounds += 1
            # Re-size from what a round really costs (warm-up calls overestimate it), as the
            # median over the rounds so far: sized from the last round alone, the batch
            # swung with every slow round (4, 11, 5, 13 calls), and each new largest batch
            # made the workers reserve and touch memory for its outputs, in the budget.
            per_call_costs.append(timed_s / len(active) / batch)
            batch = _batch_size(statistics.median(per_call_costs), self._output_bytes_per_call)
            if evidence.add(batches[reference.label][1], batches[candidate.label][1]):
                for participant in active:
                    participant.samples += batches[participant.label][0]
                    participant.rounds.append(batches[participant.label][0])
            if candidate.rounds:
                estimate = round_speedup_interval(
                    reference.rounds, candidate.rounds, rng=self.rng.randrange(2**31)
                )
            decision = rule.decide(estimate, rounds, time.monotonic() - started)
            if not decision.stop:
                continue
            if not self._stacks_too_thin(group, evidence, time.monotonic() - started, budget_s):
                break
            stretched = True
        if self.stacks is not None:
            self.stacks.interrupt()  # py-spy writes its profiles while later shapes run
        if estimate is None:
            self._suspect_rounds(evidence, group)
            calls = [b.reported_s / b.calls for b in evidence.candidate if b.calls]
            judgement = self._judgement(group)
            median_s = statistics.median(calls) if calls else 0.0
            judge_cpu_time(evidence, judgement, median_s, self._allowed(), self._fetch_excess)
            self.comparable = self.comparable and judgement.comparable
            return None, None
        compiled = participants[2] if compile_baseline else None
        reported_median_s = summarize(candidate.samples).median_s
        charge = evidence.untimed_cpu_excess()
        # Time its clock missed, beyond the rounds' noise, is charged to its calls, so that the
        # speedup shown rests on what the controller saw, not on what the candidate reported:
        # CPU time from /proc, or, where the wall-time rule fires (suspect, or inconclusive on
        # a busy machine, where the speedup is void anyway), the controller's own clock. A
        # forger reported at 1.63x on a busy machine, its speedup void, is shown near its true
        # 0.08x.
        # Charged on the reading most lenient to it: how much of the stack sampler's CPU
        # time held it paused is known from above only (where that leaves the charge
        # unsized, judge_evidence voids the speedup instead).
        charged = evidence.unpaused().charge(reported_median_s, self._allowed())
        if charged is not None and candidate.rounds:
            candidate.rounds = [[t + charged for t in calls] for calls in candidate.rounds]
            candidate.samples = [t + charged for t in candidate.samples]
            estimate = round_speedup_interval(
                reference.rounds, candidate.rounds, rng=self.rng.randrange(2**31)
            )
        shape = ShapeTiming(
            variant=group.label,
            knobs=group.knobs,
            reference=summarize(reference.samples),
            candidate=summarize(candidate.samples),
            speedup=estimate.speedup,
            speedup_ci=(estimate.low, estimate.high),
            floor_s=self._floor(group),
        )
        self._last_stop = _stop_reason(decision.reason, stretched, evidence.candidate_calls_s())
        self._noise(shape)
        judgement = self._judgement(group)
        judge_evidence(
            evidence,
            judgement,
            group.label,
            reported_median_s,
            charge,
            self._allowed(),
            self._fetch_excess,
            on_cpu=self.settings.device == "cpu",
        )
        self.stolen_rounds += evidence.stolen_rounds
        self.comparable = self.comparable and judgement.comparable
        return shape, compiled

    def _allowed(self) -> int | None:
        """The thread count the CPU rules hold the candidate to (None off the CPU)."""
        return worker_threads(self.settings) if self.settings.device == "cpu" else None

    def _sample_stacks(self, group: ShapeGroup) -> None:
        """Start sampling the workers' stacks from outside for the default shape's timed
        rounds (HACKS row 35: the evidence that the timed code is the candidate's own comes
        from the timed calls themselves)."""
        if self.stacks is not None and group.is_default:
            self.stacks.start()

    def _stacks_too_thin(
        self, group: ShapeGroup, evidence: BatchEvidence, elapsed_s: float, budget_s: float
    ) -> bool:
        """Whether the default shape's rounds must go on because the stacks sampled from
        outside hold too little of the candidate's calls to be evidence (HACKS row 35:
        beside another verification, attack 35c's timed window held 2 kernel samples, and
        its passthrough was verified): the candidate's time inside its calls, as the lesser
        of what it reported and what /proc saw its main thread run, is below
        :data:`TIMED_STACKS_CALL_S`, within :data:`TIMED_STACKS_STRETCH` times the budget.
        More rounds are rounds like the others, so the candidate cannot tell them apart."""
        if self.stacks is None or not group.is_default:
            return False
        if elapsed_s >= TIMED_STACKS_STRETCH * budget_s:
            return False
        return evidence.candidate_calls_s() < TIMED_STACKS_CALL_S

    def _prepare(self, group: ShapeGroup) -> bool:
        return self.pair.prepare(group.knobs, self.init_seed).ok

    def _warm_up(self, participants: list[Participant]) -> float:
        """Warm every participant. Returns the slower of the reference's and the candidate's
        wall time per timed call, cache flush and input generation included."""
        seeds = [self.rng.randrange(2**31) for _ in range(WARMUP_CALLS)]
        per_call_s = 0.0
        for participant in participants:
            wall_started = time.monotonic()
            response = self._ask(participant, self._header(participant, seeds))
            if not response.ok:
                participant.error = response.failure[:500]
                continue
            data = response.data
            self._account(participant, data, time.monotonic() - wall_started)
            if participant.baseline == "eager":
                spent = data.generation_s + data.timed_wall_s
                per_call_s = max(per_call_s, spent / WARMUP_CALLS)
        return per_call_s

    def _time_batch(
        self, participant: Participant, seeds: list[int], group: ShapeGroup
    ) -> tuple[list[float], BatchFacts] | None:
        """One batch: the reported per-call times and the controller's own facts around it.
        None when the batch failed (and, for the reference or the candidate, timing ends)."""
        worker = {"candidate": self.pair.candidate, "baseline": self.pair.baseline}.get(
            participant.role, self.pair.reference
        )
        wall_started = time.monotonic()
        response = self._ask(participant, self._header(participant, seeds))
        wall_s = time.monotonic() - wall_started
        request = request_facts(worker)
        if request is not None:
            # From sending the request to reading its reply, without the freeze (and thaw)
            # around it: the window in which the worker could run.
            wall_s, sched = request
        else:
            sched = SchedulerSample(0.0, 0.0, 0.0, 0.0)
        if not response.ok:
            participant.error = response.failure[:500]
            if participant.role == "candidate":
                self.findings.append(
                    Finding(
                        check=FindingCheck("timing-crash"),
                        severity=Severity.FAIL,
                        forces=Verdict.BROKEN,
                        message=f"the candidate failed while being timed: {participant.error}",
                        variant=group.label,
                    )
                )
            if response.death is not None:
                self.deaths.append(f"{participant.label}: {response.death.message}")
            return None
        data = response.data
        times = data.times
        if len(times) != len(seeds) or not all(math.isfinite(t) and t > 0 for t in times):
            message = (
                f"the {participant.label} worker reported impossible per-call times "
                "(missing, zero, negative or not finite)"
            )
            if participant.role == "candidate":
                self._suspect("timer-values", message, group, reported=times[:10])
            else:
                # Not the candidate's doing: it cannot reach another worker's clock (its
                # sandbox, its frozen tree). That participant's timing is void, no more.
                participant.error = message
                self.deaths.append(message)
                self._inconclusive(
                    group,
                    "timer-values",
                    f"{message}: the candidate cannot reach that worker, so the timing of "
                    "this shape is void, not evidence against the candidate",
                    reported=times[:10],
                )
            return None
        facts = BatchFacts(
            calls=len(times),
            reported_s=sum(times),
            wall_s=wall_s,
            cpu_s=sched.cpu_s,
            main_cpu_s=sched.main_run_s,
            main_wait_s=sched.main_wait_s,
            controller_wait_s=sched.controller_wait_s,
            paused_s=min(sched.sampler_busy_s, wall_s),
        )
        self._cross_check(participant, data, facts, group)
        self._account(participant, data, wall_s)
        self._flush_method = str(data.flush if data.flush is not None else self._flush_method)
        self.batches += 1
        if participant.role == "candidate":
            from kernelproof.checks.observations import findings_from_observations

            assert response.reply is not None
            self.findings += findings_from_observations(
                response.reply.observations, variant=f"timing:{group.label}"
            )
        return times, facts

    def _verifies_round(self, round_s: float) -> bool:
        """Whether this round's timed outputs are verified: always while verifying costs at
        most :data:`VERIFY_SHARE` of a round, otherwise at random with the probability that
        keeps it to that share (the first round is always verified, to learn the cost)."""
        if self._verify_cost_s is None or self._verify_cost_s <= 0:
            return True
        chance = VERIFY_SHARE * round_s / ((1 - VERIFY_SHARE) * self._verify_cost_s)
        return self.rng.random() < chance

    def _account(self, participant: Participant, data: TimeReply, wall_s: float) -> None:
        inside = sum(t for t in data.times if math.isfinite(t) and t > 0)
        self.inside_s[participant.label] = self.inside_s.get(participant.label, 0.0) + inside
        self.batch_wall_s[participant.label] = (
            self.batch_wall_s.get(participant.label, 0.0) + wall_s
        )

    def duty_cycle(self, elapsed_s: float) -> dict[str, float]:
        """The report's ``timing.duty_cycle`` (see :class:`kernelproof.schema.Timing`)."""
        cycle = {
            label: self.inside_s.get(label, 0.0) / wall
            for label, wall in self.batch_wall_s.items()
            if label in ("reference", "candidate") and wall > 0
        }
        if elapsed_s > 0:
            cycle["phase"] = sum(self.inside_s.values()) / elapsed_s
        return cycle

    def _suspect_rounds(self, evidence: BatchEvidence, group: ShapeGroup) -> None:
        self.deaths.append(
            f"every one of the {evidence.stolen_rounds} rounds at {group.label} "
            "was void: the reference worker never got the CPU it needed"
        )

    def _cross_check(
        self, participant: Participant, data: TimeReply, facts: BatchFacts, group: ShapeGroup
    ) -> None:
        """The worker's clock against the controller's, over the batch's wall time less the
        time the scheduler kept the worker's main thread (or the controller) waiting for a
        CPU: on a loaded machine a worker wakes late and its reply is read late, and neither is
        time its clock should have counted. What the wait does not explain is the worker's."""
        reported = [data.generation_s, data.timed_wall_s]
        wall_s = facts.wall_s
        ratio = controller_cross_check(reported, wall_s)
        if not implausibly_fast(ratio, wall_s):
            return
        if participant.role != "candidate" and not math.isnan(ratio):
            # The candidate cannot reach another worker's clock (its sandbox, its frozen tree):
            # a gap there is the machine's doing, never evidence against the candidate.
            self._inconclusive(
                group,
                "timer-cross-check",
                f"the {participant.label} worker's clock accounted "
                f"for {ratio:.1%} of a {wall_s * 1e3:.0f} ms batch; the candidate cannot reach "
                "that worker, so the gap is the machine's (a loaded machine also delays a "
                "process it does not make wait for a CPU: page faults, I/O), and the "
                "cross-check is void for that batch",
                wall_s=wall_s,
                ratio=ratio,
            )
            return
        running_s = facts.wall_s - facts.excusable_wait_s
        if running_s < MIN_CROSS_CHECK_WALL_S or not implausibly_fast(
            controller_cross_check(reported, running_s), running_s
        ):
            self._inconclusive(
                group,
                "timer-cross-check",
                f"the {participant.label} worker's clock accounted for {ratio:.1%} of "
                f"a {wall_s * 1e3:.0f} ms batch, but the machine kept it (or the controller) "
                f"waiting for a CPU for {facts.excusable_wait_s * 1e3:.0f} ms of it (/proc "
                "schedstat), which explains the gap: the cross-check is void for that batch",
                wall_s=wall_s,
                wait_s=facts.excusable_wait_s,
                ratio=ratio,
            )
            return
        if self._ran_no_more_than_reported(reported, facts) and not math.isnan(ratio):
            self._inconclusive(
                group,
                "timer-cross-check",
                f"the {participant.label} worker's clock accounted "
                f"for {ratio:.1%} of a {wall_s * 1e3:.0f} ms batch, but its processes ran for "
                f"only {facts.cpu_s * 1e3:.0f} ms of CPU in it (/proc), no more than its clock "
                "reported: it was not running for the rest (blocked or descheduled by the "
                "machine), so no work escaped its clock; the cross-check is void for that batch",
                wall_s=wall_s,
                cpu_s=facts.cpu_s,
                ratio=ratio,
            )
            return
        self._suspect(
            "timer-cross-check",
            f"the {participant.label} worker's clock accounts for {ratio:.1%} of the "
            f"{wall_s * 1e3:.0f} ms the controller measured around a batch, and waiting for a "
            f"CPU explains only {facts.excusable_wait_s * 1e3:.0f} ms of it (/proc schedstat): "
            "its timer does not measure real time",
            group,
            ratio=ratio,
            wall_s=wall_s,
            wait_s=facts.excusable_wait_s,
        )

    def _ran_no_more_than_reported(self, reported: list[float], facts: BatchFacts) -> bool:
        """Whether, on CPU, the worker's processes (every thread) ran for no more CPU time in
        the batch than its clock reported, times its threads, plus the harness's own work: a
        patched clock or work outside the timed calls needs CPU the clock did not count."""
        if self.settings.device != "cpu" or facts.cpu_s <= 0:
            return False  # no CPU facts to go by (a GPU's work is not CPU time)
        threads = worker_threads(self.settings) or os.cpu_count() or 1
        return facts.cpu_s <= CPU_EXCUSE_FACTOR * threads * sum(reported) + CPU_EXCUSE_S

    def _inconclusive(self, group: ShapeGroup, rule: str, message: str, **evidence: Any) -> None:
        self._judgement(group).inconclusive(rule, message, **evidence)

    def _verify_timed_outputs(self, seeds: list[int], group: ShapeGroup) -> None:
        """Compare the candidate's timed outputs with the reference's timed outputs of the same
        seeds (both workers timed them this round): every call, unless their outputs exceed
        :data:`MAX_VERIFIED_BYTES_PER_ROUND`, then a random share. A candidate that answers
        right only when checked, or goes wrong on a rare call, is caught here. The tolerance is
        the reference's own error, learned in the matrix, or what any correct order may lose
        at this shape (the forward error bound learned there), the wider; an output without
        one is checked against a fresh float64 oracle instead, one call per round."""
        count = len(seeds)
        if self._output_bytes_per_call:
            count = max(1, min(count, MAX_VERIFIED_BYTES_PER_ROUND // self._output_bytes_per_call))
        chosen = sorted(self.rng.sample(range(len(seeds)), count))
        fetch = FetchRequest(indices=chosen, baseline="eager")
        fetched = self.pair.ask_candidate(fetch)
        if fetched.reply is not None:  # the tamper diff runs on this reply, not on batches
            from kernelproof.checks.observations import findings_from_observations

            self.findings += findings_from_observations(
                fetched.reply.observations, variant=f"timing:{group.label}"
            )
        if not fetched.ok:
            if fetched.death is None:
                self._timed_output_failure(
                    group,
                    seeds[chosen[0]],
                    [f"the candidate did not hand over its timed outputs: {fetched.failure}"],
                )
            return
        candidate_fetch = request_facts(self.pair.candidate)
        reference = self.pair.ask_reference(fetch)
        if not reference.ok:
            return
        reference_fetch = request_facts(self.pair.reference)
        if candidate_fetch is not None and reference_fetch is not None:
            # The harness answers a fetch on its main thread, in both workers alike: CPU time
            # of the candidate's other threads and processes beyond the reference's is work
            # done while it was asked for nothing but its outputs.
            self._fetch_excess.append(candidate_fetch[1].side_cpu_s - reference_fetch[1].side_cpu_s)
        candidate_calls = _split(fetched.tensors, fetched.data.counts)
        reference_calls = _split(reference.tensors, reference.data.counts)
        self._output_bytes_per_call = max(
            1,
            max(
                (sum(t.numel() * t.element_size() for t in call) for call in reference_calls),
                default=1,
            ),
        )
        learned = self.bounds.get(group.label, {})
        for index, cand, ref in zip(chosen, candidate_calls, reference_calls):
            problems = (
                [] if len(cand) == len(ref) else [f"{len(cand)} outputs instead of {len(ref)}"]
            )
            unlearned = False
            for position, (c, r) in enumerate(zip(cand, ref)):
                own = self.own_errors.get(position)
                if own is not None and position in learned:
                    own = replace(
                        own, bound_element=learned[position][0], bound_norm=learned[position][1]
                    )
                if own is None and r.is_floating_point():
                    unlearned = True
                    continue
                result = compare_output(c, r, r, policy=self.policy, own_error=own)
                if not result.passed:
                    problems.append(f"output {position}: {result.detail}")
            if unlearned and index == chosen[0] and not problems:
                if self.pooled:
                    # This call's pooled inputs cannot be rebuilt for the oracle: later
                    # rounds build every input from its seed again, and are checked so.
                    self.pooled = False
                else:
                    problems += self._against_oracle(seeds[index], cand)
            self.verified_calls += 1
            if problems:
                self._timed_output_failure(group, seeds[index], problems)
                return

    def _against_oracle(self, seed: int, outputs: list[Any]) -> list[str]:
        """Compare one timed call's outputs with a fresh reference run and its float64 oracle."""
        variant = InputVariant(name=f"timed:{seed}", kind=VariantKind.SEED, seed=seed)
        reference = self.pair.ask_reference(
            RunRequest(variant=variant, oracle=True, record_ops=False, forward_bound=True)
        )
        if not reference.ok:
            return []
        n = sum(d.get("kind") == "tensor" for d in reference.data.outputs)
        ref_out, oracle = reference.tensors[:n], reference.tensors[n : 2 * n]
        problems = [] if len(outputs) == n else [f"{len(outputs)} outputs instead of {n}"]
        from kernelproof.controller.matrix import forward_bounds_of

        bounds = forward_bounds_of(reference, reference.data)
        for position, (cand, ref, orc) in enumerate(zip(outputs, ref_out, oracle)):
            bound = bounds[position] if position < len(bounds) else None
            result = compare_output(cand, ref, orc, policy=self.policy, bound=bound)
            if not result.passed:
                problems.append(result.detail)
        return problems

    def _timed_output_failure(self, group: ShapeGroup, seed: int, problems: list[str]) -> None:
        self.findings.append(
            Finding(
                check=FindingCheck.TIMED_OUTPUT,
                severity=Severity.FAIL,
                forces=Verdict.INCORRECT,
                message="the output of a timed call is outside the tolerance although untimed "
                "calls were within it: the candidate fails on some calls (rare inputs, or "
                f"only while timed): {problems[0]}",
                evidence={
                    "seed": seed,
                    "problems": problems[:3],
                    "verified_before": self.verified_calls,
                },
                variant=f"timing:{group.label}",
            )
        )

    def _floor(self, group: ShapeGroup) -> float | None:
        response = self.pair.ask_reference(WorkRequest(seed=self.init_seed))
        if not response.ok or self.ceilings is None:
            return None
        from kernelproof.roofline import WorkCount, floor_time

        data = response.data
        self.work[group.label] = data.model_dump()
        return floor_time(WorkCount(flops=data.flops, bytes=data.bytes), self.ceilings)

    def _noise(self, shape: ShapeTiming) -> None:
        for label, stats in (("reference", shape.reference), ("candidate", shape.candidate)):
            if stats.note:
                self.findings.append(
                    Finding(
                        check=FindingCheck("timing-noise"),
                        severity=Severity.INFO,
                        message=f"{label} timing at {shape.variant}: {stats.note}",
                        variant=f"timing:{shape.variant}",
                    )
                )

    def _header(self, participant: Participant, seeds: list[int]) -> TimeRequest:
        return TimeRequest(
            seeds=seeds,
            settle_seed=self.rng.randrange(2**31),
            baseline=participant.baseline,
            hot=self.settings.hot,
            pooled=bool(self.pooled),
            cache_flush=self.settings.cache_flush,
            threads=worker_threads(self.settings),
            graphs=self.settings.cuda_graphs,
        )

    def _ask(self, participant: Participant, header: WorkerRequest) -> Response:
        if participant.role == "candidate":
            return self.pair.ask_candidate(header)
        if participant.role == "baseline":
            return self.pair.ask_baseline(header)
        return self.pair.ask_reference(header)

    def _suspect(self, check: str, message: str, group: ShapeGroup, **evidence: Any) -> None:
        self._judgement(group).suspect(check, message, **evidence)

    def _judgement(self, group: ShapeGroup) -> EvidenceJudgement:
        """A judgement of ``group`` that writes into the session's own findings (so that an
        inconclusive rule is said once per shape across the whole phase)."""
        return EvidenceJudgement(f"timing:{group.label}", self.findings)

    # -- the section -----------------------------------------------------------------------

    def _timing(
        self,
        default: ShapeTiming,
        per_shape: list[ShapeTiming],
        compiled: Participant | None,
        elapsed_s: float,
    ) -> Timing:
        baselines = Baselines(eager=default.speedup)
        if compiled is not None:
            if compiled.error is None and compiled.samples:
                baselines.torch_compile = (
                    statistics.median(compiled.samples) / default.candidate.median_s
                )
            else:
                baselines.torch_compile_error = compiled.error or "no samples"
        speedups = [s.speedup for s in per_shape]
        self._shape_findings(default, per_shape)
        calibrated = self.ceilings is not None and str(self.ceilings.source).startswith(
            "calibration:"
        )
        below = below_floor_findings(per_shape, hot=self.settings.hot, calibrated=calibrated)
        if below and calibrated and NOISY_CALIBRATION in str(self.ceilings.source):
            # The floor itself was measured on a busy machine just now (too noisy to cache):
            # its bandwidth reads low, so a time below it accuses no one. The speedup goes.
            self.comparable = False
            for finding in below:
                self.findings.append(
                    Finding(
                        check=FindingCheck.TIMING_INCONCLUSIVE,
                        severity=Severity.INFO,
                        message=f"{finding.message}; but the floor rests on a calibration taken "
                        f"on a busy machine ({self.ceilings.source}), so the check is "
                        "inconclusive and the speedup not comparable",
                        evidence={"rule": "below-floor", **finding.evidence},
                        variant=finding.variant,
                    )
                )
        else:
            self.findings += below
        return Timing(
            reference=default.reference,
            candidate=default.candidate,
            speedup=default.speedup,
            speedup_ci=default.speedup_ci,
            per_shape=per_shape,
            baselines=baselines,
            speedup_range={
                "min": min(speedups),
                "median": statistics.median(speedups),
                "max": max(speedups),
            },
            threads=worker_threads(self.settings),
            mode="hot" if self.settings.hot else "cold",
            cache_flush=self._flush_method,
            budget_s=self.settings.budget_s,
            stop_reason=self._last_stop,
            verified_timed_calls=self.verified_calls,
            elapsed_s=elapsed_s,
            ruled_out_fault_rate=ruled_out_rate(self.verified_calls),
            comparable=self.comparable,
            discarded_rounds=self.stolen_rounds,
            duty_cycle=self.duty_cycle(elapsed_s),
        )

    def _shape_findings(self, default: ShapeTiming, per_shape: list[ShapeTiming]) -> None:
        others = [s for s in per_shape if s is not default]
        if not others or default.speedup_ci[0] <= 1.0:
            return
        typical = statistics.median(s.speedup for s in others)
        if typical < 1.0:
            self.findings.append(
                Finding(
                    check=FindingCheck("shape-specific-speedup"),
                    severity=Severity.WARN,
                    message=f"faster only at the benchmark's shape: {default.speedup:.2f}x there, "
                    f"median {typical:.2f}x over {len(others)} other shapes",
                    evidence={s.variant: s.speedup for s in per_shape},
                )
            )


def below_floor_findings(
    per_shape: list[ShapeTiming], *, hot: bool, calibrated: bool = False
) -> list[Finding]:
    """A ``suspect`` finding for every shape whose cold-cache candidate median is below the
    speed-of-light floor (with a margin for ceiling error, wider for measured ceilings).
    Hot-cache times are exempt: data resident in cache may beat the DRAM-bandwidth floor."""
    if hot:
        return []
    margin = BELOW_CALIBRATED_FLOOR_MARGIN if calibrated else BELOW_FLOOR_MARGIN
    return [
        Finding(
            check=FindingCheck("below-floor"),
            severity=Severity.SUSPECT,
            message=f"at {shape.variant} the candidate's median "
            f"{shape.candidate.median_s * 1e6:.3g} us is below the physical floor of "
            f"{shape.floor_s * 1e6:.3g} us (the time to write its outputs and read the "
            "inputs every algorithm must read, at the best measured bandwidth): a "
            "measurement error or a cheat",
            evidence={"median_s": shape.candidate.median_s, "floor_s": shape.floor_s},
            variant=f"timing:{shape.variant}",
        )
        for shape in per_shape
        if shape.floor_s and shape.candidate.median_s < margin * shape.floor_s
    ]


def _stop_reason(rule_reason: str, stretched: bool, calls_s: float) -> str:
    """Why the rounds stopped, saying so when they went on past the stopping rule for the
    stacks sampled from outside (:data:`TIMED_STACKS_CALL_S`)."""
    if not stretched:
        return rule_reason
    if calls_s >= TIMED_STACKS_CALL_S:
        return (
            f"{rule_reason}, after rounds added until the stacks sampled from outside held "
            f"{TIMED_STACKS_CALL_S:g} s of the candidate's calls"
        )
    return (
        f"{rule_reason}, after rounds added for the stacks sampled from outside, up to "
        f"{TIMED_STACKS_STRETCH:g}x the budget (they held {calls_s:.2f} s of the candidate's "
        f"calls, short of {TIMED_STACKS_CALL_S:g} s)"
    )


def request_facts(worker: Any) -> tuple[float, SchedulerSample] | None:
    """(wall seconds, scheduler facts) of the worker's last request, from sending it to
    reading its reply; for a frozen worker its CPU time counts until the freeze landed, not
    only until the reply was read (a helper working between its reply and its stop is in it).
    None when the worker has no such facts."""
    if (
        worker is None
        or worker.scheduler_at_send is None
        or worker.scheduler_at_reply is None
        or worker.last_request_wall_s <= 0
    ):
        return None
    sched = worker.scheduler_at_reply.since(worker.scheduler_at_send)
    frozen = getattr(worker, "scheduler_at_freeze", None)
    if frozen is not None:
        landed = frozen.since(worker.scheduler_at_send)
        sched = dataclasses.replace(
            sched,
            cpu_s=max(sched.cpu_s, landed.cpu_s),
            main_run_s=max(sched.main_run_s, landed.main_run_s),
        )
    return worker.last_request_wall_s, sched


def _split(tensors: list[Any], counts: list[Any]) -> list[list[Any]]:
    calls, offset = [], 0
    for count in counts:
        calls.append(tensors[offset : offset + int(count)])
        offset += int(count)
    return calls


def ruled_out_rate(clean_calls: int) -> float | None:
    """The per-call fault rate that ``clean_calls`` faultless checks rule out at 95%
    confidence: the p with (1 - p)^N = 0.05 (the "rule of three", about 3/N)."""
    if clean_calls <= 0:
        return None
    return 1.0 - 0.05 ** (1.0 / clean_calls)


def _batch_size(per_call_s: float, output_bytes: int) -> int:
    """Calls per batch: :data:`TARGET_BATCH_S` of them, within the batch bounds; past
    :data:`OUTPUT_BOUND_BATCH` only while their outputs (``output_bytes`` a call, 0 while
    unknown) fit in :data:`MAX_BATCH_OUTPUT_BYTES`."""
    bound = (
        OUTPUT_BOUND_BATCH
        if output_bytes <= 0
        else min(MAX_BATCH, max(OUTPUT_BOUND_BATCH, MAX_BATCH_OUTPUT_BYTES // output_bytes))
    )
    return max(MIN_BATCH, min(bound, int(TARGET_BATCH_S / max(per_call_s, 1e-7))))
