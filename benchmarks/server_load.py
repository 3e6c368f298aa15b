"""Load on ``kernelproof serve``: 300 submissions from 3 tokens, a worker killed, a restart.

    python benchmarks/server_load.py [--submissions 300] [--distinct 6] [--workers 2]
                                     [--db URL] [--timeout 900]

Starts a real server on loopback (its own SQLite store in a temporary folder unless ``--db``)
serving the built-in suite with the ``quick`` profile and no timing phase, then:

1. posts ``--submissions`` submissions to ``level1/19_NewGELU`` from 3 tokens at once (one
   thread per token, 4 connections each). Only ``--distinct`` sources differ (the suite's
   honest fused-GELU solution, each with its own comment line), so only those are verified for
   real; the others are identical copies, which wait for the first copy's verification or reuse
   its stored result. A 2-core machine cannot run 300 real verifications in reasonable time,
   and the copies exercise exactly the queue, the database and the API under load;
2. posts 5 more from the first token, beyond its burst: each must be refused with 429, while a
   fourth, fresh token still gets in (the limits are per token);
3. while the queue drains, times the API (a submission's status, the leaderboard, the task
   list, the queue) and prints p50 and p99;
4. kills (SIGKILL) the worker verifying a distinct source mid-run: that submission must be
   requeued and completed;
5. kills the whole server (SIGKILL) mid-queue and starts it again on the same store: the queue
   must resume;
6. checks that every submission finished exactly once: done, with a stored verification of
   its own source, and one stored verification per distinct source (none stored twice).

Every loop is bounded in count and in time (``--timeout`` for the whole run). Figures are
wall-clock on whatever else the machine is doing: say how loaded it was when quoting them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TASK = "level1/19_NewGELU"
HONEST = (ROOT / "tasks" / "solutions" / "level1" / "19_torch_fused_gelu.py").read_text()
TOKENS = ("team-a", "team-b", "team-c")

#: Connections per token while posting.
CONNECTIONS_PER_TOKEN = 4

#: Seconds the server may take to listen.
START_S = 120

#: Seconds the issue allows for posting the 300 submissions.
POST_TARGET_S = 10.0

#: Timed API requests at most while the queue drains, and the pause between them.
MAX_TIMED_REQUESTS = 2000
TIMED_PAUSE_S = 0.02


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, db: str, folder: Path, workers: int, burst: int) -> None:
        self.db, self.folder, self.workers, self.burst = db, folder, workers, burst
        self.port = _free_port()
        self.tokens_file = folder / "tokens.jsonl"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        started = time.monotonic()
        self.starts += 1
        log = open(self.folder / f"server-{self.starts}.log", "wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernelproof.cli",
                "serve",
                str(ROOT / "tasks"),
                "--db",
                self.db,
                "--tokens",
                str(self.tokens_file),
                "--port",
                str(self.port),
                "--workers",
                str(self.workers),
                "--profile",
                "quick",
                "--no-timing",
                "--burst",
                str(self.burst),
                "--rate",
                "1",
                "--max-queued",
                str(self.burst * 2),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
        )
        while time.monotonic() - started < START_S:
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited: {self.log()}")
            try:
                request("GET", self.base + "/api/tasks")
                return time.monotonic() - started
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"the server did not listen in {START_S} s: {self.log()}")

    def log(self) -> str:
        return (self.folder / f"server-{self.starts}.log").read_text(errors="replace")[-3000:]

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def request(
    method: str, url: str, body: Any = None, token: str | None = None, timeout: float = 60
) -> tuple[int, Any, dict[str, str]]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(call, timeout=timeout) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}"), dict(error.headers)


def sources(count: int, distinct: int) -> list[str]:
    """``count`` sources of which ``distinct`` differ, interleaved so copies of each arrive
    while its first copy is queued or running, and after it is stored."""
    variants = [HONEST + f"\n# load variant {i}\n" for i in range(distinct)]
    return [variants[i % distinct] for i in range(count)]


def post_all(
    server: Server, tokens: dict[str, str], texts: list[str]
) -> tuple[dict[int, str], float, dict[int, int]]:
    """Post ``texts`` split evenly over the tokens, all at once; the source of each accepted
    id, the wall time and the count of each status code."""
    per_token = {name: texts[i :: len(tokens)] for i, name in enumerate(tokens)}
    ids: dict[int, str] = {}
    codes: dict[int, int] = {}
    lock = threading.Lock()

    def post(name: str, text: str) -> None:
        code, body, _ = request(
            "POST", server.base + "/api/submissions", {"task": TASK, "source": text}, tokens[name]
        )
        with lock:
            codes[code] = codes.get(code, 0) + 1
            if code in (200, 202):
                ids[body["id"]] = text

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=CONNECTIONS_PER_TOKEN * len(tokens)) as pool:
        for name, texts_of in per_token.items():
            for text in texts_of:
                pool.submit(post, name, text)
    return ids, time.monotonic() - started, codes


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=300)
    parser.add_argument("--distinct", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--db", default=None, help="SQLAlchemy URL (default: a new SQLite file)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole run")
    options = parser.parse_args()
    if options.submissions % len(TOKENS):
        raise SystemExit(f"--submissions must be a multiple of {len(TOKENS)} (one share per token)")
    deadline = time.monotonic() + options.timeout
    from kernelproof.serve.tokens import create_token

    folder = Path(tempfile.mkdtemp(prefix="kernelproof-server-load-"))
    db = options.db or f"sqlite:///{folder / 'kernelproof.db'}"
    per_token = options.submissions // len(TOKENS)
    server = Server(db, folder, options.workers, burst=per_token)
    tokens = {name: create_token(name, server.tokens_file) for name in TOKENS}
    control = create_token("team-d", server.tokens_file)
    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load:.2f} at the start; store {db}")
    print(
        f"server: started in {server.start():.1f} s with {options.workers} workers "
        f"(profile quick, no timing), burst {per_token} per token"
    )

    texts = sources(options.submissions, options.distinct)
    ids, posting_s, codes = post_all(server, tokens, texts)
    print(
        f"posted {options.submissions} submissions from {len(TOKENS)} tokens in "
        f"{posting_s:.2f} s ({'within' if posting_s <= POST_TARGET_S else 'OVER'} the "
        f"{POST_TARGET_S:.0f} s target; {options.distinct} distinct sources, the rest "
        f"identical copies); status codes {dict(sorted(codes.items()))}"
    )
    if len(ids) != options.submissions:
        raise SystemExit(f"only {len(ids)} of {options.submissions} were accepted")

    refused = [
        request(
            "POST",
            server.base + "/api/submissions",
            {"task": TASK, "source": texts[0]},
            tokens[TOKENS[0]],
        )
        for _ in range(5)
    ]
    other = request(
        "POST", server.base + "/api/submissions", {"task": TASK, "source": texts[0]}, control
    )
    codes_over = [code for code, _, _ in refused]
    print(
        f"rate limit: {TOKENS[0]} beyond its burst got {codes_over} "
        f"(Retry-After {refused[0][2].get('retry-after') or refused[0][2].get('Retry-After')} s: "
        f"{refused[0][1].get('error', '')[:90]}...); a fresh token got {other[0]} meanwhile"
    )
    if any(code != 429 for code in codes_over) or other[0] not in (200, 202):
        raise SystemExit("the rate limit was not enforced per token")
    ids[other[1]["id"]] = texts[0]

    first_of: dict[str, int] = {}
    for submission_id, text in sorted(ids.items()):
        first_of.setdefault(hashlib.sha256(text.encode()).hexdigest(), submission_id)
    distinct_ids = sorted(first_of.values())

    latencies: list[float] = []
    killed_worker: str | None = None
    killed_submission: int | None = None
    restarted = False
    requests_made = 0
    endpoints = ["/api/submissions/{id}", f"/api/leaderboard/{TASK}", "/api/tasks", "/api/queue"]
    id_list = sorted(ids)
    while time.monotonic() < deadline and requests_made < MAX_TIMED_REQUESTS:
        path = endpoints[requests_made % len(endpoints)].format(
            id=id_list[requests_made % len(id_list)]
        )
        started = time.monotonic()
        code, body, _ = request("GET", server.base + path)
        latencies.append(time.monotonic() - started)
        requests_made += 1
        if code != 200:
            raise SystemExit(f"GET {path} answered {code}: {body}")
        if requests_made % 20:
            time.sleep(TIMED_PAUSE_S)
            continue
        counts = request("GET", server.base + "/api/queue")[1]["counts"]
        if killed_worker is None:
            for submission_id in distinct_ids:
                view = request("GET", f"{server.base}/api/submissions/{submission_id}")[1]
                if view["status"] == "running" and view.get("worker"):
                    killed_worker, killed_submission = view["worker"], submission_id
                    os.kill(int(killed_worker.rpartition(":")[2]), signal.SIGKILL)
                    print(
                        f"kill -9: worker {killed_worker} while it verified submission "
                        f"{submission_id}"
                    )
                    break
        elif not restarted and counts["running"] and counts["queued"]:
            server.kill()
            print(
                f"restart: server killed (SIGKILL) with {counts['running']} running and "
                f"{counts['queued']} queued; started again in {server.start():.1f} s"
            )
            restarted = True
        if counts["queued"] == 0 and counts["running"] == 0 and restarted:
            break
    counts = request("GET", server.base + "/api/queue")[1]["counts"]
    print(
        f"API while the queue drained: {len(latencies)} requests, p50 "
        f"{statistics.median(latencies) * 1000:.1f} ms, p99 "
        f"{percentile(latencies, 99) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
    )
    if counts["queued"] or counts["running"]:
        server.stop()
        raise SystemExit(f"the queue did not drain before --timeout: {counts}")

    views = [request("GET", f"{server.base}/api/submissions/{i}")[1] for i in id_list]
    server.stop()
    not_done = [v for v in views if v["status"] != "done"]
    killed = next(v for v in views if v["id"] == killed_submission) if killed_submission else None
    from kernelproof.serve.config import SERVE_RUN_SOLUTIONS
    from kernelproof.store.results import ResultsStore

    with ResultsStore(db, must_exist=True) as store:
        serve_runs = [run.id for run in store.runs() if run.solutions == SERVE_RUN_SOLUTIONS]
        stored = [v for run in serve_runs for v in store.verifications(run)]
    by_id = {v.id: v for v in stored}
    per_candidate: dict[str | None, int] = {}
    for v in stored:
        per_candidate[v.candidate_sha256] = per_candidate.get(v.candidate_sha256, 0) + 1
    mismatched = [
        view["id"]
        for view in views
        if view.get("result") is None
        or by_id[view["result"]["verification_id"]].candidate_sha256
        != hashlib.sha256(ids[view["id"]].encode()).hexdigest()
    ]
    verdicts: dict[str, int] = {}
    for view in views:
        verdict = (view.get("result") or {}).get("verdict", view["status"])
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    print(
        f"finished: {len(views) - len(not_done)} of {len(views)} done, verdicts {verdicts}; "
        f"{len(stored)} verifications stored for {len(first_of)} distinct sources "
        f"(most for one source: {max(per_candidate.values())}); "
        f"{sum(1 for v in views if v.get('reused'))} submissions reused a result"
    )
    if killed is not None:
        print(
            f"killed worker's submission {killed['id']}: {killed['status']} after "
            f"{killed['attempts']} attempts ({killed.get('reason')})"
        )
    print(
        f"server starts: {server.starts}; load average at the end {os.getloadavg()[0]:.2f}; "
        f"logs in {folder}"
    )
    problems = []
    if not_done:
        problems.append(f"{len(not_done)} submissions not done")
    if mismatched:
        problems.append(f"{len(mismatched)} submissions with a result of another source")
    if len(stored) != len(first_of) or max(per_candidate.values()) != 1:
        problems.append("a source was stored other than exactly once")
    if killed is None or killed["status"] != "done" or killed["attempts"] != 2:
        problems.append("the killed worker's submission was not requeued and completed")
    if not restarted:
        problems.append("the queue drained before the restart could be shown")
    if problems:
        raise SystemExit("FAILED: " + "; ".join(problems))
    print("OK: every submission stored and finished exactly once")


if __name__ == "__main__":
    main()
