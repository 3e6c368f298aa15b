"""``kernelproof serve`` on PostgreSQL under N concurrent users, driven by locust.

    pip install 'kernelproof[load]'
    python benchmarks/locust_server.py [--users 8] [--minutes 3] [--workers 2]
                                       [--distinct-share 0.1] [--db URL]

Starts a PostgreSQL server of its own (Debian's binaries, as ``scripts/install_postgresql.sh``
installs them; or uses ``--db``), then a real ``kernelproof serve`` on loopback with
``--workers`` workers, the ``quick`` profile and no timing phase, serving the built-in suite.
Each locust user has its own token and loops: submit a kernel for ``level1/19_NewGELU``, poll
its status until it is done, read the leaderboard and the task list. A ``--distinct-share``
of the submissions are sources never seen before (the suite's honest fused-GELU solution with
a fresh comment), so each is verified for real; the rest repeat one of a few sources, whose
stored result is reused or which wait for their twin: a 2-core machine cannot verify
hundreds of kernels a minute, and the repeats load exactly the API, the queue and the
database.

After ``--minutes``, the users stop and the queue drains; then every accepted submission must
be ``done`` (or ``failed`` with a reason) in the store: none lost, none left waiting. Prints
submissions per minute (accepted, and verified for real), p50/p99 of every API call, and the
count of lost submissions (the exit status is 1 when any is lost). Figures are wall-clock on
whatever else the machine is doing: say how loaded it was when quoting them.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TASK = "level1/19_NewGELU"
HONEST = (ROOT / "tasks" / "solutions" / "level1" / "19_torch_fused_gelu.py").read_text()

#: Seconds the server may take to listen, and the queue to drain after the users stop.
START_S, DRAIN_S = 180.0, 600.0

#: Sources the repeated submissions choose from.
REPEATED = 4


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Postgres:
    """A throw-away PostgreSQL server (as tests/serve/conftest.py starts one)."""

    def __init__(self, folder: Path) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            sys.exit(
                "PostgreSQL is not installed: run scripts/install_postgresql.sh, or pass "
                "--db postgresql+psycopg://USER:PASSWORD@HOST/DATABASE"
            )
        bindir, self.folder, self.port = Path(found[-1]).parent, folder, _free_port()
        prefix: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            shutil.chown(folder, user="nobody")
            prefix = ["runuser", "-u", "nobody", "--"]
        subprocess.run(
            [
                *prefix,
                str(bindir / "initdb"),
                "-D",
                str(folder / "data"),
                "-U",
                "kernelproof",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            cwd=folder,
            check=True,
            capture_output=True,
        )
        self.process = subprocess.Popen(
            [
                *prefix,
                str(bindir / "postgres"),
                "-D",
                str(folder / "data"),
                "-p",
                str(self.port),
                "-k",
                str(folder),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(
                    f"host=127.0.0.1 port={self.port} user=kernelproof dbname=postgres",
                    autocommit=True,
                ).execute("CREATE DATABASE kernelproof")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    sys.exit("PostgreSQL did not start")
                time.sleep(0.3)
        self.url = f"postgresql+psycopg://kernelproof@127.0.0.1:{self.port}/kernelproof"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)


class Server:
    """``kernelproof serve`` in its own process, with one token per user."""

    def __init__(self, db: str, folder: Path, workers: int, users: int) -> None:
        from kernelproof.serve.tokens import create_token

        self.port = _free_port()
        tokens = folder / "tokens.jsonl"
        self.tokens = [create_token(f"user{i}", tokens) for i in range(users)]
        self.log = folder / "server.log"
        environment = {**os.environ, "KERNELPROOF_DB": db}  # the URL stays out of argv
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernelproof.cli",
                "serve",
                str(ROOT / "tasks"),
                "--tokens",
                str(tokens),
                "--port",
                str(self.port),
                "--workers",
                str(workers),
                "--profile",
                "quick",
                "--no-timing",
                "--rate",
                "6000",
                "--burst",
                "100",
                "--max-queued",
                "100",
            ],
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            cwd=folder,
            env=environment,
        )
        deadline = time.monotonic() + START_S
        while True:
            try:
                urllib.request.urlopen(self.base + "/api/tasks", timeout=10).read()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the server did not start:\n{self.log.read_text()[-2000:]}")
                time.sleep(0.5)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def status(self, submission_id: int) -> dict[str, Any]:
        with urllib.request.urlopen(
            f"{self.base}/api/submissions/{submission_id}", timeout=30
        ) as response:
            return json.loads(response.read())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_users(
    server: Server, users: int, seconds: float, distinct_share: float
) -> tuple[Any, list[int], int, int]:
    """Run the locust users; returns (stats, accepted ids, distinct sources, refusals)."""
    from locust import HttpUser, between, task
    from locust.env import Environment

    accepted: list[int] = []
    counts = {"distinct": 0, "refused": 0}
    lock = threading.Lock()
    tokens = list(server.tokens)
    repeated = [HONEST + f"\n# repeated source {i}\n" for i in range(REPEATED)]

    class Submitter(HttpUser):
        wait_time = between(0.0, 0.2)

        def on_start(self) -> None:
            with lock:
                self.token = tokens.pop()
            self.headers = {"Authorization": f"Bearer {self.token}"}

        @task
        def submit_and_poll(self) -> None:
            if random.random() < distinct_share:
                source, distinct = HONEST + f"\n# distinct {uuid.uuid4().hex}\n", True
            else:
                source, distinct = random.choice(repeated), False
            with self.client.post(
                "/api/submissions",
                json={"task": TASK, "source": source},
                headers=self.headers,
                name="POST /api/submissions",
                catch_response=True,
            ) as response:
                if response.status_code == 429:
                    response.success()  # a limit doing its job: counted, not a failure
                    with lock:
                        counts["refused"] += 1
                    return
                if response.status_code not in (200, 202):
                    response.failure(f"status {response.status_code}: {response.text[:200]}")
                    return
                submission = response.json()["id"]
            with lock:
                accepted.append(submission)
                counts["distinct"] += distinct
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                view = self.client.get(
                    f"/api/submissions/{submission}", name="GET /api/submissions/ID"
                ).json()
                if view["status"] in ("done", "failed"):
                    break
                time.sleep(0.5)
            self.client.get(f"/api/leaderboard/{TASK}", name="GET /api/leaderboard/TASK")
            self.client.get("/api/tasks", name="GET /api/tasks")

    environment = Environment(user_classes=[Submitter], host=server.base)
    runner = environment.create_local_runner()
    runner.start(users, spawn_rate=users)
    time.sleep(seconds)
    runner.quit()
    return environment.stats, accepted, counts["distinct"], counts["refused"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--distinct-share", type=float, default=0.1)
    parser.add_argument("--db", default=None, help="a PostgreSQL URL (default: start one)")
    args = parser.parse_args()

    import gevent.monkey  # locust's own patching, done before anything opens a socket

    gevent.monkey.patch_all()
    folder = Path(tempfile.mkdtemp(prefix="kernelproof-locust-"))
    postgres = None if args.db else Postgres(Path(tempfile.mkdtemp(prefix="kernelproof-pg-")))
    server = Server(args.db or postgres.url, folder, args.workers, args.users)
    try:
        started = time.monotonic()
        stats, accepted, distinct, refused = run_users(
            server, args.users, args.minutes * 60, args.distinct_share
        )
        minutes = (time.monotonic() - started) / 60
        deadline = time.monotonic() + DRAIN_S
        final: dict[int, str] = {}
        while time.monotonic() < deadline:
            final = {i: server.status(i)["status"] for i in accepted}
            if all(s in ("done", "failed") for s in final.values()):
                break
            time.sleep(2)
        lost = [i for i in accepted if final.get(i) not in ("done", "failed")]
        failed = [i for i in accepted if final.get(i) == "failed"]
        print(
            f"\n{args.users} users, {args.workers} workers, {minutes:.1f} min, PostgreSQL, "
            f"{os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f})"
        )
        print(
            f"submissions accepted: {len(accepted)} ({len(accepted) / minutes:.1f}/min), "
            f"of which {distinct} distinct sources verified for real "
            f"({distinct / minutes:.1f}/min); refused by limits: {refused}"
        )
        print(f"{'API call':32} {'count':>7} {'fail':>5} {'p50 ms':>8} {'p99 ms':>8}")
        for entry in sorted(stats.entries.values(), key=lambda e: e.name):
            print(
                f"{entry.name:32} {entry.num_requests:7d} {entry.num_failures:5d} "
                f"{entry.get_response_time_percentile(0.5):8.0f} "
                f"{entry.get_response_time_percentile(0.99):8.0f}"
            )
        total = stats.total
        print(
            f"{'all':32} {total.num_requests:7d} {total.num_failures:5d} "
            f"{total.get_response_time_percentile(0.5):8.0f} "
            f"{total.get_response_time_percentile(0.99):8.0f}"
        )
        print(f"lost: {len(lost)} of {len(accepted)} (failed with a reason: {len(failed)})")
        if lost:
            print(f"not finished: {lost[:20]}")
        sys.exit(1 if lost or total.num_failures else 0)
    finally:
        server.stop()
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
