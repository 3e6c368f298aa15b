"""The timing half of the fake pair (:mod:`tests.controller.fake_pair`): scripted facts about
timed batches, so that the timing session's evidence rules can be driven in milliseconds.

A *clock* is a function ``(Batch) -> Seen``, one per side. For every timed batch it says what
the worker reports (its per-call times, its input generation and timed wall time: the
candidate's own word) and what the controller saw of the request from outside (its own clock
around it, and the CPU and wait times /proc gave for the worker's threads). It may raise (the
batch fails) or return the fake pair's ``DIES`` (the worker dies). :func:`honest` is the
default: what the worker reports is what it did, all of it on its main thread, on an idle
machine. :func:`under_reported` and :func:`starved` change one side's facts the way a patched
timer and a busy machine do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kernelproof.schedstat import SchedulerSample

#: A millisecond, in seconds.
MS = 1e-3

#: Untimed seconds per call of an honest worker (building the inputs, flushing the caches):
#: the same on both sides, since both harnesses do the same work between calls.
UNTIMED_S = 50e-6

#: How far an honest call's time strays from its nominal time, as a share (by seed): enough
#: that the speedup's interval has a width, small enough to converge in a few rounds.
JITTER = 0.02


@dataclass(frozen=True)
class Batch:
    """One timed batch (a ``TimeRequest``) as a fake worker receives it."""

    seeds: tuple[int, ...]
    """One timed call per seed."""

    number: int
    """Timed batches this worker answered before this one (0: the warm-up)."""

    baseline: str = "eager"
    """What is timed (``eager``; ``compile`` for the baseline worker)."""

    knobs: dict[str, int] = field(default_factory=dict)
    """The shape the worker was last prepared at."""


@dataclass(frozen=True)
class Seen:
    """One request as the worker reported it and as the controller saw it from outside."""

    wall_s: float
    """The controller's clock from sending the request to reading its reply."""

    proc: SchedulerSample
    """What /proc saw in that window: CPU of all the worker's threads and of its main
    thread, the main thread's and the controller's waits for a CPU."""

    times: tuple[float, ...] = ()
    """The per-call seconds the worker reports, in the order of the seeds."""

    generation_s: float = 0.0
    """Seconds the worker reports for building the batch's inputs."""

    timed_wall_s: float = 0.0
    """Seconds the worker reports from the end of input generation to its last call's end."""

    after_freeze: SchedulerSample | None = None
    """What /proc saw until the freeze after the reply landed (a frozen worker), or None."""


Clock = Callable[[Batch], object]
"""Gives a batch's :class:`Seen`, raises (the batch fails) or returns ``DIES``."""

#: What the controller sees of any other request (prepare, run, fetch, work): a millisecond
#: of the worker's main thread and nothing else.
QUIET = Seen(wall_s=MS, proc=SchedulerSample(MS, MS, 0.0, 0.0))


def honest(
    call_s: float, *, untimed_s: float = UNTIMED_S, jitter: float = JITTER
) -> Callable[[Batch], Seen]:
    """A worker whose calls take ``call_s`` (within ``jitter``, by seed) and report it: its
    batch's wall time is its calls plus ``untimed_s`` a call of untimed work, every second of
    it ran on its main thread, which never waited for a CPU."""
    salt = int(call_s * 1e9)

    def clock(batch: Batch) -> Seen:
        times = tuple(call_s * (1 + jitter * _spread(seed, salt)) for seed in batch.seeds)
        untimed = untimed_s * len(times)
        wall = sum(times) + untimed
        return Seen(
            wall_s=wall,
            proc=SchedulerSample(
                cpu_s=wall, main_run_s=wall, main_wait_s=0.0, controller_wait_s=0.0
            ),
            times=times,
            generation_s=untimed,
            timed_wall_s=sum(times),
        )

    return clock


def under_reported(seen: Seen, share: float) -> Seen:
    """The same batch reported by a timer that counts ``share`` of real time (a patched
    clock): everything the worker says shrinks, nothing the controller saw does."""
    return replace(
        seen,
        times=tuple(t * share for t in seen.times),
        generation_s=seen.generation_s * share,
        timed_wall_s=seen.timed_wall_s * share,
    )


def starved(seen: Seen, stretch: float) -> Seen:
    """The same batch on a machine that kept the worker's main thread waiting for a CPU: its
    wall time, on the controller's clock and the worker's own alike, is ``stretch`` times as
    long; the CPU its work took is unchanged, and the rest it waited."""
    waited = seen.wall_s * (stretch - 1)
    return replace(
        seen,
        wall_s=seen.wall_s * stretch,
        proc=replace(seen.proc, main_wait_s=seen.proc.main_wait_s + waited),
        times=tuple(t * stretch for t in seen.times),
        generation_s=seen.generation_s * stretch,
        timed_wall_s=seen.timed_wall_s * stretch,
    )


def plus(total: SchedulerSample, more: SchedulerSample) -> SchedulerSample:
    """A worker's running /proc totals after a request that added ``more``."""
    return SchedulerSample(
        cpu_s=total.cpu_s + more.cpu_s,
        main_run_s=total.main_run_s + more.main_run_s,
        main_wait_s=total.main_wait_s + more.main_wait_s,
        controller_wait_s=total.controller_wait_s + more.controller_wait_s,
        sampler_busy_s=total.sampler_busy_s + more.sampler_busy_s,
    )


def _spread(seed: int, salt: int) -> float:
    """A number in [-1, 1) fixed by ``seed`` and ``salt`` (Knuth's multiplicative hash): a
    call's deviation from its nominal time, the same each run."""
    return ((seed ^ salt) * 2654435761 % 2**32) / 2**31 - 1
