"""A worker's processes as the controller sees them from outside, through ``/proc``.

Nothing here asks the worker anything: a candidate owns its process and can make it say
whatever it likes, but it cannot change what the kernel reports about it. These facts (which
namespaces it is in, whether seccomp and no_new_privs are on, which capabilities it holds, how
much CPU time and memory its processes use) are the evidence the controller checks the
worker's own words against.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

#: How long a member list stays fresh. Scanning /proc costs about a millisecond; a candidate
#: that forks gets its new processes counted within this delay.
RESCAN_S = 0.5

#: Namespaces checked from outside; each must differ from the controller's own.
NAMESPACE_KINDS = ("user", "pid", "net", "ipc", "mnt", "uts")


def _cpu_clock(pid: int) -> int:
    """The clock id of a process's CPU time (all its threads), as clock_getcpuclockid gives."""
    return ((~pid) << 3) | 2  # CPUCLOCK_SCHED of the whole process


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds used by one process (all threads), nanosecond resolution; None when gone."""
    try:
        return time.clock_gettime(_cpu_clock(pid))
    except OSError:
        return None


def _namespace(pid: int, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)
    except OSError:
        return {}


@dataclass
class Confinement:
    """What ``/proc`` shows about the serving process of a sandboxed worker."""

    namespaces: dict[str, bool] = field(default_factory=dict)
    """Per namespace kind: True when it differs from the controller's."""

    seccomp: bool = False
    no_new_privs: bool = False
    capabilities: str = ""
    """Effective capabilities (hex), as the worker's own user namespace grants them."""

    def missing(self) -> list[str]:
        """Every wall that ``/proc`` says is not up."""
        gaps = [f"{kind}-namespace" for kind, separate in self.namespaces.items() if not separate]
        if not self.seccomp:
            gaps.append("seccomp")
        if not self.no_new_privs:
            gaps.append("no_new_privs")
        if self.capabilities.strip("0"):
            gaps.append("capabilities")
        return gaps


@dataclass
class ProcessTree:
    """The processes of one worker: its root (the process the controller started) and, for a
    sandboxed worker, every process in the pid namespace the root created."""

    root: int
    _members: list[int] = field(default_factory=list)
    _scanned: float = 0.0
    _pid_namespace: str | None = None
    _server: int = 0

    def members(self) -> list[int]:
        now = time.monotonic()
        if now - self._scanned > RESCAN_S or not self._members:
            self._members = self._scan()
            self._scanned = now
        return self._members

    def refresh(self) -> list[int]:
        self._scanned = 0.0
        return self.members()

    def _scan(self) -> list[int]:
        if self._pid_namespace is None:
            try:
                inner = os.readlink(f"/proc/{self.root}/ns/pid_for_children")
            except OSError:
                return [self.root]
            if inner == _namespace(self.root, "pid"):
                return [self.root]  # not sandboxed: the root is the worker
            self._pid_namespace = inner
        found = [self.root]
        try:
            entries = os.listdir("/proc")
        except OSError:
            return found
        for entry in entries:
            if entry.isdigit() and _namespace(int(entry), "pid") == self._pid_namespace:
                found.append(int(entry))
        return descendants(self.root, found)

    def server(self) -> int:
        """The process that serves requests: the root, or pid 2 of its pid namespace (pid 1
        is the namespace's init, which forks the harness first)."""
        for pid in self.refresh():
            if pid != self.root and _inner_pid(pid) == 2:
                return pid
        return self.root

    def _serving(self) -> int:
        """:meth:`server`, remembered once it is not the root. A sandboxed worker asked before
        its pid namespace has a serving process answers with its root, which only waits: its
        main thread read as the harness's would put every CPU second of the harness off the
        main thread. (An unsandboxed worker's root is its server; finding it again costs two
        readlinks.)"""
        if self._server:
            return self._server
        server = self.server()
        if server != self.root:
            self._server = server
        return server

    def cpu_s(self) -> float:
        """CPU seconds of every live member, all threads."""
        total = 0.0
        for pid in self.members():
            seconds = process_cpu_s(pid)
            if seconds is not None:
                total += seconds
        return total

    def cpu_split_s(self) -> tuple[float, float]:
        """(CPU seconds of every member, all threads including exited ones; CPU seconds of the
        serving process's main thread, which runs the harness and the calls). What the first
        has beyond the second was done by threads or processes the candidate started: a pool
        behind the reported thread count, or a helper working between timed calls."""
        server = self._serving()
        try:
            with open(f"/proc/{server}/task/{server}/schedstat") as handle:
                main = int(handle.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            main = 0.0
        return self.cpu_s(), main

    def main_schedstat_s(self) -> tuple[float, float]:
        """(seconds on a CPU, seconds runnable but waiting for one) of the serving process's
        main thread, from the scheduler's own accounting: what a neighbour that starves the
        worker of CPU cannot hide."""
        server = self._serving()
        try:
            with open(f"/proc/{server}/task/{server}/schedstat") as handle:
                running, waiting = handle.read().split()[:2]
            return int(running) / 1e9, int(waiting) / 1e9
        except (OSError, ValueError):
            return 0.0, 0.0

    def resident_bytes(self) -> int:
        page = os.sysconf("SC_PAGE_SIZE")
        total = 0
        for pid in self.members():
            try:
                with open(f"/proc/{pid}/statm") as statm:
                    total += int(statm.read().split()[1]) * page
            except (OSError, ValueError, IndexError):
                pass
        return total

    def confinement(self) -> Confinement:
        """Read, from outside, which walls the serving process is behind."""
        server = self.server()
        own = os.getpid()
        status = _status(server)
        return Confinement(
            namespaces={
                kind: (_namespace(server, kind) or "") not in ("", _namespace(own, kind))
                for kind in NAMESPACE_KINDS
            },
            seccomp=status.get("Seccomp", "0").strip() == "2",
            no_new_privs=status.get("NoNewPrivs", "0").strip() == "1",
            capabilities=status.get("CapEff", "").strip(),
        )


def descendants(root: int, pids: list[int]) -> list[int]:
    """``root`` and those of ``pids`` descended from it. A process that entered the sandbox's
    pid namespace from outside (py-spy, which the controller runs there through ``nsenter`` to
    sample the candidate's stacks) is in the namespace but not the candidate's: its CPU time is
    not the candidate's, and counted as such it read as work off the candidate's main thread
    (``cpu-time``). The candidate cannot enter a namespace itself (seccomp refuses ``setns``)."""
    parents = {pid: _status(pid).get("PPid", "") for pid in pids}
    kept = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if pid not in kept and parent.isdigit() and int(parent) in kept:
                kept.add(pid)
                changed = True
    return [pid for pid in pids if pid in kept]


def _inner_pid(pid: int) -> int:
    chain = _status(pid).get("NSpid", "").split()
    return int(chain[-1]) if chain else 0
