"""Worker processes as the controller sees them (``workers/process.py``): a request is
answered, and a worker that hangs, exits, dies or sends garbage becomes a ``WorkerDeath`` of
the right cause, never an exception in the controller. Real workers (the softmax reference)
with tiny candidate files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.config import resolve_settings
from kernelproof.protocol.requests import PlanRequest
from kernelproof.tasks.source import read_task
from kernelproof.workers.pair import WorkerPair
from kernelproof.workers.process import DeathCause, kill_all_workers

pytestmark = pytest.mark.slow

MODEL = """
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""


def _pair(examples: Path, tmp_path: Path, prelude: str | None = None, **overrides) -> WorkerPair:
    candidate = None
    if prelude is not None:
        candidate = tmp_path / "candidate.py"
        candidate.write_text(prelude + MODEL)
    settings = resolve_settings(overrides=overrides)
    return WorkerPair(
        task=read_task(examples / "softmax" / "reference.py"),
        candidate_path=candidate,
        settings=settings,
    )


def test_the_reference_answers_a_plan_request(examples, tmp_path):
    with _pair(examples, tmp_path) as pair:
        pair.start_reference()
        response = pair.ask_reference(PlanRequest(knobs=pair.task.default_knobs))
        assert response.ok, response.failure
        plan = response.data
        assert plan.ok and plan.bytes and plan.bytes > 0


def test_a_candidate_builds_and_says_how_long_its_import_took(examples, tmp_path):
    with _pair(examples, tmp_path, prelude="") as pair:
        built = pair.start_candidate()
        assert built.ok, built.failure
        assert built.data.import_s is not None
        assert pair.build_s is not None


def test_a_request_past_its_timeout_is_a_timeout_death(examples, tmp_path):
    with _pair(
        examples, tmp_path, prelude="import time\ntime.sleep(60)\n", build_timeout_s=1.0
    ) as pair:
        built = pair.start_candidate()
        assert not built.ok and built.death is not None
        assert built.death.cause is DeathCause.TIMEOUT
        assert "'build'" in built.death.message
        assert pair.candidate is not None and not pair.candidate.alive


def test_a_worker_that_exits_is_an_exit_death(examples, tmp_path):
    with _pair(examples, tmp_path, prelude="import os\nos._exit(3)\n") as pair:
        built = pair.start_candidate()
        assert built.death is not None
        assert built.death.cause is DeathCause.EXIT
        # A dead worker answers every later request with its death, at once.
        again = pair.ask_candidate(PlanRequest())
        assert again.death is built.death


def test_kill_all_workers_kills_a_live_one(examples, tmp_path):
    with _pair(examples, tmp_path) as pair:
        pair.start_reference()
        assert pair.reference is not None and pair.reference.alive
        assert kill_all_workers() >= 1
        assert not pair.reference.process.is_alive()


def test_garbage_on_the_channel_is_a_protocol_death(examples, tmp_path):
    garbage = (
        "import gc\n"
        "from multiprocessing.connection import Connection\n"
        "for _conn in [o for o in gc.get_objects() if isinstance(o, Connection)]:\n"
        "    _conn.send_bytes(b'this is not a JSON header {')\n"
    )
    with _pair(examples, tmp_path, prelude=garbage) as pair:
        built = pair.start_candidate()
        assert built.death is not None, built.failure
        assert built.death.cause is DeathCause.PROTOCOL
        assert "malformed" in built.death.message


def test_a_malformed_request_is_answered_with_a_captured_error(examples, tmp_path):
    from kernelproof.protocol import transport
    from kernelproof.protocol.messages import WorkerReply

    with _pair(examples, tmp_path) as pair:
        pair.start_reference()
        worker = pair.reference
        assert worker is not None and worker.conn is not None
        for header in ({"op": "nonsense"}, {"op": "work", "seed": "not a number"}):
            transport.send(worker.conn, header)
            reply = WorkerReply.model_validate(transport.receive(worker.conn).header)
            assert not reply.ok and reply.error is not None
            assert reply.error.type == "ValidationError"
        assert pair.ask_reference(PlanRequest(knobs=pair.task.default_knobs)).ok


SPINNER = """
import threading


def _spin():
    while True:
        pass


threading.Thread(target=_spin, daemon=True).start()
"""


def test_a_candidate_worker_is_frozen_between_requests(examples, tmp_path):
    """Issue 25 class 2: once its reply is read, the candidate's whole process tree is stopped
    (a thread spinning since import included) until the next request is sent."""
    import time

    from kernelproof.workers.freezer import thread_states
    from kernelproof.workers.process_tree import process_cpu_s

    with _pair(examples, tmp_path, prelude=SPINNER) as pair:
        assert pair.start_candidate().ok
        worker = pair.candidate
        assert worker.freezer is not None and worker.freezer.frozen
        members = worker.freezer._members
        assert len(members) >= 3  # P, the namespace's init, the harness
        before = sum(process_cpu_s(pid) or 0.0 for pid in members)
        time.sleep(0.3)
        assert sum(process_cpu_s(pid) or 0.0 for pid in members) - before < 1e-3
        assert all(set(thread_states(pid)) <= {"T", "t"} for pid in members)
        response = pair.ask_candidate(PlanRequest(knobs=pair.task.default_knobs))
        assert response.ok, response.failure
        ledger = pair.freeze_ledgers[-1]
        assert ledger.intervals >= 1 and not ledger.ran


def test_a_process_that_entered_from_outside_is_not_counted_as_the_worker_s():
    """py-spy joins the sandbox's pid namespace to sample the candidate's stacks; its CPU time
    must not read as the candidate's (``cpu-time``). Only the root's descendants count."""
    import subprocess
    import sys

    from kernelproof.workers.process_tree import descendants

    root = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; "
            "time.sleep(30)']); time.sleep(30)",
        ]
    )
    outsider = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    grandchild: list[int] = []
    try:
        import time

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not grandchild:
            with open(f"/proc/{root.pid}/task/{root.pid}/children") as handle:
                grandchild = [int(p) for p in handle.read().split()]
            time.sleep(0.05)
        assert grandchild, "the root's child did not start"
        assert descendants(root.pid, [root.pid, *grandchild, outsider.pid]) == [
            root.pid,
            *grandchild,
        ]
    finally:
        import os
        import signal

        for pid in grandchild:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for process in (root, outsider):
            process.kill()
            process.wait()
