"""Facts about timed batches that the candidate's process cannot forge, and the checks on them.

Per-call times come from inside the worker, which the candidate owns. Around every batch the
controller has two facts of its own: the wall time of the whole request (its own clock) and the
CPU time the worker's processes used (the kernel's accounting, read from ``/proc``). Three
checks rest on them:

- **more cores than allowed**: CPU time well above wall time times the thread count means the
  candidate ran work in parallel (its own thread pool, ``NUMBA_NUM_THREADS`` set before numba
  was imported) while the report says one thread: its speedup is not comparable;
- **work outside the timed calls**: both workers do the same untimed work per batch (build the
  inputs, flush the caches, one settling call), so the batch wall time beyond the reported call
  times must be about the same on both sides. A candidate that finishes its work in the untimed
  windows (a helper thread that runs during the flush), or reports call times shorter than the
  truth, leaves an excess the controller sees;
- **a stolen reference round**: a reference worker that got far less CPU than wall time during
  its batch was stopped or starved (a signal from a neighbour, a loaded machine); that round's
  comparison is void and is discarded. Only the reference's rounds are discarded: a candidate
  could stall itself on purpose to have its slow rounds dropped.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, replace

#: A reference batch with less CPU time than this share of its wall time was stolen.
STOLEN_CPU_SHARE = 0.5

#: CPU time may exceed wall time times the allowed threads by this factor before a candidate
#: counts as using more cores: /proc's accounting and the controller's clock differ slightly,
#: and the worker's own bookkeeping threads run now and then.
CORES_MARGIN = 1.2

#: Untimed work per call (beyond the reference's) that raises a finding: at least this many
#: seconds ...
UNTIMED_WORK_FLOOR_S = 100e-6

#: ... and at least this multiple of the candidate's own median call time: moving half of the
#: work out of the timed call doubles the true time.
UNTIMED_WORK_SHARE = 1.0

#: Share of the candidate's CPU time that may run beside its main thread (off it, while the
#: main thread itself ran or waited for a CPU; the allowed extra intra-op threads aside)
#: before it counts as work on threads of its own. The harness runs everything on the main
#: thread; an honest candidate's other threads run only while it sleeps (a pool it joins).
#: Counted whatever the machine's load: on a busy machine a helper does not get its extra
#: core, but what CPU it gets is beside the main thread all the same. A pool started per call
#: starts and ends its threads beside the main thread: an honest one with 450 us calls showed
#: 15% at a load of 18 on 2 cores; the helpers of attacks 36-37 showed 19-56% there.
SIDE_CPU_SHARE = 0.25

#: ... and beyond the noise of the untimed work itself. Both sides build the same inputs and
#: flush the same caches, but on a loaded machine that work's wall time varies by tens of
#: percent from batch to batch (measured here: 25-70 ms for the same 16 MiB of inputs). The
#: noise is measured, not assumed: the spread of both sides' untimed time per call around their
#: own medians gives the standard error of the median excess over the rounds, and the excess
#: must be this many standard errors ...
UNTIMED_NOISE_SIGMAS = 4.0

#: ... and at least this share of the reference's own untimed time per call, so that a quiet
#: run's tiny spread does not turn a small systematic difference (allocator, page faults of a
#: larger output) into a finding. A fixed share of 1.0 once let a candidate that under-reported
#: by its whole call through in one run of three: the excess was 1.1-1.6x the untimed work.
UNTIMED_NOISE_SHARE = 0.5

#: Rounds that must all show an excess for the sign test to count it (chance 2**-6 under no
#: difference, on top of the size conditions above).
SIGN_TEST_ROUNDS = 6

#: Rounds in which either worker's main thread (or the controller) waited for a CPU longer
#: than this share of the batch are left out of the untimed-CPU comparison: the bounds on CPU
#: outside the calls loosen by the wait, and one such round on either side scatters the rest.
CPU_ROUND_WAIT_SHARE = 0.25

#: CPU per call beside the main thread (beyond the reference's) below this share of the
#: candidate's median call is not charged to its calls: the bookkeeping threads of the two
#: workers differ by a little from round to round, and a quiet machine's tiny spread would
#: otherwise turn that into a few percent on an honest call.
BESIDE_CPU_FLOOR_SHARE = 0.1

#: Rounds needed before the medians above are trusted.
MIN_EVIDENCE_ROUNDS = 3


@dataclass(frozen=True)
class BatchFacts:
    """One batch as the controller saw it."""

    calls: int
    reported_s: float
    """Sum of the per-call times the worker reported."""

    wall_s: float
    """The controller's clock around the request."""

    cpu_s: float
    """CPU seconds of the worker's processes during the request, from /proc."""

    main_cpu_s: float = 0.0
    """CPU seconds of the serving process's main thread (the harness and the calls)."""

    main_wait_s: float = 0.0
    """Seconds the main thread was runnable but waited for a CPU (/proc schedstat)."""

    controller_wait_s: float = 0.0
    """Seconds the controller's thread waited for a CPU during the request."""

    paused_s: float = 0.0
    """Seconds the controller's stack sampler held the worker paused during the request
    (its own time on a CPU, as it reads a sample's stacks)."""

    @property
    def side_cpu_s(self) -> float:
        """CPU seconds of every thread and process but the main thread."""
        return max(0.0, self.cpu_s - self.main_cpu_s)

    @property
    def side_share(self) -> float:
        """CPU time spent off the main thread, as a share of the wall time."""
        return self.side_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cores(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def main_sleep_s(self) -> float:
        """Seconds of the batch's window the main thread neither ran nor waited for a CPU: it
        slept (in a pool's ``join``, for one). The window ends when the controller read the
        reply, late by its own wait for a CPU; the time our stack sampler held it paused is
        not its sleep (a pause stops every thread, so it explains none of their CPU): with
        it, a numba ``prange`` on two cores at one allowed thread, paused most of its timed
        window, looked like a caller asleep in ``join``."""
        window = self.wall_s - self.controller_wait_s - self.paused_s
        return max(0.0, window - self.main_cpu_s - self.main_wait_s)

    def overlap_share(self, allowed: int) -> float:
        """The share of the worker's CPU time that ran beside its main thread beyond the
        ``allowed - 1`` extra threads: CPU off the main thread that the main thread's own
        sleep does not explain, over all its CPU time. A per-call pool whose caller sleeps in
        ``join`` runs in the caller's place (0); a helper working while the main thread runs
        or waits for a CPU does not. A ratio of CPU times, so the machine's load, which
        stretches the wall time, does not dilute it."""
        if self.cpu_s <= 0:
            return 0.0
        return self.beside_cpu_s(allowed) / self.cpu_s

    def beside_cpu_s(self, allowed: int) -> float:
        """CPU seconds off the main thread that ran beside it beyond the ``allowed - 1``
        extra threads (see :meth:`overlap_share`): work done in parallel with the timed
        calls that one allowed thread would have had to do in them."""
        window = max(0.0, self.wall_s - self.controller_wait_s)
        return max(0.0, self.side_cpu_s - self.main_sleep_s - (allowed - 1) * window)

    @property
    def excusable_wait_s(self) -> float:
        """The main thread's and the controller's waits for a CPU that the machine, not the
        candidate, caused: less whatever CPU the candidate's own other threads took meanwhile
        (a candidate that crowds its own main thread off the CPU gains no excuse by it)."""
        return max(0.0, self.main_wait_s - self.side_cpu_s) + self.controller_wait_s

    @property
    def wait_share(self) -> float:
        return self.excusable_wait_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def untimed_cpu_s(self) -> float:
        """CPU time of the main thread beyond the calls it reported: at least what it ran
        outside them, since inside a call it cannot run for longer than the call's wall time.
        A lower bound: a call that waited for a CPU reported that wait as its own time. CPU
        time, unlike wall time, is not stretched by waiting on a loaded machine."""
        if self.main_cpu_s <= 0:
            return 0.0
        return max(0.0, self.main_cpu_s - self.reported_s)

    @property
    def untimed_cpu_ceiling_s(self) -> float:
        """:attr:`untimed_cpu_s` were every wait of the main thread inside the calls (their
        reported time less the wait is then what they ran): at most what it ran outside them."""
        if self.main_cpu_s <= 0:
            return 0.0
        return max(0.0, self.main_cpu_s - max(0.0, self.reported_s - self.main_wait_s))

    @property
    def untimed_s(self) -> float:
        """Wall time outside the reported calls, less the time spent waiting for a CPU."""
        return max(0.0, self.wall_s - self.reported_s - self.excusable_wait_s)


def stolen(reference: BatchFacts) -> bool:
    return reference.wall_s > 0 and reference.cpu_s < STOLEN_CPU_SHARE * reference.wall_s


@dataclass
class BatchEvidence:
    """The controller's facts about every kept round of one shape."""

    reference: list[BatchFacts] = field(default_factory=list)
    candidate: list[BatchFacts] = field(default_factory=list)
    """Every round's facts, void rounds included: a stolen reference round only inflates the
    reference's untimed time, which makes the candidate's checks more lenient, never less."""

    stolen_rounds: int = 0

    def add(self, reference: BatchFacts, candidate: BatchFacts) -> bool:
        """Record a round's facts; False when its timings are void (the reference's batch was
        stolen) and must not enter the speedup."""
        self.reference.append(reference)
        self.candidate.append(candidate)
        if stolen(reference):
            self.stolen_rounds += 1
            return False
        return True

    def unpaused(self) -> BatchEvidence:
        """These rounds read as if the controller's stack sampler had held no worker paused:
        every moment the main thread neither ran nor waited counts as its sleep. The reading
        most lenient to the candidate, which an accusation must survive: the sampler's CPU
        time (:attr:`BatchFacts.paused_s`) bounds the pause from above only. Sampling an
        honest per-call relu pool on an idle machine, py-spy ran 32 ms of a 54 ms batch while
        the pool's caller could have been held at most 9 ms (the rest of its time it ran,
        waited, or slept while its pool worked), and the pool was called two threads at once.
        """
        return BatchEvidence(
            reference=[replace(b, paused_s=0.0) for b in self.reference],
            candidate=[replace(b, paused_s=0.0) for b in self.candidate],
            stolen_rounds=self.stolen_rounds,
        )

    def paused_s(self) -> float:
        """The candidate's median seconds per batch that the stack sampler ran (0 when none
        ran): what :meth:`unpaused` leaves uncredited."""
        if not self.candidate:
            return 0.0
        return statistics.median(b.paused_s for b in self.candidate)

    def candidate_calls_s(self) -> float:
        """Seconds the candidate's calls ran over every round, at most: the lesser of what it
        reported and what /proc saw its main thread run (it cannot stretch it by reporting
        longer calls, and a forger's short reports only make it smaller)."""
        return sum(
            min(c.reported_s, c.main_cpu_s) if c.main_cpu_s > 0 else c.reported_s
            for c in self.candidate
        )

    def cores_used(self) -> float | None:
        """The candidate's median cores in use over its batches (CPU time / wall time)."""
        if len(self.candidate) < MIN_EVIDENCE_ROUNDS:
            return None
        return statistics.median(b.cores for b in self.candidate)

    def excess_untimed_per_call_s(self) -> float | None:
        """Median over rounds of the candidate's untimed time per call beyond the reference's."""
        if len(self.candidate) < MIN_EVIDENCE_ROUNDS:
            return None
        return statistics.median(
            (c.untimed_s - r.untimed_s) / max(c.calls, 1)
            for r, c in zip(self.reference, self.candidate)
        )

    def side_share(self) -> float | None:
        """The candidate's median CPU time off its main thread, as a share of wall time."""
        if len(self.candidate) < MIN_EVIDENCE_ROUNDS:
            return None
        return statistics.median(b.side_share for b in self.candidate)

    def overlap_share(self, allowed: int) -> float | None:
        """The candidate's median :meth:`BatchFacts.overlap_share` over its batches."""
        if len(self.candidate) < MIN_EVIDENCE_ROUNDS:
            return None
        return statistics.median(b.overlap_share(allowed) for b in self.candidate)

    def too_many_cores(self, allowed: int | None) -> tuple[float, float] | None:
        """(median cores, median share of its CPU time beside the main thread) when more
        threads ran at once than ``allowed`` explains, else None. CPU time off the main thread
        alone is no evidence: a per-call pool whose caller waits in ``join`` uses one core
        from other threads."""
        if allowed is None:
            return None
        used, beside = self.cores_used(), self.overlap_share(allowed)
        if used is None or beside is None:
            return None
        if used > allowed * CORES_MARGIN or beside > SIDE_CPU_SHARE:
            return used, beside
        return None

    def wait_share(self) -> float:
        """The median share of a batch's wall time that both workers spent waiting for a CPU
        (the larger side's), over the rounds."""
        if not self.candidate:
            return 0.0
        return statistics.median(
            max(r.wait_share, c.wait_share) for r, c in zip(self.reference, self.candidate)
        )

    def untimed_work(self, candidate_median_s: float) -> float | None:
        """The excess untimed time per call when it is too large to be noise, else None."""
        excess = self.excess_untimed_per_call_s()
        if excess is None:
            return None
        reference = [r.untimed_s / max(r.calls, 1) for r in self.reference]
        candidate = [c.untimed_s / max(c.calls, 1) for c in self.candidate]
        size = max(
            UNTIMED_WORK_FLOOR_S,
            UNTIMED_WORK_SHARE * candidate_median_s,
            UNTIMED_NOISE_SHARE * statistics.median(reference),
        )
        if excess <= size:
            return None
        beyond_noise = excess > UNTIMED_NOISE_SIGMAS * _median_excess_error(reference, candidate)
        return excess if beyond_noise or self._excess_in_every_round() else None

    def untimed_cpu_excess(self) -> float | None:
        """The candidate main thread's CPU time per call outside its reported calls, beyond
        the reference's (median over rounds), when it is beyond the rounds' noise (many
        standard errors, or positive in every round), else None.

        Both harnesses do the same work between calls (the same inputs built, the same caches
        flushed) on their main threads, so an honest candidate's untimed CPU matches the
        reference's; a candidate that under-reports its calls, or works between them, spends
        CPU there that its clock missed. The controller reads it from /proc, where the
        candidate cannot reach, and waiting for a CPU does not inflate it the way it inflates
        wall time; rounds in which either side waited long are still left out, since a wait
        inside a call loosens the bounds (:data:`CPU_ROUND_WAIT_SHARE`)."""
        pairs = [
            (r, c)
            for r, c in zip(self.reference, self.candidate)
            if r.main_cpu_s > 0
            and c.main_cpu_s > 0
            and max(r.wait_share, c.wait_share) <= CPU_ROUND_WAIT_SHARE
        ]
        if len(pairs) < MIN_EVIDENCE_ROUNDS:
            return None
        # The candidate's lower bound against the reference's ceiling: a call that waited for
        # a CPU on a loaded machine reports the wait as call time, which hides untimed CPU of
        # the side that waited more (the reference, in a run of the suite's smooth-L1 loss):
        # compared so,
        # the machine's waits can only hide an excess, never make one.
        reference = [r.untimed_cpu_ceiling_s / max(r.calls, 1) for r, _ in pairs]
        candidate = [c.untimed_cpu_s / max(c.calls, 1) for _, c in pairs]
        excess = statistics.median(c - r for r, c in zip(reference, candidate))
        if excess <= 1e-9:  # a nanosecond: below /proc's resolution, a rounding error
            return None
        beyond_noise = excess > UNTIMED_NOISE_SIGMAS * _median_excess_error(reference, candidate)
        every_round = len(pairs) >= SIGN_TEST_ROUNDS and all(
            c > r for r, c in zip(reference, candidate)
        )
        return excess if beyond_noise or every_round else None

    def beside_cpu_excess(self, allowed: int | None, candidate_median_s: float) -> float | None:
        """CPU seconds per call that the candidate's other threads ran beside its main thread
        (:meth:`BatchFacts.beside_cpu_s`) beyond the reference's (median over rounds), when
        beyond the rounds' noise, else None.

        Below the ``cpu-time`` rule's share it is no accusation, but it is work: a helper
        that does half of each call's rows while the next calls run (attack 36, beside
        another verification: 15-29% of its CPU, under the rule's 25% by the harness's own
        CPU that dilutes a short call's) makes the calls look twice as fast. Charged to the
        calls, it is timed as one allowed thread would have done it. Both workers run the same
        harness with the same bookkeeping threads, so an honest candidate's matches the
        reference's; a per-call pool whose caller sleeps in ``join`` has none."""
        if allowed is None or len(self.candidate) < MIN_EVIDENCE_ROUNDS:
            return None
        pairs = list(zip(self.reference, self.candidate))
        reference = [r.beside_cpu_s(allowed) / max(r.calls, 1) for r, _ in pairs]
        candidate = [c.beside_cpu_s(allowed) / max(c.calls, 1) for _, c in pairs]
        excess = statistics.median(c - r for r, c in zip(reference, candidate))
        if excess <= max(1e-9, BESIDE_CPU_FLOOR_SHARE * candidate_median_s):
            return None
        beyond_noise = excess > UNTIMED_NOISE_SIGMAS * _median_excess_error(reference, candidate)
        every_round = len(pairs) >= SIGN_TEST_ROUNDS and all(
            c > r for r, c in zip(reference, candidate)
        )
        return excess if beyond_noise or every_round else None

    def charge(self, candidate_median_s: float, allowed: int | None = None) -> float | None:
        """Seconds to add to each of the candidate's reported calls, so that its speedup rests
        on what the controller saw rather than on what it reported: the larger of its untimed
        CPU excess (/proc) and its untimed wall-time excess (the controller's clock), plus the
        CPU its other threads ran beside the calls (:meth:`beside_cpu_excess`: parallel work,
        which no wall time shows), each only when beyond the rounds' noise; None when none
        is."""
        found = [
            c
            for c in (self.untimed_cpu_excess(), self.untimed_work(candidate_median_s))
            if c is not None
        ]
        beside = self.beside_cpu_excess(allowed, candidate_median_s)
        if not found and beside is None:
            return None
        return max(found, default=0.0) + (beside or 0.0)

    def _excess_in_every_round(self) -> bool:
        """Whether every round (at least :data:`SIGN_TEST_ROUNDS`) left the candidate more
        untimed time per call than the reference: a sign test, which heavy-tailed load noise
        (a burst that inflates one side's batch several-fold) cannot fake the way it inflates
        a spread. Under a load of 10 on 2 cores, HACKS row 30's excess was within 4 standard
        errors in one CI run though it was positive in every round."""
        pairs = list(zip(self.reference, self.candidate))
        return len(pairs) >= SIGN_TEST_ROUNDS and all(
            c.untimed_s / max(c.calls, 1) > r.untimed_s / max(r.calls, 1) for r, c in pairs
        )


def _median_excess_error(reference: list[float], candidate: list[float]) -> float:
    """The standard error of the median over rounds of (candidate - reference) untimed time.

    A round's difference has sigma sqrt(2) times one batch's, estimated robustly from both
    sides' spread around their own medians (MAD scaled to a normal's sigma); a median of n
    values has about 1.25 sigma / sqrt(n)."""
    deviations = [
        abs(v - statistics.median(group)) for group in (reference, candidate) for v in group
    ]
    if not deviations:
        return 0.0
    sigma = 1.4826 * statistics.median(deviations) * 2**0.5
    return 1.25 * sigma / len(candidate) ** 0.5
