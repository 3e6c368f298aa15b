"""The timing session's logic, driven through a fake pair (no worker process): what each kind
of candidate's timed batches raise, what the speedup rests on, when the rounds stop, and which
failures end the phase. The facts the controller gathers outside the candidate (its clock,
/proc) are scripted per side (tests/controller/fake_timing.py). Milliseconds a test, but for
the budget's; tests/timing/test_session.py runs the same session on real workers (slow)."""

from __future__ import annotations

import math
import random
import time
from dataclasses import replace
from typing import Any

import pytest
import torch
from tests.controller.fake_pair import DIES, FakePair, row_sum
from tests.controller.fake_timing import MS, Batch, honest, starved, under_reported

from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import Settings
from kernelproof.controller.matrix import MatrixRunner
from kernelproof.controller.timing_session import TimingSession
from kernelproof.schema import Finding, FindingCheck, Severity, TestOutcome, Verdict
from kernelproof.schema.report import decide_verdict
from kernelproof.schema.variant import InputVariant, VariantKind
from kernelproof.tasks.variants import ShapeGroup
from kernelproof.timing.bootstrap import MIN_BOOTSTRAP_ROUNDS
from kernelproof.timing.cross_check import MIN_CROSS_CHECK_WALL_S

DEFAULT = {"batch": 4, "dim": 64}
GROUP = ShapeGroup(
    label="default",
    knobs=DEFAULT,
    is_default=True,
    variants=[InputVariant(name=f"seed:{s}", kind=VariantKind.SEED, seed=s) for s in range(3)],
)
WIDE = ShapeGroup(
    label="dim=96",
    knobs={**DEFAULT, "dim": 96},
    variants=[InputVariant(name="shape:dim=96", kind=VariantKind.SHAPE, knobs={"dim": 96}, seed=0)],
)

#: A budget the honest sessions never reach: they stop on the speedup's interval, after the
#: settings' six rounds, in tens of milliseconds.
ROOMY_BUDGET_S = 5.0

REFERENCE = honest(2 * MS)
CANDIDATE = honest(1 * MS)


@pytest.fixture(autouse=True)
def _lock_of_its_own(tmp_path, monkeypatch):
    """The fake pair times no device: its sessions must not queue for the device timing lock
    of a real verification running beside the tests (the lock lives in the cache folder)."""
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path))


def _session(pair: FakePair, runner: MatrixRunner | None = None, **settings: Any) -> TimingSession:
    options: dict[str, Any] = {"budget_s": ROOMY_BUDGET_S, "compile_baseline": False, **settings}
    return TimingSession(
        pair=pair,  # type: ignore[arg-type]  # the fake answers every request the session sends
        settings=Settings(**options),
        init_seed=0,
        policy=TolerancePolicy(),
        rng=random.Random(0),
        own_errors=runner.own_errors if runner is not None else {},
        bounds=runner.bounds if runner is not None else {},
    )


def _checks(findings: list[Finding]) -> list[tuple[str, Severity]]:
    return [(f.check.value, f.severity) for f in findings]


def _accusations(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity in (Severity.SUSPECT, Severity.FAIL)]


def test_an_honest_candidate_twice_as_fast_is_timed_at_two_and_accused_of_nothing():
    pair = FakePair(reference_clock=REFERENCE, candidate_clock=CANDIDATE)
    session = _session(pair)
    timing = session.run([GROUP])
    assert timing is not None
    low, high = timing.speedup_ci
    assert timing.speedup == pytest.approx(2.0, rel=0.02)
    assert low <= 2.0 <= high and high - low < 0.1
    assert timing.stop_reason == "converged"
    assert timing.comparable and timing.discarded_rounds == 0
    assert timing.reference.median_s == pytest.approx(2 * MS, rel=0.02)
    assert timing.candidate.median_s == pytest.approx(1 * MS, rel=0.02)
    assert session.findings == []
    # The duty cycle rests on the controller's wall time around the batches (the fake's).
    assert timing.duty_cycle["candidate"] == pytest.approx(1 / 1.05, rel=0.01)
    # Every verified round compared calls; both workers were asked for their outputs.
    assert timing.verified_timed_calls > 0
    assert "candidate:fetch" in pair.asked and "reference:fetch" in pair.asked


def test_a_timer_that_does_not_measure_real_time_is_suspect_and_charged_what_it_hid():
    """Its calls take 1 ms (the controller's clock and /proc say so) but it reports 5% of
    that: the cross-check accuses it, and the speedup shown is its real 2x, not 40x."""
    walls: list[float] = []

    def patched_timer(batch: Batch) -> Any:
        seen = under_reported(CANDIDATE(batch), 0.05)
        if batch.number > 0:  # the warm-up is not cross-checked
            walls.append(seen.wall_s)
        return seen

    session = _session(FakePair(reference_clock=REFERENCE, candidate_clock=patched_timer))
    timing = session.run([GROUP])
    assert timing is not None
    assert timing.speedup == pytest.approx(2.0, rel=0.05)
    suspects = {f.check for f in session.findings if f.severity is Severity.SUSPECT}
    assert suspects == {FindingCheck.TIMER_CROSS_CHECK, FindingCheck.UNTIMED_WORK}
    charged = [
        f
        for f in session.findings
        if f.check is FindingCheck.UNTIMED_WORK and f.severity is Severity.INFO
    ]
    assert len(charged) == 1
    assert charged[0].evidence["charged_per_call_s"] == pytest.approx(0.95 * MS, rel=0.05)
    assert decide_verdict(session.findings) is Verdict.SUSPECT
    # The cross-check is judged per batch: each of the candidate's batches long enough for
    # it (MIN_CROSS_CHECK_WALL_S; the first is sized from the warm-up, shorter) raised it,
    # said once for the shape with the batches counted.
    cross = [f for f in session.findings if f.check is FindingCheck.TIMER_CROSS_CHECK]
    assert len(cross) == 1
    raised = sum(wall >= MIN_CROSS_CHECK_WALL_S for wall in walls)
    assert raised > 1
    assert cross[0].evidence.get("occurrences", 1) == raised
    assert cross[0].evidence["ratio"] == pytest.approx(0.05, rel=0.01)


def test_a_candidate_whose_batch_the_machine_stretched_is_not_accused():
    """Its batches took 20 times their work on the controller's clock, but /proc saw it run
    no more CPU than it reported: blocked or descheduled, not working unseen. Each time-based
    rule says so once for the shape, never as an accusation, and the speedup is void."""

    def blocked(batch: Batch) -> Any:
        seen = CANDIDATE(batch)
        return replace(seen, wall_s=seen.wall_s * 20)

    session = _session(FakePair(reference_clock=REFERENCE, candidate_clock=blocked))
    timing = session.run([GROUP])
    assert timing is not None and not timing.comparable
    assert _accusations(session.findings) == []
    rules = sorted(
        f.evidence["rule"] for f in session.findings if f.check is FindingCheck.TIMING_INCONCLUSIVE
    )
    assert rules == ["timer-cross-check", "untimed-work"]


def test_a_gap_in_the_references_clock_never_accuses_the_candidate():
    """The candidate cannot reach the reference's worker: a reference clock that accounts for
    5% of its batches is the machine's doing, said once for the shape."""
    session = _session(
        FakePair(
            reference_clock=lambda batch: under_reported(REFERENCE(batch), 0.05),
            candidate_clock=CANDIDATE,
        )
    )
    session.run([GROUP])
    assert _accusations(session.findings) == []
    assert [f.evidence["rule"] for f in session.findings] == ["timer-cross-check"]


@pytest.mark.parametrize("seen_by", ["its-reply", "its-freeze"])
def test_a_candidate_on_a_second_core_is_suspect_and_not_comparable(seen_by):
    """Timed at one thread, its processes ran two cores' worth of CPU per batch, half of it
    off the main thread while the main thread ran (/proc): seen by the time its reply was
    read, or only once the freeze after it landed (a helper that works on after the reply)."""

    def two_cores(batch: Batch) -> Any:
        seen = CANDIDATE(batch)
        doubled = replace(seen.proc, cpu_s=2 * seen.proc.cpu_s)
        if seen_by == "its-reply":
            return replace(seen, proc=doubled)
        return replace(seen, after_freeze=doubled)

    session = _session(FakePair(reference_clock=REFERENCE, candidate_clock=two_cores))
    timing = session.run([GROUP])
    assert timing is not None and not timing.comparable
    assert _checks(session.findings) == [
        ("cpu-time", Severity.SUSPECT),
        ("cpu-time", Severity.INFO),
    ]
    accused, charged = session.findings
    assert accused.evidence["allowed_threads"] == 1
    assert accused.evidence["cores"] == pytest.approx(2.0)
    # The second core's work, done beside the calls, is charged to them: 1 ms + 1.05 ms.
    assert charged.evidence["charged_per_call_s"] == pytest.approx(1.05 * MS, rel=0.02)
    assert timing.speedup == pytest.approx(2 / 2.05, rel=0.02)


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_a_candidate_that_fails_mid_timing_is_broken_and_the_shape_untimed(how):
    def fails_on_the_third_batch(batch: Batch) -> Any:
        if batch.number == 3:
            if how == "dies":
                return DIES
            raise RuntimeError("illegal memory access")
        return CANDIDATE(batch)

    pair = FakePair(reference_clock=REFERENCE, candidate_clock=fails_on_the_third_batch)
    session = _session(pair)
    assert session.run([GROUP]) is None
    assert _checks(session.findings) == [("timing-crash", Severity.FAIL)]
    assert session.findings[0].forces is Verdict.BROKEN
    assert decide_verdict(session.findings) is Verdict.BROKEN
    assert pair.asked.count("candidate:time") == 4  # the warm-up and three timed batches
    assert session.deaths == (["candidate: killed by signal 11"] if how == "dies" else [])


@pytest.mark.parametrize(
    "times",
    [
        pytest.param(lambda n: [0.0] * n, id="zero"),
        pytest.param(lambda n: [-MS] * n, id="negative"),
        pytest.param(lambda n: [math.nan] * n, id="nan"),
        pytest.param(lambda n: [math.inf] * n, id="inf"),
        pytest.param(lambda n: [MS] * (n - 1), id="one-missing"),
    ],
)
def test_impossible_per_call_times_are_suspect_and_leave_the_shape_untimed(times):
    def impossible(batch: Batch) -> Any:
        seen = CANDIDATE(batch)
        if batch.number == 0:  # the warm-up's times are not samples
            return seen
        return replace(seen, times=tuple(times(len(batch.seeds))))

    session = _session(FakePair(reference_clock=REFERENCE, candidate_clock=impossible))
    assert session.run([GROUP]) is None
    assert _checks(session.findings) == [("timer-values", Severity.SUSPECT)]
    assert session.findings[0].variant == "timing:default"


def test_impossible_times_from_the_reference_void_the_timing_without_accusing():
    """The candidate cannot reach the reference's clock: a reference reporting zero per-call
    times voids the shape's timing (the reason kept), it does not make the candidate suspect."""

    def broken_clock(batch: Batch) -> Any:
        seen = REFERENCE(batch)
        return seen if batch.number == 0 else replace(seen, times=(0.0,) * len(batch.seeds))

    session = _session(FakePair(reference_clock=broken_clock, candidate_clock=CANDIDATE))
    assert session.run([GROUP]) is None
    assert _checks(session.findings) == [("timing-inconclusive", Severity.INFO)]
    assert session.findings[0].evidence["rule"] == "timer-values"
    assert decide_verdict(session.findings) is Verdict.VERIFIED
    assert session.deaths and "reference worker reported impossible" in session.deaths[0]


def test_wrong_timed_outputs_after_a_clean_matrix_are_incorrect():
    """Right on the matrix's seeds, wrong on one input in seven: the matrix passes it, the
    timed calls' outputs, compared with the reference's within the matrix's own errors, do
    not."""

    def rare_inputs(knobs: dict[str, int], seed: int, dtype: torch.dtype = torch.float32) -> Any:
        out = row_sum(knobs, seed, dtype)
        return out + 1.0 if seed % 7 == 5 else out

    pair = FakePair(
        candidate_side=rare_inputs, reference_clock=REFERENCE, candidate_clock=CANDIDATE
    )
    runner = MatrixRunner(pair=pair, policy=TolerancePolicy(), init_seed=0, one_thread_sample=False)
    matrix = runner.run([GROUP])
    assert {t.outcome for t in matrix.tests} == {TestOutcome.PASSED}
    assert runner.own_errors, "the matrix learns the reference's own error"

    session = _session(pair, runner)
    session.run([GROUP])
    failures = [f for f in session.findings if f.check is FindingCheck.TIMED_OUTPUT]
    assert failures and all(f.forces is Verdict.INCORRECT for f in failures)
    assert all(f.evidence["seed"] % 7 == 5 for f in failures)
    assert decide_verdict(session.findings) is Verdict.INCORRECT


def test_without_a_learned_error_a_timed_output_is_checked_against_a_fresh_oracle():
    def wrong_when_timed(knobs: dict[str, int], seed: int, dtype: torch.dtype = torch.float32):
        out = row_sum(knobs, seed, dtype)
        return out * 1.01 if seed >= 1000 else out  # the matrix's seeds are small

    pair = FakePair(
        candidate_side=wrong_when_timed, reference_clock=REFERENCE, candidate_clock=CANDIDATE
    )
    session = _session(pair)
    session.run([GROUP])
    assert "reference:run" in pair.asked  # the oracle run of one timed call's seed
    assert _checks(_accusations(session.findings))[0] == ("timed-output", Severity.FAIL)


def test_stolen_reference_rounds_are_discarded_not_held_against_the_candidate():
    """Every third reference batch got a quarter of a core (its main thread waited for a CPU
    the rest): those rounds leave the speedup, which stays the candidate's real 2x."""

    def busy_reference(batch: Batch) -> Any:
        seen = REFERENCE(batch)
        return starved(seen, 4.0) if batch.number % 3 == 2 else seen

    session = _session(FakePair(reference_clock=busy_reference, candidate_clock=CANDIDATE))
    timing = session.run([GROUP])
    assert timing is not None
    assert timing.speedup == pytest.approx(2.0, rel=0.02)
    stolen = [f for f in session.findings if f.check is FindingCheck.REFERENCE_ROUND_STOLEN]
    assert _accusations(session.findings) == []
    assert len(stolen) == 1 and stolen[0].severity is Severity.INFO
    assert stolen[0].evidence["discarded"] == timing.discarded_rounds > 0
    rounds = session.batches // 2
    assert stolen[0].evidence["kept"] == rounds - timing.discarded_rounds


def test_a_reference_starved_in_every_round_leaves_the_speed_unmeasured_not_the_candidate_accused():
    session = _session(
        FakePair(
            reference_clock=lambda batch: starved(REFERENCE(batch), 4.0),
            candidate_clock=CANDIDATE,
        ),
        max_rounds=8,
    )
    assert session.run([GROUP]) is None
    assert session.findings == []
    assert session.deaths == [
        "every one of the 8 rounds at default was void: the reference worker never got "
        "the CPU it needed"
    ]


def test_the_rounds_stop_on_the_budget_when_the_interval_never_narrows():
    """Rounds that disagree by up to 40% never give a +-0.1% interval: the phase ends on its
    budget, after the rounds an interval needs, and within twice the budget."""

    def erratic(batch: Batch) -> Any:
        seen = CANDIDATE(batch)
        return replace(seen, times=tuple(t * (1 + 0.4 * (batch.number % 2)) for t in seen.times))

    budget_s = 0.25
    session = _session(
        FakePair(reference_clock=REFERENCE, candidate_clock=erratic),
        budget_s=budget_s,
        target_ci=0.001,
    )
    started = time.monotonic()
    timing = session.run([GROUP])
    elapsed_s = time.monotonic() - started
    assert timing is not None and timing.stop_reason == "budget"
    assert session.batches // 2 >= MIN_BOOTSTRAP_ROUNDS
    assert budget_s <= timing.elapsed_s <= elapsed_s < 2 * budget_s + 0.25


def test_every_shape_is_timed_and_a_speedup_only_at_the_default_is_said():
    def fast_only_at_default(batch: Batch) -> Any:
        return (CANDIDATE if batch.knobs == DEFAULT else honest(4 * MS))(batch)

    session = _session(FakePair(reference_clock=REFERENCE, candidate_clock=fast_only_at_default))
    timing = session.run([GROUP, WIDE])
    assert timing is not None
    assert [s.variant for s in timing.per_shape] == ["default", "dim=96"]
    assert timing.per_shape[1].speedup == pytest.approx(0.5, rel=0.02)
    assert timing.speedup_range["min"] == pytest.approx(0.5, rel=0.02)
    assert _checks(session.findings) == [("shape-specific-speedup", Severity.WARN)]


def test_the_compile_baseline_is_timed_in_a_worker_of_its_own():
    pair = FakePair(
        reference_clock=REFERENCE, candidate_clock=CANDIDATE, baseline_clock=honest(1.5 * MS)
    )
    timing = _session(pair, compile_baseline=True).run([GROUP])
    assert timing is not None
    assert timing.baselines.torch_compile == pytest.approx(1.5, rel=0.02)
    assert "baseline:time" in pair.asked


def test_a_baseline_that_cannot_be_built_is_reported_not_fatal():
    pair = FakePair(reference_clock=REFERENCE, candidate_clock=CANDIDATE, baseline_prepares=False)
    timing = _session(pair, compile_baseline=True).run([GROUP])
    assert timing is not None and timing.baselines.torch_compile is None
    assert timing.baselines.torch_compile_error == (
        "the baseline worker could not prepare the reference"
    )
    assert "baseline:time" not in pair.asked
