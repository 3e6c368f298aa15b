"""A real ``kernelproof serve`` on a real PostgreSQL, attacked as issue 27 found it: no secret
of the server reaches a page, a report or a log; no candidate process or scratch file outlives
a SIGTERM or a ``kill -9`` of the server and its restart; an honest submission survives two
server crashes; a client sending a too-large body at once reads its 413."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kernelproof.serve.leftovers import workers_root

from .conftest import ROOT, SUITE

pytestmark = pytest.mark.slow

TASK = "level1/19_NewGELU"
HONEST = (ROOT / "tasks" / "solutions" / "level1" / "19_torch_fused_gelu.py").read_text()

#: The PostgreSQL password in the store's URL (the test server trusts local connections, so
#: any password works: what matters is where it turns up).
PASSWORD = "Pg-s3cret-4f9d2c1e"

#: A secret in the server's environment, as an RL cluster's API key would be.
API_KEY = "sk-test-7c1d0e5b9a3f42d8"

#: A candidate that puts everything it can read of its environment into its failure.
EXFILTRATOR = """
import os
import torch

print("environment:", dict(os.environ), flush=True)


class ModelNew(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args):
        seen = [repr(dict(os.environ))]
        for path in ("/proc/self/environ", f"/proc/{os.getppid()}/environ", "/proc/1/environ"):
            try:
                seen.append(open(path, "rb").read().decode(errors="replace"))
            except OSError as exc:
                seen.append(f"{path}: {exc}")
        raise RuntimeError("exfiltrated: " + " | ".join(seen))
"""

#: A candidate that writes a file into its scratch folder, then spins until killed.
SPINNER = """
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args):
        with open("spinner-leftover.bin", "wb") as handle:
            handle.write(b"x" * (1 << 20))
        while True:
            pass
"""


def _with_password(url: str) -> str:
    return url.replace("kernelproof@", f"kernelproof:{PASSWORD}@", 1)


def _beneath(root: Path) -> list[int]:
    """Processes working beneath ``root`` (the server's worker folders)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.startswith(str(root) + "/"):
                found.append(int(entry))
    return found


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _wait(predicate, within_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {within_s:.0f} s")
        time.sleep(0.2)


def test_no_secret_of_the_server_reaches_a_page_a_report_or_a_log(server_process, postgresql):
    url = _with_password(postgresql.create_database())
    server = server_process(
        url, 1, environment={"KP_TEST_API_KEY": API_KEY}, db_in_environment=True
    )
    for worker in _children(server.process.pid):
        for part in ("environ", "cmdline"):
            seen = Path(f"/proc/{worker}/{part}").read_bytes().decode(errors="replace")
            assert PASSWORD not in seen, f"the worker's {part} holds the store's password"
    submission = server.submit(TASK, EXFILTRATOR)["id"]
    done = server.wait_for(submission, ("done", "failed"))
    assert done["status"] == "done", done
    published = {
        "report": server.read(f"/api/submissions/{submission}/report"),
        "packet": server.read(f"/submissions/{submission}"),
        "owner packet": server.read(f"/api/submissions/{submission}/packet", server.token),
        "status": server.read(f"/api/submissions/{submission}"),
        "queue": server.read("/queue"),
        "history": server.read("/history"),
        "task": server.read(f"/tasks/{TASK}"),
        "log": server.full_log(),
    }
    assert "exfiltrated" in published["report"], "the candidate's error is not in its report"
    for where, text in published.items():
        for secret in (PASSWORD, API_KEY):
            assert secret not in text, f"{secret!r} is in the {where}"
        assert str(SUITE) not in text or where == "log", f"the suite's path is in the {where}"
    report = json.loads(published["report"])
    assert not any(
        str(path).startswith("/")
        for path in (report["candidate"]["path"], report["reference"]["path"])
    ), report


def test_no_candidate_or_scratch_file_outlives_a_killed_or_stopped_server(
    server_process, postgresql
):
    url = postgresql.create_database()
    root = workers_root(url, SUITE)
    server = server_process(url)
    submission = server.submit(TASK, SPINNER)["id"]
    server.wait_for(submission, ("running",))
    _wait(lambda: any(root.rglob("spinner-leftover.bin")), 180, "the spinner never ran")
    spinning = _beneath(root)
    assert spinning, "no candidate process works beneath the worker folders"

    server.stop(signal.SIGKILL)  # the server only: its workers and candidates must follow
    _wait(lambda: not _beneath(root), 15, f"candidates {_beneath(root)} outlived the server")
    server.start()  # removes what the dead workers left on disk
    _wait(
        lambda: not any(root.rglob("spinner-leftover.bin")) or _beneath(root),
        30,
        "the dead workers' scratch was not removed at the restart",
    )
    again = server.wait_for(submission, ("running",))
    assert again["attempts"] == 1, again  # the crash was not the candidate's: not charged
    _wait(lambda: any(root.rglob("spinner-leftover.bin")), 180, "the spinner never ran again")

    server.stop(signal.SIGTERM)
    assert server.process.returncode is not None
    _wait(lambda: not _beneath(root), 15, "candidates outlived the stopped server")
    assert not any(root.rglob("spinner-leftover.bin")), "scratch outlived the stopped server"


def test_an_honest_submission_survives_two_server_crashes(server_process, postgresql):
    server = server_process(postgresql.create_database())
    submission = server.submit(TASK, HONEST + "\n# survives two crashes\n")["id"]
    for _ in range(2):
        server.wait_for(submission, ("running",))
        server.stop(signal.SIGKILL)
        server.start()
    done = server.wait_for(submission, ("done", "failed"))
    assert done["status"] == "done" and done["result"]["verdict"] == "verified", done
    assert done["attempts"] == 1, done


def test_a_client_sending_a_too_large_body_at_once_reads_the_413(server_process, postgresql):
    server = server_process(postgresql.create_database(), 0)
    body = json.dumps({"task": TASK, "source": "#" * (5 << 20)}).encode()
    request = urllib.request.Request(
        server.base + "/api/submissions",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    assert refused.value.code == 413
    assert "at most" in json.loads(refused.value.read())["error"]
