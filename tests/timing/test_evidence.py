"""The controller's own facts about timed batches: pure checks on synthetic batches."""

from __future__ import annotations

import pytest

from kernelproof.timing.evidence import BatchEvidence, BatchFacts, stolen


def _batch(
    reported_ms: float,
    wall_ms: float,
    cpu_ms: float,
    main_ms: float | None = None,
    calls: int = 10,
    wait_ms: float = 0.0,
    controller_wait_ms: float = 0.0,
    paused_ms: float = 0.0,
) -> BatchFacts:
    return BatchFacts(
        calls=calls,
        reported_s=reported_ms / 1e3,
        wall_s=wall_ms / 1e3,
        cpu_s=cpu_ms / 1e3,
        main_cpu_s=(main_ms if main_ms is not None else cpu_ms) / 1e3,
        main_wait_s=wait_ms / 1e3,
        controller_wait_s=controller_wait_ms / 1e3,
        paused_s=paused_ms / 1e3,
    )


def _evidence(reference: BatchFacts, candidate: BatchFacts, rounds: int = 6) -> BatchEvidence:
    evidence = BatchEvidence()
    for _ in range(rounds):
        evidence.add(reference, candidate)
    return evidence


def test_a_reference_batch_with_too_little_cpu_is_void():
    assert stolen(_batch(5, 40, 12))
    assert not stolen(_batch(5, 40, 36))
    evidence = BatchEvidence()
    assert evidence.add(_batch(5, 40, 12), _batch(5, 40, 38)) is False
    assert evidence.stolen_rounds == 1


def test_an_honest_pair_raises_nothing():
    evidence = _evidence(_batch(5, 20, 19), _batch(2, 17, 16))
    assert evidence.too_many_cores(1) is None
    assert evidence.untimed_work(0.2e-3) is None


def test_work_on_threads_of_its_own_is_seen_even_without_spare_cores():
    # The machine gave it one core in all (cpu == wall), yet 40% of it went to other threads
    # while its main thread waited for that core (8 ms runnable, schedstat): two threads busy.
    evidence = _evidence(_batch(5, 20, 19), _batch(2, 20, 20, main_ms=12, wait_ms=8))
    cores, beside = evidence.too_many_cores(1)
    assert beside == pytest.approx(0.4)
    assert evidence.too_many_cores(2) is None  # one extra intra-op thread is allowed at 2


def test_a_per_call_pool_whose_caller_sleeps_in_join_is_one_thread():
    # Issue 25 class 5: a pool sized to the allowed thread count, joined before the call
    # returns. 60% of the CPU is off the main thread, but the main thread slept meanwhile
    # (no wait for a CPU): one thread busy at a time, at any load.
    for wait_ms in (0.0, 6.0):  # an idle machine; a loaded one (the main thread queued too)
        evidence = _evidence(_batch(5, 20, 19), _batch(12, 20, 13, main_ms=5, wait_ms=wait_ms))
        assert evidence.too_many_cores(1) is None, wait_ms


def test_time_our_sampler_held_it_paused_excuses_no_thread_and_accuses_none():
    # Measured on attack 33 (numba prange on two cores at one allowed thread): py-spy held the
    # worker paused for 602 ms of a 712 ms batch. Read as sleep, the pause would excuse the
    # second thread's CPU as a pool's whose caller sleeps in join ...
    helper = _batch(50, 100, 40, main_ms=25, wait_ms=0, paused_ms=70)
    evidence = _evidence(_batch(5, 20, 19), helper)
    assert evidence.too_many_cores(1) is not None
    # ... but the sampler's CPU time bounds the pause from above only, so on the reading that
    # credits no pause the same facts are a joined pool's: not enough to accuse.
    assert evidence.unpaused().too_many_cores(1) is None
    assert evidence.paused_s() == pytest.approx(0.070)
    assert evidence.unpaused().paused_s() == 0.0
    unpaused = _batch(50, 100, 40, main_ms=25, wait_ms=0)
    assert _evidence(_batch(5, 20, 19), unpaused).too_many_cores(1) is None
    # A joined pool keeps its excuse for the sleep that was not a pause.
    pool = _batch(12, 30, 13, main_ms=5, paused_ms=10)
    assert _evidence(_batch(5, 20, 19), pool).too_many_cores(1) is None


def test_more_cores_than_threads_is_seen():
    evidence = _evidence(_batch(5, 20, 19), _batch(2, 20, 38, main_ms=19))
    assert evidence.too_many_cores(1) is not None


def test_under_reported_call_times_leave_untimed_work():
    # The candidate says 10 calls took 0.5 ms; its batch took 40 ms where the reference's
    # untimed part is 15 ms: 24.5 ms of its time went unreported.
    evidence = _evidence(_batch(5, 20, 19), _batch(0.5, 40, 39))
    assert evidence.untimed_work(0.05e-3) is not None


def test_noise_of_a_large_untimed_part_is_not_a_finding():
    # Input generation of 60 ms on both sides, varying by 20 ms: no signal.
    evidence = BatchEvidence()
    for extra in (-20, 20, -10, 15, 5, -5):
        evidence.add(_batch(5, 65, 60), _batch(4, 64 + extra, 60))
    assert evidence.untimed_work(0.4e-3) is None


def test_too_few_rounds_decide_nothing():
    evidence = _evidence(_batch(5, 20, 19), _batch(0.5, 90, 89), rounds=2)
    assert evidence.untimed_work(0.05e-3) is None and evidence.too_many_cores(1) is None


def test_under_reporting_close_to_the_untimed_work_is_seen_when_that_work_is_steady():
    """Figures of a real run of HACKS row 30 that went through when the limit was the whole
    untimed work: per call, the reference's untimed part was 0.7-1.4 ms and the candidate's
    1.9-2.5 ms; the excess (1.1 ms) is many standard errors, though under the untimed work."""
    evidence = BatchEvidence()
    reference_ms = (1.29, 1.07, 0.72, 1.16, 0.72, 0.71)
    candidate_ms = (1.93, 2.54, 1.85, 2.07, 1.91, 1.86)
    for r, c in zip(reference_ms, candidate_ms):
        evidence.add(
            _batch(10 * 0.118, 10 * (0.118 + r), 10 * (0.118 + r)),
            _batch(10 * 0.059, 10 * (0.059 + c), 10 * (0.059 + c)),
        )
    assert evidence.untimed_work(0.059e-3) is not None


def test_an_excess_within_the_rounds_noise_is_not_a_finding():
    # The same untimed work, but the candidate's batches scatter by +-1 ms per call.
    evidence = BatchEvidence()
    for r, c in zip((0.9, 1.0, 0.8, 1.1, 0.9, 1.0), (0.2, 2.6, 0.5, 2.4, 1.9, 0.3)):
        evidence.add(_batch(1.2, 1.2 + 10 * r, 1.2 + 10 * r), _batch(0.6, 0.6 + 10 * c, 10 * c))
    assert evidence.untimed_work(0.06e-3) is None


def test_an_excess_in_every_round_is_seen_through_heavy_load_noise():
    # Per call, the reference's untimed part scatters 0.4-3 ms under load; the candidate's is
    # 1.2 ms more in every round: too noisy for the standard error, not for the sign test.
    evidence = BatchEvidence()
    for r in (0.4, 3.0, 0.5, 2.6, 0.6, 2.9):
        c = r + 1.2 + (0.9 if r < 1 else -0.9)
        evidence.add(_batch(1.2, 1.2 + 10 * r, 1.2 + 10 * r), _batch(0.6, 0.6 + 10 * c, 10 * c))
    assert evidence.untimed_work(0.06e-3) is not None


def test_the_sign_test_needs_the_size_too():
    # Positive in every round, but 20 us per call: an honest worker's own bookkeeping.
    evidence = BatchEvidence()
    for r in (0.9, 1.0, 0.8, 1.1, 0.9, 1.0):
        evidence.add(
            _batch(1.2, 1.2 + 10 * r, 1.2 + 10 * r),
            _batch(0.6, 0.6 + 10 * (r + 0.02), 10 * (r + 0.02)),
        )
    assert evidence.untimed_work(0.06e-3) is None


def test_waiting_for_a_cpu_is_not_untimed_work():
    # Issue 25 class 6: under load the candidate's worker waited 30 ms per batch for a CPU
    # outside its timed calls (late wake-ups); the reference's batches happened not to.
    loaded = _batch(5, 50, 15, wait_ms=30)
    evidence = _evidence(_batch(5, 20, 19), loaded)
    assert evidence.untimed_work(0.5e-3) is None
    assert evidence.wait_share() > 0.5


def test_a_wait_the_candidate_caused_itself_is_no_excuse():
    # 30 ms of its main thread's wait, but its own helper ran 30 ms meanwhile: the wait is
    # the candidate's doing, and the untimed time it hides stays visible.
    crowded = _batch(5, 50, 45, main_ms=15, wait_ms=30)
    assert crowded.excusable_wait_s == 0.0
    evidence = _evidence(_batch(5, 20, 19), crowded)
    assert evidence.untimed_work(0.5e-3) is not None
    assert evidence.too_many_cores(1) is not None


def test_a_helper_beside_a_starved_main_thread_is_seen_at_any_load():
    # Load 18 on 2 cores: the main thread ran 6 ms and waited 54 ms of a 60 ms batch; a forked
    # helper got 4 ms of CPU meanwhile. 7% of the wall time, but 40% of the candidate's CPU.
    evidence = _evidence(_batch(5, 60, 50, wait_ms=45), _batch(2, 60, 10, main_ms=6, wait_ms=54))
    cores, beside = evidence.too_many_cores(1)
    assert beside == pytest.approx(0.4)


def test_work_done_while_outputs_are_fetched_is_seen_and_fetch_noise_is_not():
    from kernelproof.timing.judgement import fetch_work

    # Attack 36e at a load of ~20 on 2 cores: 0.8-2.1 ms per fetch on its helper thread.
    assert fetch_work([1.26e-3, 1.23e-3, 1.32e-3, 0.79e-3, 2.08e-3]) is not None
    # The honest softmax there: 34-191 us per fetch (the sandbox's waiting processes).
    assert fetch_work([165e-6, 191e-6, 34e-6, 108e-6, 60e-6]) is None
    assert fetch_work([1.3e-3, 1.2e-3, 1.4e-3]) is None  # too few rounds
    assert fetch_work([5e-3, 0.0, 0.0, 0.0]) is None  # one burst is not a habit


def test_untimed_main_thread_cpu_sees_under_reporting_on_a_busy_machine():
    """HACKS row 30 on a busy machine: the candidate's main thread spent 1 ms of CPU per call
    outside the calls it reported, where the reference's spent at most 0.44 ms (its ceiling:
    every wait inside its calls): its clock missed at least 0.56 ms a call, which is charged
    to it. The round in which a worker waited for a CPU most of the batch is left out."""
    evidence = BatchEvidence()
    for wait in (2, 5, 3, 4, 3, 30):
        evidence.add(
            _batch(1.4, 40, 1.4 + 3, wait_ms=wait),
            _batch(0.36, 40, 0.36 + 10, wait_ms=wait * 1.5),
        )
    assert evidence.untimed_cpu_excess() == pytest.approx(0.56e-3)


def test_an_honest_candidate_leaves_no_untimed_cpu_whatever_its_wall_time():
    evidence = BatchEvidence()
    for wait, jitter in ((30, 0.2), (80, -0.3), (10, 0.1), (60, 0.0), (45, -0.1), (20, 0.3)):
        evidence.add(
            _batch(5, 5 + 3 + wait, 5 + 3, wait_ms=wait),
            _batch(2, 2 + 3 + jitter + 2 * wait, 2 + 3 + jitter, wait_ms=2 * wait),
        )
    assert evidence.untimed_cpu_excess() is None


def test_a_multithreaded_call_is_not_untimed_cpu():
    # Its calls ran on two threads: the main thread ran for less than the calls' wall time,
    # and the pool's CPU is off the main thread; nothing is outside the calls.
    evidence = _evidence(_batch(5, 8, 7.9), _batch(4, 7, 9, main_ms=5))
    assert evidence.untimed_cpu_excess() is None


def test_untimed_cpu_needs_the_main_threads_cpu():
    # No per-thread facts (no /proc schedstat): the rule decides nothing.
    evidence = _evidence(_batch(5, 20, 19, main_ms=0), _batch(0.5, 40, 39, main_ms=0))
    assert evidence.untimed_cpu_excess() is None


def test_a_steady_small_excess_is_measured_to_be_charged():
    """HACKS row 30b: a candidate that reports 55% of each call's time. Its main thread's
    untimed CPU is above the reference's in every round: the excess is measured, to be
    charged to its calls."""
    evidence = BatchEvidence()
    for jitter in (0.0, 0.02, -0.01, 0.01, 0.03, -0.02):
        evidence.add(
            _batch(1.4, 1.4 + 3 + jitter, 1.4 + 3 + jitter),
            _batch(0.77, 0.77 + 3 + 0.63 + jitter, 0.77 + 3 + 0.63 + jitter),
        )
    assert evidence.untimed_cpu_excess() == pytest.approx(0.063e-3, rel=0.05)


def test_no_excess_no_charge():
    evidence = BatchEvidence()
    for r, c in ((0.0, 0.01), (0.02, -0.01), (-0.01, 0.0), (0.01, 0.02), (0.03, 0.0), (0.0, 0.01)):
        evidence.add(_batch(1.4, 4.4 + r, 4.4 + r), _batch(0.7, 3.7 + c, 3.7 + c))
    assert evidence.untimed_cpu_excess() is None


def test_a_reference_that_waited_inside_its_calls_makes_no_excess():
    """Measured on a loaded machine (an honest numba smooth-L1 loss): the reference's two
    calls reported 53 ms in a batch of 860 ms wall time with 31.5 ms of main-thread CPU (it
    waited for a CPU most of the batch), so its CPU beyond its reported calls read 0 while
    the candidate's read 6.7 ms. The reference's side is taken at its ceiling (every wait
    inside its calls): no excess."""
    evidence = BatchEvidence()
    for _ in range(6):
        evidence.add(
            _batch(53.5, 860, 32.7, main_ms=31.5, calls=2, wait_ms=800),
            _batch(19.7, 72, 26.6, main_ms=26.4, calls=2, wait_ms=1),
        )
    assert evidence.untimed_cpu_excess() is None


def test_the_charge_is_the_larger_excess_the_controller_saw():
    # HACKS row 30 on a busy machine: reported calls of 0.1 ms, while the controller's clock
    # saw 2.4 ms more untimed time per call than the reference's; /proc's CPU excess is left
    # out at that load. The charge is what the controller saw, whatever the verdict says.
    reference = _batch(10, 14, 12, calls=10)
    forger = _batch(1, 30, 22, calls=10, wait_ms=2)
    evidence = _evidence(reference, forger)
    wall = evidence.untimed_work(0.1e-3)
    assert wall is not None
    assert evidence.charge(0.1e-3) == pytest.approx(max(wall, evidence.untimed_cpu_excess() or 0))
    assert evidence.charge(0.1e-3) >= 1.5e-3


def test_an_honest_pair_is_charged_nothing():
    assert _evidence(_batch(5, 20, 19), _batch(2, 17, 16)).charge(0.2e-3) is None


def test_a_helper_beside_the_calls_is_charged_below_the_cpu_time_rule():
    """Attack 36 beside another verification: a helper does half of each call's rows while
    the next calls run. The harness's own CPU dilutes its share (22% of the batch's CPU,
    under the cpu-time rule's 25%), so no finding; but its CPU beside the calls is work one
    allowed thread would have done inside them, and is charged to them."""
    reference = _batch(3.0, 9.0, 9.5, main_ms=9.0, calls=10)
    helper = _batch(2.5, 9.5, 11.0, main_ms=8.5, calls=10, wait_ms=1.0)
    evidence = _evidence(reference, helper)
    assert evidence.too_many_cores(1) is None
    beside = evidence.beside_cpu_excess(1, 0.25e-3)
    # 2.5 ms off the main thread, 0.5 ms of it the reference's bookkeeping too: 0.2 ms a call.
    assert beside == pytest.approx(0.2e-3)
    assert evidence.charge(0.25e-3, allowed=1) == pytest.approx(0.2e-3)
    # With two allowed threads the helper is the allowed one: nothing to charge.
    assert evidence.beside_cpu_excess(2, 0.25e-3) is None
    assert evidence.charge(0.25e-3) is None  # no thread count known (CUDA): not charged


def test_a_joined_pool_and_bookkeeping_threads_are_charged_nothing():
    # A per-call pool whose caller sleeps in join: its threads ran in the caller's place.
    pool = _batch(12, 20, 13, main_ms=5, calls=10)
    assert _evidence(_batch(5, 20, 19), pool).beside_cpu_excess(1, 1.2e-3) is None
    # The same bookkeeping threads on both sides, give or take the rounds' noise.
    evidence = BatchEvidence()
    for r, c in ((0.3, 0.35), (0.4, 0.3), (0.35, 0.4), (0.3, 0.3), (0.45, 0.4), (0.3, 0.5)):
        evidence.add(_batch(5, 20, 19 + r, main_ms=19), _batch(2, 17, 16 + c, main_ms=16))
    assert evidence.beside_cpu_excess(1, 0.2e-3) is None


def test_a_small_steady_difference_below_a_tenth_of_the_call_is_not_charged():
    # 10 us a call of steady extra bookkeeping on a 1 ms call: under the floor.
    reference = _batch(10, 20, 18.0, main_ms=17.9, calls=10)
    candidate = _batch(10, 20, 18.1, main_ms=17.9, calls=10)
    assert _evidence(reference, candidate).beside_cpu_excess(1, 1e-3) is None


def test_the_candidates_time_in_its_calls_is_what_both_it_and_proc_allow():
    evidence = BatchEvidence()
    evidence.add(_batch(5, 20, 19), _batch(4, 20, 12, main_ms=10))  # reported 4 of 10 ms CPU
    evidence.add(_batch(5, 20, 19), _batch(30, 40, 12, main_ms=10))  # claims more than it ran
    evidence.add(_batch(5, 20, 19), _batch(3, 20, 0, main_ms=0))  # no /proc: its report
    assert evidence.candidate_calls_s() == pytest.approx((4 + 10 + 3) / 1e3)
