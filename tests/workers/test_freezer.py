"""The freezer stops a whole process tree between requests, and /proc tells whether it held."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kernelproof.controller.freeze_evidence import frozen_findings
from kernelproof.schema import FindingCheck, Severity
from kernelproof.workers.freezer import DRAIN_LIMIT_S, Freezer, thread_states
from kernelproof.workers.process_tree import ProcessTree, process_cpu_s

#: A process that spins on two threads and forks a child that spins too.
SPINNER = """
import os, threading, time
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
if os.fork() == 0:
    spin()
print(os.getpid(), flush=True)
spin()
"""


@pytest.fixture
def spinner():
    process = subprocess.Popen(
        [sys.executable, "-c", SPINNER], stdout=subprocess.PIPE, start_new_session=True, text=True
    )
    process.stdout.readline()
    time.sleep(0.1)
    yield process
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _group_cpu_s(freezer: Freezer) -> float:
    return sum(process_cpu_s(pid) or 0.0 for pid in freezer._scan())


def test_a_frozen_tree_accrues_no_cpu_time_children_included(spinner):
    freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
    freezer.freeze()
    assert len(freezer._members) == 2, "the forked child is part of the tree"
    time.sleep(0.05)  # the stops land within a scheduling delay
    for pid in freezer._members:
        assert set(thread_states(pid)) <= {"T"}, thread_states(pid)
    before = _group_cpu_s(freezer)
    time.sleep(0.3)
    assert _group_cpu_s(freezer) == pytest.approx(before, abs=1e-4)
    interval = freezer.thaw()
    assert interval is not None and not interval.ran and interval.unstopped == 0
    time.sleep(0.1)
    time.sleep(0.2)
    assert _group_cpu_s(freezer) > before + 0.01, "thawed, it runs again"
    assert frozen_findings([freezer.ledger]) == []


def test_work_while_frozen_is_suspect(spinner):
    """A process of the tree that runs while frozen (here resumed behind the freezer's back,
    as an escaped child would run) shows in /proc's CPU time."""
    freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
    freezer.freeze()
    child = max(freezer._members)
    os.kill(child, signal.SIGCONT)
    time.sleep(0.2)
    interval = freezer.thaw()
    assert interval is not None and interval.ran and interval.cpu_s > 0.02
    findings = frozen_findings([freezer.ledger])
    assert [(f.check, f.severity) for f in findings] == [
        (FindingCheck.RAN_WHILE_FROZEN, Severity.SUSPECT)
    ]
    assert "while they were frozen" in findings[0].message


def test_an_idle_process_frozen_and_thawed_shows_nothing():
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )
    try:
        time.sleep(0.2)
        freezer = Freezer(ProcessTree(process.pid), group=process.pid)
        for _ in range(20):
            freezer.freeze()
            freezer.thaw()
        assert freezer.ledger.intervals == 20 and not freezer.ledger.ran
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def test_a_watching_process_group_is_stopped_with_the_tree(spinner):
    """A stack sampler of the controller's is stopped while the tree is frozen (its attaches
    would wake the stopped threads), and resumed with it."""
    watcher = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
        freezer.watch(watcher.pid)
        freezer.freeze()
        time.sleep(0.05)
        assert set(thread_states(watcher.pid)) == {"T"}
        freezer.thaw()
        time.sleep(0.05)
        assert "T" not in thread_states(watcher.pid)
        freezer.freeze()
        freezer.unwatch(watcher.pid)
        time.sleep(0.05)
        assert "T" not in thread_states(watcher.pid), "unwatched, it runs while the tree is frozen"
        freezer.thaw()
    finally:
        watcher.kill()
        watcher.wait()


def test_a_watching_process_groups_busy_time_is_counted_and_a_frozen_one_adds_none(spinner):
    """The time a stack sampler runs is about the time it holds its target paused: counted
    while it runs, not while the tree, and so the sampler, is frozen."""
    watcher = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
        assert freezer.companions_busy_s() == 0.0
        freezer.watch(watcher.pid)
        start, own_start = freezer.companions_busy_s(), process_cpu_s(watcher.pid)
        time.sleep(0.3)
        running = freezer.companions_busy_s() - start
        own = process_cpu_s(watcher.pid) - own_start
        # Its CPU time as the kernel counts it (however busy the machine left it: 0.1 s of the
        # 0.3 s in one CI run), and not nothing.
        assert running > 0.01 and abs(running - own) < 0.02, (running, own)
        freezer.freeze()
        time.sleep(0.05)
        start = freezer.companions_busy_s()
        time.sleep(0.3)
        assert freezer.companions_busy_s() - start < 0.01
        freezer.thaw()
    finally:
        watcher.kill()
        watcher.wait()


def _tree_cpu_s(freezer: Freezer) -> float:
    return sum(process_cpu_s(pid) or 0.0 for pid in freezer._members)


def test_an_unwatched_request_keeps_the_sampler_stopped_while_the_tree_runs(spinner):
    """A fetch runs none of the candidate's code: its sampler stays stopped (each sample's
    pause costs every idle thread kernel time, which reads as work done while fetched)."""
    watcher = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
        freezer.watch(watcher.pid)
        freezer.freeze()
        freezer.thaw(watched=False)
        before = _tree_cpu_s(freezer)
        time.sleep(0.2)
        assert set(thread_states(watcher.pid)) == {"T"}, "held while the tree answers"
        assert _tree_cpu_s(freezer) > before + 0.01, "the tree runs"
        freezer.freeze()
        freezer.thaw()
        time.sleep(0.05)
        assert "T" not in thread_states(watcher.pid), "a watched request resumes it"
    finally:
        watcher.kill()
        watcher.wait()


#: A companion stopped in the middle of a sample: it has attached the tree's main thread
#: (ptrace, as py-spy does per sample) and holds it stopped; resumed, it detaches.
MID_SAMPLE = """
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
pid = int(sys.argv[1])
if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
    sys.exit(f"ptrace refused: errno {ctypes.get_errno()}")
libc.ptrace(PTRACE_INTERRUPT, pid, None, None)
os.waitpid(pid, 0x40000000)  # __WALL: the tracee's stop
print("attached", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)  # the freeze lands here
libc.ptrace(PTRACE_DETACH, pid, None, None)
time.sleep(60)
"""


def test_a_sampler_stopped_mid_sample_lets_go_before_an_unwatched_request(spinner):
    """A sampler frozen while it held the tree's threads would keep them stopped through the
    fetch (the worker could not answer): it is let run until it has let go, then stopped."""
    companion = subprocess.Popen(
        [sys.executable, "-c", MID_SAMPLE, str(spinner.pid)],
        stdout=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    try:
        assert companion.stdout.readline().strip() == "attached"
        freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
        freezer.watch(companion.pid)
        freezer.freeze()
        assert _traced(spinner.pid), "the companion holds the tree's main thread"
        freezer.thaw(watched=False)
        assert not _traced(spinner.pid), "it let go before the tree was resumed"
        assert set(thread_states(companion.pid)) == {"T"}, "and it stays stopped"
        before = _tree_cpu_s(freezer)
        time.sleep(0.2)
        assert _tree_cpu_s(freezer) > before + 0.01, "the tree runs"
        assert not freezer.ledger.ran
        assert (freezer.ledger.holds, freezer.ledger.hold_failures) == (1, 0)
    finally:
        companion.kill()
        companion.wait()


def test_a_sampler_that_never_lets_go_is_resumed_with_the_tree_and_counted(spinner):
    """Where a stopped sampler still holds the tree's threads after every try, holding it
    would keep the worker from answering: it is resumed with the tree, and the ledger counts
    the fetch whose evidence then includes the sampler's pauses."""
    holds_on = MID_SAMPLE.replace("libc.ptrace(PTRACE_DETACH, pid, None, None)\n", "")
    companion = subprocess.Popen(
        [sys.executable, "-c", holds_on, str(spinner.pid)],
        stdout=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    try:
        assert companion.stdout.readline().strip() == "attached"
        freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
        freezer.watch(companion.pid)
        freezer.freeze()
        freezer.thaw(watched=False)
        assert (freezer.ledger.holds, freezer.ledger.hold_failures) == (1, 1)
        findings = frozen_findings([freezer.ledger])
        assert [(f.check, f.severity) for f in findings] == [
            (FindingCheck.NATIVE_STACKS, Severity.INFO)
        ]
        assert "1 of 1 fetches" in findings[0].message
        time.sleep(0.05)
        assert "T" not in thread_states(companion.pid), "resumed with the tree"
    finally:
        companion.kill()
        companion.wait()


def _traced(pid: int) -> bool:
    from kernelproof.workers.freezer import _traced_threads

    return _traced_threads(pid) > 0


#: A sampler on py-spy's schedule: a 1 ms "sample" every 10 ms against the wall clock, and
#: every sample missed while it was stopped taken back to back once it is resumed.
CATCHING_UP = """
import time
desired = time.monotonic()
while True:
    desired += 0.01
    now = time.monotonic()
    if desired > now:
        time.sleep(desired - now)
    start = time.monotonic()
    while time.monotonic() - start < 0.001:
        pass
"""


def test_resumed_samplers_catch_up_before_the_request_not_during_it(spinner):
    """Resumed after the tree's freeze, a sampler takes the samples it missed back to back:
    the wait for it ends once it has caught up, so the request's calls are not paused by the
    burst (it pulled timed speedups toward 1)."""
    sampler = subprocess.Popen([sys.executable, "-c", CATCHING_UP], start_new_session=True)
    try:
        time.sleep(0.2)
        freezer = Freezer(ProcessTree(spinner.pid), group=spinner.pid)
        freezer.watch(sampler.pid)
        freezer.freeze()
        time.sleep(0.5)  # 50 samples missed: a 50 ms burst once resumed
        freezer.thaw()
        waited = freezer.drain_companions()
        assert 0.02 < waited < DRAIN_LIMIT_S + 0.1, waited
        start, since = freezer.companions_busy_s(), time.monotonic()
        time.sleep(0.2)
        after, elapsed = freezer.companions_busy_s() - start, time.monotonic() - since
        # Caught up: a 1 ms sample per 10 ms (however long a loaded machine stretched the
        # sleep), not a burst.
        assert after < 0.2 * elapsed + 0.01, f"still catching up: {after:.3f} s in {elapsed:.3f} s"
        freezer.freeze()
        freezer.thaw()
    finally:
        sampler.kill()
        sampler.wait()
