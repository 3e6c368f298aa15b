"""The folders and processes a server's local workers leave behind, found and removed.

Each local worker gets its own folder, ``<root>/<pid>``, as its ``TMPDIR``: every
verification's scratch, and so every file a candidate writes and the working directory of
every reference and candidate process, lives beneath it. The worker leads its own session,
which the processes it starts directly inherit (the forkserver); each candidate process leads
a session of its own, whose members (its sandbox's init and whatever the candidate forks) keep
it. So whatever killed a worker (SIGTERM, ``kill -9`` of the worker or of the whole server, the
OOM killer), what it left is found from its pid and its folder: processes of its session,
processes working beneath its folder, and the sessions those lead. The supervisor kills them
and removes the folder when it sees the worker exit, and a server starting on the same store
does the same for every worker that is no longer alive.

The root is per user and per store (the store's URL and the suite, hashed), so two servers of
one user on different stores never touch each other's workers; a worker that is still alive
(another server on the same store) is left alone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import tempfile
from pathlib import Path

__all__ = [
    "kill_leftovers",
    "reap_leftovers",
    "remove_worker_folder",
    "worker_folder",
    "workers_root",
]

#: The file in a worker's folder that records the worker's start time (from /proc), so a
#: reused pid is not taken for the worker.
STARTED_FILE = ".started"


def workers_root(db_url: str, suite: Path) -> Path:
    """The folder holding this store's local worker folders (made 0700 when missing)."""
    key = hashlib.sha256(f"{db_url}\n{suite.resolve()}".encode()).hexdigest()[:16]
    root = Path(tempfile.gettempdir()) / f"kernelproof-serve-{os.getuid()}-{key}"
    root.mkdir(mode=0o700, exist_ok=True)
    if root.stat().st_uid != os.getuid():
        raise PermissionError(
            f"{root} belongs to another user: remove it, or set TMPDIR to a folder of your own"
        )
    return root


def worker_folder(root: Path, pid: int) -> Path:
    """The folder of worker ``pid``, made now, with its start time recorded."""
    folder = root / str(pid)
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / STARTED_FILE).write_text(str(_start_time(pid) or ""))
    return folder


def remove_worker_folder(root: Path, pid: int) -> None:
    """The worker ``pid`` is gone: kill what it left running, remove its folder."""
    kill_leftovers(pid, root / str(pid))
    shutil.rmtree(root / str(pid), ignore_errors=True)


def reap_leftovers(root: Path) -> list[int]:
    """At a server's start: kill the processes and remove the folders of every worker of an
    earlier server on this store that is no longer alive. Returns their pids."""
    reaped = []
    for folder in root.iterdir() if root.is_dir() else []:
        if not folder.name.isdigit():
            continue
        pid = int(folder.name)
        try:
            recorded = (folder / STARTED_FILE).read_text().strip()
        except OSError:
            recorded = ""
        started = _start_time(pid)
        if started is not None and str(started) == recorded:
            continue  # that worker still runs (another server on this store)
        remove_worker_folder(root, pid)
        reaped.append(pid)
    return reaped


def kill_leftovers(worker: int, folder: Path) -> list[int]:
    """SIGKILL what worker ``worker`` left: the processes of its session, those whose working
    directory is beneath ``folder``, and the sessions those lead. Returns the pids killed."""
    processes = {
        pid: fields
        for pid in _pids()
        if (fields := _stat_fields(pid)) is not None and len(fields) >= 4
    }
    # A pid in use as a session id is never given to a new process, so a live process with
    # the worker's pid is another program: its session is none of ours.
    sessions = set() if worker in processes else {str(worker)}
    inside = str(folder.resolve())
    for pid in processes:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == inside or cwd.startswith(inside + "/"):
            sessions.add(str(pid))
    killed = []
    for pid, fields in processes.items():
        if fields[3] in sessions:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
    return killed


def _pids() -> list[int]:
    return [
        int(entry) for entry in os.listdir("/proc") if entry.isdigit() and int(entry) != os.getpid()
    ]


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name: state, ppid, pgrp, session..."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None when it does not run."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])
