"""Real verifications of a real suite task through a real ``kernelproof serve`` process: a
worker killed with SIGKILL mid-verification has its submission requeued and completed, a
server killed mid-queue resumes it when started again, and Ray actors drain the queue too."""

from __future__ import annotations

import os
import signal

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.slow

TASK = "level1/19_NewGELU"
HONEST = (ROOT / "tasks" / "solutions" / "level1" / "19_torch_fused_gelu.py").read_text()


def test_a_killed_worker_and_a_killed_server_lose_nothing(server_process, tmp_path):
    server = server_process(f"sqlite:///{tmp_path / 'kernelproof.db'}")
    first = server.submit(TASK, HONEST)["id"]
    second = server.submit(TASK, HONEST + "\n# the same kernel, another submission\n")["id"]

    running = server.wait_for(first, ("running",))
    os.kill(int(running["worker"].rpartition(":")[2]), signal.SIGKILL)
    done = server.wait_for(first, ("done", "failed"))
    assert done["status"] == "done" and done["attempts"] == 2, done
    assert "killed by SIGKILL" in done["reason"]
    assert done["result"]["verdict"] == "verified"

    server.wait_for(second, ("running",))
    server.stop(signal.SIGKILL)  # the whole server dies; its worker dies with it
    server.start()  # same database, a new process
    resumed = server.wait_for(second, ("done", "failed"))
    assert resumed["status"] == "done" and resumed["result"]["verdict"] == "verified", resumed
    # The server's crash was not the candidate's doing: requeued without using an attempt.
    assert resumed["attempts"] == 1 and "was gone when the server started" in resumed["reason"]
    board = server.get(f"/api/leaderboard/{TASK}")
    assert sorted(e["submission_id"] for e in board["ranked"]) == [first, second]


def test_ray_actors_drain_the_queue(server_process, tmp_path):
    server = server_process(f"sqlite:///{tmp_path / 'kernelproof.db'}", 1, "--ray")
    submitted = server.submit(TASK, HONEST + "\n# verified by a Ray actor\n")["id"]
    running = server.wait_for(submitted, ("running", "done", "failed"))
    assert running["status"] != "failed", running
    done = server.wait_for(submitted, ("done", "failed"))
    assert done["status"] == "done" and done["result"]["verdict"] == "verified", done
    assert done["attempts"] == 1
    queue_page = server.get("/api/queue")
    assert queue_page["counts"]["done"] == 1
