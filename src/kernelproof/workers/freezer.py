"""Keeping the candidate from running while it is not being asked: its whole process tree is
stopped between requests, and ``/proc`` shows whether it stayed stopped.

The controller sends SIGSTOP to every process of the worker once a reply has been read in
full, and SIGCONT just before the next request goes out. No process can catch, block or ignore
SIGSTOP, and a stopped process can neither run nor fork; the sandbox's seccomp filter forbids
ptrace, the one way a process could suppress another's stop. What holds is checked, not
assumed: the CPU time of every process (all threads, read with the process's CPU clock) is read
once the tree is stopped and again before it is resumed, and any CPU time in between means some
process ran while frozen (a helper that finishes outputs after its call returned, a spinner
that slows the reference while it is timed, a forked child that escaped the freeze).

A sandboxed worker's tree is every process of its pid namespace, which no child can leave; an
unsandboxed worker's is its process group (a child that calls ``setsid`` escapes it, one more
reason the sandbox is required for ``verified``).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

from kernelproof.schedstat import process_busy_s, thread_schedstat_s
from kernelproof.workers.process_tree import ProcessTree, process_cpu_s

#: CPU seconds a stopped tree may still show between freeze and thaw: a runnable thread that
#: was waiting for a CPU when SIGSTOP came takes its stop in the kernel when it is next
#: scheduled (microseconds each), and a stack sampler attaching to a stopped thread wakes it
#: into a trace stop for as long. A thread inside a long system call (freeing a large buffer)
#: takes the stop only when it returns: an honest folded-BatchNorm conv showed 3.3 ms so, on a
#: loaded machine. No user-space code runs once the stop has landed, so what slips under this
#: floor is kernel work already under way, not the candidate's computation. Anything above
#: this and :data:`FROZEN_CPU_SHARE` ran.
FROZEN_CPU_FLOOR_S = 10e-3

#: ... or this share of the frozen interval, whichever is larger: sampling pauses (py-spy at
#: its rate, every thread) add kernel time in proportion to the interval's length.
FROZEN_CPU_SHARE = 0.01

#: How long a freeze waits for every thread to show the stopped state before it takes its CPU
#: baseline; past it the baseline is taken anyway (the interval's CPU floor then covers a stop
#: that lands later).
STOP_WAIT_S = 0.2

#: Tries to have a companion stopped mid-sample let go of the tree (see
#: ``Freezer._hold_companions``), and how long it runs on each time: a native sample of a
#: worker takes a few milliseconds.
HOLD_TRIES = 20
HOLD_RELEASE_S = 0.003

#: How the wait for resumed companions to catch up on their missed samples (see
#: ``Freezer.drain_companions``) polls: every ``DRAIN_POLL_S``; caught up once they ran or
#: waited for a CPU less than ``DRAIN_IDLE_SHARE`` of a poll; never longer than
#: ``DRAIN_LIMIT_S``.
DRAIN_POLL_S = 0.005
DRAIN_IDLE_SHARE = 0.25
DRAIN_LIMIT_S = 0.3

#: Rescans of the tree while freezing: a process forked between a scan and its parent's stop
#: is found by the next scan; a stopped tree cannot fork, so the scans end once one finds
#: nothing new.
MAX_RESCANS = 8


@dataclass(frozen=True)
class FrozenInterval:
    """One interval the tree spent frozen, as ``/proc`` showed it."""

    seconds: float
    cpu_s: float
    """CPU time the tree's processes accrued while frozen (0 when it stayed frozen)."""

    unstopped: int
    """Threads not in the stopped state when the tree was thawed."""

    busiest: str = ""
    """The process that ran most while frozen: its command name and CPU milliseconds."""

    @property
    def ran(self) -> bool:
        """Whether the tree ran while frozen by more than a stop's own cost."""
        return self.cpu_s > max(FROZEN_CPU_FLOOR_S, FROZEN_CPU_SHARE * self.seconds)


@dataclass
class FreezeLedger:
    """Every frozen interval of one worker's life, summarised."""

    intervals: int = 0
    frozen_s: float = 0.0
    leaked_cpu_s: float = 0.0
    """CPU time accrued while frozen, over the intervals in which the tree ran."""

    ran: list[FrozenInterval] = field(default_factory=list)
    """The intervals in which the tree ran (the first few)."""

    failures: list[str] = field(default_factory=list)
    """Why a freeze could not be applied (signals refused): the freeze then did not hold."""

    holds: int = 0
    """Requests that run none of the candidate's code (fetches) answered while stack samplers
    watched the tree: each time the samplers are to stay stopped (``Freezer._hold_companions``)."""

    hold_failures: int = 0
    """Of those, the ones where a sampler still held the tree's threads after every try, so
    it was resumed with the tree and its pauses were charged to the fetch."""

    def record(self, interval: FrozenInterval) -> None:
        self.intervals += 1
        self.frozen_s += interval.seconds
        if interval.ran:
            self.leaked_cpu_s += interval.cpu_s
            if len(self.ran) < 5:
                self.ran.append(interval)


@dataclass
class Freezer:
    """Stops and resumes one worker's process tree, and checks the stop held."""

    tree: ProcessTree
    group: int | None = None
    """The worker's process group, for an unsandboxed worker (its children share it)."""

    ledger: FreezeLedger = field(default_factory=FreezeLedger)
    companions: set[int] = field(default_factory=set)
    """Process groups of the controller's own that watch the tree (a stack sampler): stopped
    with it, so that none wakes the stopped tree to sample it (each ptrace attach of a
    stopped thread costs it kernel time, which would read as work done while frozen)."""

    _companion_members: dict[frozenset[int], list[int]] = field(default_factory=dict)

    frozen: bool = False
    stop_wait_s: float = 0.0
    """How long the last freeze waited for its stops to land."""

    baseline_cpu_s: float = 0.0
    """CPU seconds of the tree's processes once the last freeze had landed: with the CPU time
    read when the reply came, it bounds what the tree did between its reply and its stop."""

    _members: list[int] = field(default_factory=list)
    _cpu_s: dict[int, float] = field(default_factory=dict)
    _since: float = 0.0

    def freeze(self) -> None:
        """Stop every process of the tree and take the CPU baseline. Idempotent."""
        if self.frozen:
            return
        for group in self.companions:
            _signal_group(group, signal.SIGSTOP)
        if self.group is not None:
            # One signal to the whole process group first: the kernel delivers it to every
            # member at once, and a fork racing it is restarted after the stop, so the
            # group needs no rescan; only a process that left the group (setsid) does.
            _signal_group(self.group, signal.SIGSTOP)
        known: set[int] = set()
        for _ in range(MAX_RESCANS):
            found = [pid for pid in self._scan() if pid not in known]
            if not found:
                break
            for pid in found:
                self._signal(pid, signal.SIGSTOP)
            known.update(found)
            if self.group is not None and all(_group_of(pid) == self.group for pid in found):
                break
        self._members = sorted(known)
        # The stop lands only once a thread of each process has run to take it: on a loaded
        # machine that thread may wait milliseconds for a CPU while the others still run.
        # The baseline is taken once every thread shows stopped, so that what the tree did
        # before the stop landed is not read as work done while frozen.
        self.stop_wait_s = _wait_stopped(self._members, STOP_WAIT_S)
        self._cpu_s = {pid: cpu for pid in self._members if (cpu := process_cpu_s(pid)) is not None}
        self.baseline_cpu_s = sum(self._cpu_s.values())
        self._since = time.monotonic()
        self.frozen = True

    def thaw(self, watched: bool = True) -> FrozenInterval | None:
        """Check the tree stayed frozen, record the interval, and resume every process; the
        companions too unless ``watched`` is False (see :meth:`_hold_companions`)."""
        if not self.frozen:
            return None
        seconds = time.monotonic() - self._since
        # No rescan: a frozen tree cannot fork, so its members are the ones the freeze found.
        members = self._members
        ran = {}
        for pid in members:
            now = process_cpu_s(pid)
            if now is not None:
                ran[pid] = max(0.0, now - self._cpu_s.get(pid, 0.0))
        busiest = max(ran, key=ran.__getitem__, default=None)
        interval = FrozenInterval(
            seconds=seconds,
            cpu_s=sum(ran.values()),
            unstopped=sum(_unstopped_threads(pid) for pid in members),
            busiest=""
            if busiest is None
            else f"{_command(busiest)} ({ran[busiest] * 1e3:.1f} ms, stop waited "
            f"{self.stop_wait_s * 1e3:.0f} ms)",
        )
        self.ledger.record(interval)
        held = not watched and self._hold_companions(members)
        if not watched and self.companions:
            self.ledger.holds += 1
            self.ledger.hold_failures += not held
        for pid in sorted(members):
            self._signal(pid, signal.SIGCONT)
        if not held:
            for group in self.companions:
                _signal_group(group, signal.SIGCONT)
        self.frozen = False
        return interval

    def _hold_companions(self, members: list[int]) -> bool:
        """Keep the companions stopped while the resumed tree answers a request that runs
        none of the candidate's code (a fetch of its outputs): each sample pauses every thread
        of the tree, and the kernel charges the pause to each thread, so idle threads would
        show CPU time off the main thread that reads as work done while fetched (an honest
        OpenMP kernel's two idle pool threads took 0.3-0.9 ms each per fetch on a loaded
        machine). A companion stopped mid-sample still holds the threads it attached: before
        the tree is resumed, it is let run on, a few milliseconds at a time, until no thread
        of the tree has a tracer (the tree is still stopped, so that costs it no run time in
        any window that is judged). False when it could not be done (then the companions are
        resumed with the tree, as for a watched request)."""
        if not self.companions:
            return True
        companions = self._companions()
        for _ in range(HOLD_TRIES):
            _wait_stopped(companions, STOP_WAIT_S)
            if not any(_traced_threads(pid) for pid in members):
                return True
            for group in self.companions:
                _signal_group(group, signal.SIGCONT)
            time.sleep(HOLD_RELEASE_S)
            for group in self.companions:
                _signal_group(group, signal.SIGSTOP)
        return False

    def watch(self, group: int) -> None:
        """Stop process group ``group`` (the controller's) whenever the tree is frozen."""
        self.companions.add(group)
        if self.frozen:
            _signal_group(group, signal.SIGSTOP)

    def drain_companions(self) -> float:
        """Wait, with the tree resumed but not yet asked anything, until the companions have
        taken the samples they missed while stopped; the seconds waited.

        py-spy keeps its sampling schedule against the wall clock: resumed after a stop, it
        takes every sample it missed back to back. Taken during a timed batch, that burst
        (the other worker's whole batch and fetch, at 100 a second) paused the calls for much
        of a 60 ms batch, on both sides alike, and pulled speedups toward 1 (an honest 51x
        broadcast was timed at 28x with the stacks sampled). Taken here, the burst samples an
        idle worker. The caller counts the tree's CPU time from before the wait, so what the
        candidate runs meanwhile is accounted as part of its request."""
        if not self.companions:
            return 0.0
        started = time.monotonic()
        members = self._companions()
        last = _activity_s(members)
        while time.monotonic() - started < DRAIN_LIMIT_S:
            time.sleep(DRAIN_POLL_S)
            now = _activity_s(members)
            # A thread that waits for a CPU shows neither run time nor wait time until it gets
            # one (schedstat counts the wait when it ends), so a burst preempted for a whole poll
            # looks idle by the clocks alone; its state still says runnable.
            if now - last < DRAIN_IDLE_SHARE * DRAIN_POLL_S and not _runnable_threads(members):
                break  # asleep between samples: caught up
            last = now
        return time.monotonic() - started

    def _companions(self) -> list[int]:
        members = self._companion_members.get(frozenset(self.companions))
        if members is None or len(members) < 2 * len(self.companions):
            # Kept per set of groups once each has its two processes (nsenter and the py-spy it
            # forks): read before the fork, the list would miss py-spy for the whole window.
            # A sampler run without nsenter is one process, rescanned each time (a /proc walk).
            members = [pid for g in sorted(self.companions) for pid in _group_members(g)]
            self._companion_members = {frozenset(self.companions): members}
        return members

    def companions_busy_s(self) -> float:
        """Seconds the watched groups' threads (the controller's stack samplers) have run on
        a CPU so far: the time they held this tree paused, about (see
        :attr:`kernelproof.schedstat.SchedulerSample.sampler_busy_s`)."""
        if not self.companions:
            return 0.0
        return sum(process_busy_s(pid) for pid in self._companions())

    def unwatch(self, group: int) -> None:
        """Stop freezing ``group``, and resume it if it is stopped now."""
        if group in self.companions:
            self.companions.discard(group)
            _signal_group(group, signal.SIGCONT)

    def _scan(self) -> list[int]:
        """The tree's processes: the root's descendants among the processes of its pid
        namespace (a sandboxed worker) or of its process group. A process the controller
        itself started inside the sandbox's namespaces (the stack sampler, entered with
        nsenter) is the controller's child, not the worker's, and is left alone."""
        members = self.tree.refresh()
        if self.group is not None and len(members) == 1:
            members = sorted(set(members) | set(_group_members(self.group)))
        return _descendants(self.tree.root, members)

    def _signal(self, pid: int, sig: signal.Signals) -> None:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass  # exited since the scan: nothing left to stop
        except OSError as exc:
            if len(self.ledger.failures) < 5:
                self.ledger.failures.append(f"{sig.name} to pid {pid} refused: {exc}")


def _signal_group(group: int, sig: signal.Signals) -> None:
    try:
        os.killpg(group, sig)
    except OSError:
        pass  # the group is gone


def thread_states(pid: int) -> list[str]:
    """The scheduler state letter of every thread of ``pid`` (empty when it is gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    states = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as handle:
                text = handle.read()
        except OSError:
            continue
        # The command name (in parentheses) may hold spaces and parentheses of its own.
        states.append(text[text.rfind(")") + 2 :][:1])
    return states


def _activity_s(pids: list[int]) -> float:
    """Seconds the processes ``pids`` have run on a CPU (their CPU clocks, exact to now) or
    waited for one (schedstat: a busy sampler on a loaded machine waits as much as it runs;
    schedstat's run time lags a running thread by up to a scheduler tick, the clock does not)."""
    total = 0.0
    for pid in pids:
        total += process_cpu_s(pid) or 0.0
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            stats = thread_schedstat_s(pid, int(tid))
            if stats is not None:
                total += stats[1]
    return total


def _traced_threads(pid: int) -> int:
    """Threads of ``pid`` that a tracer (a stack sampler) is attached to."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    traced = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as handle:
                for line in handle:
                    if line.startswith("TracerPid:"):
                        traced += line.split()[1] != "0"
                        break
        except (OSError, IndexError):
            continue
    return traced


def _unstopped_threads(pid: int) -> int:
    """Threads of ``pid`` that are neither stopped nor dead."""
    return sum(state not in ("T", "t", "Z", "X", "x") for state in thread_states(pid))


def _runnable_threads(pids: list[int]) -> int:
    """Threads of ``pids`` running or waiting for a CPU."""
    return sum(state == "R" for pid in pids for state in thread_states(pid))


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return "?"


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def _descendants(root: int, candidates: list[int]) -> list[int]:
    """``root`` and those of ``candidates`` whose chain of parents leads to it."""
    parents = {pid: _parent(pid) for pid in candidates}
    kept = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if pid not in kept and parent in kept:
                kept.add(pid)
                changed = True
    return sorted(kept)


def _wait_stopped(pids: list[int], limit_s: float) -> float:
    """Wait until every thread of ``pids`` shows as stopped, at most ``limit_s``; the seconds
    waited."""
    started = time.monotonic()
    while any(_unstopped_threads(pid) for pid in pids):
        if time.monotonic() - started > limit_s:
            break
        time.sleep(0.0005)
    return time.monotonic() - started


def _group_members(group: int) -> list[int]:
    """Processes whose process group is ``group`` (an unsandboxed worker and its children)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                text = handle.read()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(group):
            found.append(int(entry))
    return found
