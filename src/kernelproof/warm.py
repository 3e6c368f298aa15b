"""The warm verifier: a per-user background process that holds a :class:`Session` and serves
``kernelproof verify`` over a Unix socket, like a build daemon.

A ``kernelproof verify`` process pays 6-8 s here before any kernel runs, mostly importing torch.
With ``kernelproof warm`` running, the CLI (which imports no torch before it looks for the
socket) sends its request to the warm process and prints the report it gets back; the warm
process's forkserver, reference workers and task memos are already there.

Security. The socket lives in ``<cache>/warm/``, a folder only the user can enter (0700), and
is itself 0600; every connection's peer must have the user's own uid (``SO_PEERCRED``).
Candidates never reach it: their workers run in the sandbox, whose mount namespace hides the
cache folder and whose Landlock domain forbids connecting to it. A candidate that kills or
hangs its worker ends as a verdict in the warm process, as in any verification: the process
serves each request in its own thread and turns anything a request raises into an error reply.

Protocol: one JSON line per connection, ``{"op": "verify" | "audit-task" | "ping" | "stop",
...}``, answered
by one JSON line: ``{"ok": true, "report": <the report's JSON>}`` or ``{"ok": false, "error":
...}``.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelproof.config import cache_dir

#: Idle time after which the warm verifier stops itself, by default (``--idle-timeout``).
DEFAULT_IDLE_TIMEOUT_S = 30 * 60

#: How long ``kernelproof warm`` waits for a new warm verifier to answer (torch's import and
#: the forkserver's start take most of it).
START_TIMEOUT_S = 60.0

#: How long a client waits to connect before it verifies in its own process instead.
CONNECT_TIMEOUT_S = 1.0

#: Bytes of one request line at most (paths and settings; a report is an answer, not a request).
MAX_REQUEST_BYTES = 1 << 20


class WarmUnavailable(Exception):
    """No warm verifier answered: the caller verifies in its own process."""


def socket_path() -> Path:
    """The warm verifier's socket, in a folder only this user can enter."""
    return cache_dir() / "warm" / f"verifier-{os.getuid()}.sock"


# -- the client side (imports no torch) -----------------------------------------------------


def ask(request: dict[str, Any], *, timeout_s: float | None = None) -> dict[str, Any]:
    """Send one request to the warm verifier and return its answer. Raises
    :class:`WarmUnavailable` when none is listening."""
    path = socket_path()
    if not path.exists():
        raise WarmUnavailable(f"no warm verifier socket at {path}")
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(CONNECT_TIMEOUT_S)
        client.connect(str(path))
        client.settimeout(timeout_s)
        client.sendall(json.dumps(request).encode() + b"\n")
        answer = _read_line(client, limit=None)
    except OSError as exc:
        raise WarmUnavailable(f"the warm verifier at {path} did not answer: {exc}") from None
    finally:
        client.close()
    if not answer:
        raise WarmUnavailable("the warm verifier closed the connection without answering")
    return json.loads(answer)


def verify_remotely(
    reference: Path, candidate: Path, profile: str, overrides: Mapping[str, Any]
) -> tuple[str, int]:
    """The report's JSON from the warm verifier and its pid; :class:`WarmUnavailable` when
    none is running. A failure inside it is re-raised as a ``RuntimeError``."""
    answer = ask(
        {
            "op": "verify",
            "reference": str(reference.resolve()),
            "candidate": str(candidate.resolve()),
            "profile": profile,
            "overrides": overrides,
        }
    )
    if not answer.get("ok"):
        raise RuntimeError(f"the warm verifier failed: {answer.get('error')}")
    return str(answer["report"]), int(answer.get("pid", 0))


def audit_remotely(
    reference: Path,
    seeds: int | None,
    base_seed: int | None,
    profile: str,
    settings: Mapping[str, Any],
) -> tuple[str, int]:
    """The adequacy audit's JSON from the warm verifier and its pid; :class:`WarmUnavailable`
    when none is running, :class:`kernelproof.errors.TaskError` for a bad task."""
    from kernelproof.errors import TaskError

    answer = ask(
        {
            "op": "audit-task",
            "reference": str(reference.resolve()),
            "seeds": seeds,
            "base_seed": base_seed,
            "profile": profile,
            "settings": settings,
        }
    )
    if not answer.get("ok"):
        if answer.get("user_error"):
            raise TaskError(str(answer.get("error")))
        raise RuntimeError(f"the warm verifier failed: {answer.get('error')}")
    return str(answer["report"]), int(answer.get("pid", 0))


def start(idle_timeout_s: float) -> int:
    """Start the warm verifier in the background (unless one answers already) and wait until
    it answers. Returns its pid."""
    try:
        return int(ask({"op": "ping"}).get("pid", 0))
    except WarmUnavailable:
        pass
    folder = socket_path().parent
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    log = open(folder / f"verifier-{os.getuid()}.log", "ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelproof.warm", "--idle-timeout", str(idle_timeout_s)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
        close_fds=True,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"the warm verifier exited at start (status {process.returncode}); see {log.name}"
            )
        try:
            return int(ask({"op": "ping"}).get("pid", process.pid))
        except WarmUnavailable:
            time.sleep(0.2)
    raise RuntimeError(
        f"the warm verifier did not answer within {START_TIMEOUT_S:.0f} s; see {log.name}"
    )


def stop() -> bool:
    """Stop the warm verifier. False when none was running."""
    try:
        ask({"op": "stop"}, timeout_s=10.0)
    except WarmUnavailable:
        return False
    return True


def _read_line(connection: socket.socket, limit: int | None) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = connection.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if limit is not None and size > limit:
            raise ValueError(f"request over {limit} bytes")
    return b"".join(chunks).strip()


# -- the server side ------------------------------------------------------------------------


class WarmVerifier:
    """The background process: a Session behind a Unix socket."""

    def __init__(self, idle_timeout_s: float) -> None:
        from kernelproof.session import Session

        self.idle_timeout_s = idle_timeout_s
        self.session = Session()
        self.last_used = time.monotonic()
        self.busy = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def serve(self) -> None:
        path = socket_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        if path.exists():
            path.unlink()  # a stale socket: ``start`` found nobody answering on it
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            server.bind(str(path))
        finally:
            os.umask(old_mask)
        os.chmod(path, 0o600)
        server.listen(16)
        server.settimeout(1.0)
        threading.Thread(target=_preload, daemon=True).start()
        try:
            while not self.stopping.is_set() and not self._idle():
                try:
                    connection, _ = server.accept()
                except TimeoutError:
                    continue
                threading.Thread(target=self._handle, args=(connection,), daemon=True).start()
        finally:
            server.close()
            if path.exists():
                path.unlink()
            self.session.close()

    def _idle(self) -> bool:
        with self.lock:
            return self.busy == 0 and time.monotonic() - self.last_used > self.idle_timeout_s

    def _handle(self, connection: socket.socket) -> None:
        with self.lock:
            self.busy += 1
        try:
            if _peer_uid(connection) != os.getuid():
                return  # only this user's own processes are served
            request = json.loads(_read_line(connection, MAX_REQUEST_BYTES) or b"{}")
            answer = self._answer(request)
            connection.sendall(json.dumps(answer).encode() + b"\n")
        except Exception as exc:  # noqa: BLE001 - a bad request must not stop the server
            try:
                connection.sendall(
                    json.dumps({"ok": False, "error": str(exc)[:2000]}).encode() + b"\n"
                )
            except OSError:
                pass
        finally:
            connection.close()
            with self.lock:
                self.busy -= 1
                self.last_used = time.monotonic()

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op == "stop":
            self.stopping.set()
            return {"ok": True, "pid": os.getpid()}
        if op == "verify":
            overrides = {
                k: v for k, v in dict(request.get("overrides") or {}).items() if v is not None
            }
            report = self.session.verify(
                Path(request["reference"]),
                Path(request["candidate"]),
                profile=str(request.get("profile") or "default"),
                **overrides,
            )
            return {"ok": True, "pid": os.getpid(), "report": report.to_json()}
        if op == "audit-task":
            return self._audit(request)
        return {"ok": False, "error": f"unknown op {op!r}"}

    def _audit(self, request: dict[str, Any]) -> dict[str, Any]:
        from kernelproof.controller.audit_task import audit_task
        from kernelproof.errors import KernelproofError

        settings = {k: v for k, v in dict(request.get("settings") or {}).items() if v is not None}
        try:
            if request.get("seeds") is not None:
                settings["seeds"] = int(request["seeds"])
            report = audit_task(
                Path(request["reference"]),
                base_seed=request.get("base_seed"),
                profile=str(request.get("profile") or "default"),
                **settings,
            )
        except KernelproofError as exc:
            return {"ok": False, "user_error": True, "error": str(exc)}
        return {"ok": True, "pid": os.getpid(), "report": report.to_json()}


def _preload() -> None:
    """Import the controller (and torch) and start the forkserver now, so that the first
    request does not pay for them."""
    from kernelproof.controller import verify  # noqa: F401 - the import is the point
    from kernelproof.workers.process import start_forkserver

    start_forkserver()


def _peer_uid(connection: socket.socket) -> int:
    credentials = connection.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")
    )
    _, uid, _ = struct.unpack("3i", credentials)
    return uid


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description="the warm verifier (run by `kernelproof warm`)")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT_S)
    args = parser.parse_args(argv)
    WarmVerifier(args.idle_timeout).serve()


if __name__ == "__main__":
    main()
