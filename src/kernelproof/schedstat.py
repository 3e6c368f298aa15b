"""What the scheduler says about a thread: seconds it ran on a CPU and seconds it was runnable
but waited for one (``/proc/<pid>/task/<tid>/schedstat``).

These two numbers separate the machine's doing from the candidate's. A thread that waited for
a CPU because the machine is busy did no work in that time: a check that rests on time (how
much of a batch the worker's clock accounts for, how much untimed time a batch holds) must not
read that wait as the candidate's. Both are kept by the kernel, outside any process the
candidate owns.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


def process_busy_s(pid: int) -> float:
    """Seconds every thread of process ``pid`` ran on a CPU (0 when gone)."""
    import os

    total = 0.0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        stats = thread_schedstat_s(pid, int(tid))
        if stats is not None:
            total += stats[0]
    return total


def thread_schedstat_s(pid: int, tid: int) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting) of one thread; None when unreadable."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as handle:
            running, waiting = handle.read().split()[:2]
        return int(running) / 1e9, int(waiting) / 1e9
    except (OSError, ValueError):
        return None


def own_wait_s() -> float:
    """Seconds the calling (controller) thread has waited for a CPU so far: a controller kept
    off the CPU reads a worker's reply late, and the wait lands in the batch's wall time."""
    import os

    stats = thread_schedstat_s(os.getpid(), threading.get_native_id())
    return stats[1] if stats is not None else 0.0


@dataclass(frozen=True)
class SchedulerSample:
    """A worker's CPU accounting at one instant, read from /proc."""

    cpu_s: float
    """CPU seconds of all the worker's processes and threads (exited threads included)."""

    main_run_s: float
    """CPU seconds of the serving process's main thread."""

    main_wait_s: float
    """Seconds the main thread was runnable but waited for a CPU."""

    controller_wait_s: float
    """Seconds the controller's thread waited for a CPU."""

    sampler_busy_s: float = 0.0
    """Seconds the controller's stack samplers of this worker ran on a CPU. A native sample
    pauses every thread of the worker while the sampler reads its stacks, so this is about
    how long the worker was held stopped (neither running, nor waiting for a CPU, nor asleep
    by its own doing). Their waits for a CPU are left out: on a busy machine a sampler waits
    mostly before it attaches, while its target runs, and a pause overstated would turn a
    joined pool's sleep into a second thread's work (an honest relu pool was called so)."""

    @property
    def side_cpu_s(self) -> float:
        """CPU seconds of every thread and process but the main thread."""
        return max(0.0, self.cpu_s - self.main_run_s)

    def since(self, start: SchedulerSample) -> SchedulerSample:
        return SchedulerSample(
            *(
                max(0.0, a - b)
                for a, b in zip(
                    (
                        self.cpu_s,
                        self.main_run_s,
                        self.main_wait_s,
                        self.controller_wait_s,
                        self.sampler_busy_s,
                    ),
                    (
                        start.cpu_s,
                        start.main_run_s,
                        start.main_wait_s,
                        start.controller_wait_s,
                        start.sampler_busy_s,
                    ),
                )
            )
        )


def sample(worker: object | None) -> SchedulerSample:
    """The worker's accounting now (zeros when there is no worker or /proc says nothing)."""
    tree = getattr(worker, "tree", None)
    if tree is None:
        return SchedulerSample(0.0, 0.0, 0.0, own_wait_s())
    cpu_s, _ = tree.cpu_split_s()
    running, waiting = tree.main_schedstat_s()
    freezer = getattr(worker, "freezer", None)
    busy = freezer.companions_busy_s() if freezer is not None else 0.0
    return SchedulerSample(cpu_s, running, waiting, own_wait_s(), busy)
