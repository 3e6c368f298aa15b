"""Fixtures of the server's tests: a real PostgreSQL server started once per session, a
database per test on SQLite and on PostgreSQL, and a fake verification for tests whose subject
is the queue or the API rather than the verifier.

PostgreSQL is Debian's (``scripts/install_postgresql.sh`` installs it when missing); it runs
as an unprivileged user (``nobody``, since initdb and postgres refuse root) on a temporary data
folder and a free local port, and stops at the end of the session.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tasks"

#: Seconds PostgreSQL may take to accept connections on a loaded 2-core machine.
POSTGRES_START_S = 60

#: The unprivileged user PostgreSQL runs as when the tests run as root.
POSTGRES_USER = "nobody"


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    port: int
    user: str = "kernelproof"

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new, empty database; its SQLAlchemy URL."""
        import psycopg

        name = f"kp_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user={self.user} dbname=postgres", autocommit=True
        ) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


@pytest.fixture(scope="session")
def postgresql() -> Iterator[PostgresServer]:
    """A real PostgreSQL server for the whole session."""
    bindir = _postgres_bin()
    if bindir is None:
        pytest.fail(
            "PostgreSQL is not installed, and the server's store and queue must be "
            "tested against it: run scripts/install_postgresql.sh (it installs Debian's "
            "postgresql package), then rerun the tests",
            pytrace=False,
        )
    folder = Path(tempfile.mkdtemp(prefix="kernelproof-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, user=POSTGRES_USER)
        prefix = ["runuser", "-u", POSTGRES_USER, "--"]
    data = folder / "data"
    subprocess.run(
        [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(data),
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
        timeout=120,
    )
    port = _free_port()
    log = open(folder / "postgres.log", "wb")
    server = subprocess.Popen(
        [
            *prefix,
            str(bindir / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(folder),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=200",
        ],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    running = PostgresServer(port)
    try:
        _wait_for(running, server, folder)
        yield running
    finally:
        server.terminate()  # SIGTERM: smart shutdown once clients are gone; then fast
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for(running: PostgresServer, server: subprocess.Popen[bytes], folder: Path) -> None:
    import psycopg

    deadline = time.monotonic() + POSTGRES_START_S
    while True:
        try:
            psycopg.connect(
                f"host=127.0.0.1 port={running.port} user={running.user} dbname=postgres",
                connect_timeout=2,
            ).close()
            return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                log = (folder / "postgres.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"PostgreSQL did not start: {log}", pytrace=False)
            time.sleep(0.2)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database: a SQLite file, or a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kernelproof.db'}"
    return request.getfixturevalue("postgresql").create_database()


# -- a fake verification ------------------------------------------------------------------------

#: ``# fake: verdict=verified speedup=2.0 ci=1.8,2.2 sleep=0.5`` in a candidate's source says
#: what :func:`fake_verify` reports for it.
FAKE = re.compile(r"#\s*fake:(.*)")


def fake_source(
    verdict: str = "verified",
    speedup: float | None = None,
    ci: tuple[float, float] | None = None,
    sleep: float = 0.0,
    tag: str = "",
) -> str:
    """A candidate whose fake verification gives this result. ``tag`` makes sources differ."""
    options = [f"verdict={verdict}", f"sleep={sleep}"]
    if speedup is not None:
        options.append(f"speedup={speedup}")
    if ci is not None:
        options.append(f"ci={ci[0]},{ci[1]}")
    return (
        "import torch\n\n\n"
        f"class ModelNew(torch.nn.Module):  # fake: {' '.join(options)}\n"
        f"    tag = {tag!r}\n"
    )


def fake_report(source: str, catalog: Any, task_key: str) -> Any:
    """The report :func:`fake_verify` gives for ``source`` on ``task_key``."""
    from kernelproof.config import resolve_settings
    from kernelproof.schema import (
        Artifact,
        Correctness,
        CorrectnessTest,
        Environment,
        Finding,
        InputVariant,
        Report,
        Severity,
        TestOutcome,
        Timing,
        TimingStats,
        VariantKind,
        Verdict,
    )

    options = dict(part.split("=", 1) for part in FAKE.search(source).group(1).split())
    verdict = Verdict(options["verdict"])
    passed = verdict is not Verdict.INCORRECT
    correctness = Correctness(
        seeds=[1],
        base_seed=1,
        default_knobs={},
        task_knobs={},
        tolerance={},
        tests=[
            CorrectnessTest(
                variant=InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1),
                seed=1,
                outcome=TestOutcome.PASSED if passed else TestOutcome.FAILED,
                error_ratio=0.5 if passed else 99.0,
            )
        ],
    )
    findings = {
        Verdict.VERIFIED: [],
        Verdict.INCORRECT: [
            Finding(
                check="correctness",
                severity=Severity.FAIL,
                forces=Verdict.INCORRECT,
                message="wrong on seed:0",
            )
        ],
        Verdict.SUSPECT: [
            Finding(
                check="passthrough",
                severity=Severity.SUSPECT,
                message="ran the reference's own ops",
            )
        ],
        Verdict.BROKEN: [
            Finding(
                check="crash",
                severity=Severity.FAIL,
                forces=Verdict.BROKEN,
                message="the worker exited with status 7",
            )
        ],
    }[verdict]
    timing = None
    if "speedup" in options:
        low, high = (float(x) for x in options.get("ci", "0.9,1.1").split(","))
        stats = TimingStats(median_s=1e-3, iqr_s=1e-4, samples=[1e-3] * 5)
        timing = Timing(
            reference=stats,
            candidate=stats,
            speedup=float(options["speedup"]),
            speedup_ci=(low, high),
        )
    identity = catalog.identity(task_key, source)
    settings = resolve_settings(profile=catalog.profile, overrides=catalog.overrides)
    return Report(
        verdict=verdict,
        findings=findings,
        correctness=correctness if verdict is not Verdict.BROKEN else None,
        timing=timing,
        environment=Environment(device="cpu", fingerprint=identity.fingerprint),
        candidate=Artifact(
            path="submission.py", sha256=hashlib.sha256(source.encode()).hexdigest()
        ),
        reference=Artifact(path=task_key, sha256=identity.reference_sha256),
        settings=settings.model_dump(mode="json"),
        duration_s=float(options["sleep"]),
    )


def fake_verify(catalog: Any) -> Any:
    """A :data:`~kernelproof.serve.worker.VerifyFunction` giving :func:`fake_report`s."""

    def run(task: Any, candidate: Path) -> Any:
        source = candidate.read_text()
        delay = float(
            dict(part.split("=", 1) for part in FAKE.search(source).group(1).split())["sleep"]
        )
        time.sleep(delay)
        return fake_report(source, catalog, task.key)

    return run


# -- a real server in its own process -------------------------------------------------------------

#: Seconds a real server may take to start listening (imports, migrations, the suite).
SERVER_START_S = 120

#: Settings of the real verifications in these tests: the quick profile without timing keeps
#: one verification of a small task to ~10 s on a loaded 2-core machine.
SERVER_FLAGS = ["--profile", "quick", "--no-timing"]


@dataclass
class ServerProcess:
    """``kernelproof serve`` running in a subprocess; :meth:`start` again after a crash."""

    database_url: str
    folder: Path
    workers: int = 1
    extra: tuple[str, ...] = ()
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    token: str = ""
    environment: dict[str, str] | None = None
    """Variables added to the server's environment."""

    db_in_environment: bool = False
    """Give the store's URL as ``$KERNELPROOF_DB`` (as an operator keeps it out of argv)."""

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        from kernelproof.serve.tokens import create_token

        tokens = self.folder / "tokens.jsonl"
        if not self.token:
            self.token = create_token("alice", tokens)
        self.port = _free_port()
        log = open(self.folder / f"server-{self.port}.log", "wb")
        environment = {**os.environ, **(self.environment or {})}
        store = ["--db", self.database_url]
        if self.db_in_environment:
            environment["KERNELPROOF_DB"], store = self.database_url, []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernelproof.cli",
                "serve",
                str(SUITE),
                *store,
                "--tokens",
                str(tokens),
                "--port",
                str(self.port),
                "--workers",
                str(self.workers),
                *SERVER_FLAGS,
                *self.extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.folder,
            env=environment,
        )
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the server exited: {self.log()}", pytrace=False)
            try:
                self.get("/api/tasks")
                return self
            except OSError:
                time.sleep(0.3)
        pytest.fail(
            f"the server did not listen within {SERVER_START_S} s: {self.log()}", pytrace=False
        )

    def log(self) -> str:
        return (self.folder / f"server-{self.port}.log").read_text(errors="replace")[-3000:]

    def get(self, path: str) -> Any:
        import json

        return json.loads(self.read(path))

    def read(self, path: str, token: str | None = None) -> str:
        """The body of ``GET path`` as text (a page, a report)."""
        import urllib.request

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        request = urllib.request.Request(self.base + path, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read().decode()

    def full_log(self) -> str:
        """Every log this server's processes wrote, across its restarts."""
        return "".join(
            path.read_text(errors="replace") for path in sorted(self.folder.glob("server-*.log"))
        )

    def submit(self, task: str, source: str) -> Any:
        import json
        import urllib.request

        request = urllib.request.Request(
            self.base + "/api/submissions",
            method="POST",
            data=json.dumps({"task": task, "source": source}).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def wait_for(
        self, submission_id: int, statuses: tuple[str, ...], within_s: float = 300
    ) -> dict[str, Any]:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            view = self.get(f"/api/submissions/{submission_id}")
            if view["status"] in statuses:
                return view
            time.sleep(0.2)
        raise AssertionError(
            f"submission {submission_id} never reached {statuses}: {view}\n{self.log()}"
        )

    def stop(self, sig: int = signal.SIGINT) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """``server_process(database_url, workers=1)``: a started server, stopped at the end."""
    started: list[ServerProcess] = []

    def start(database_url: str, workers: int = 1, *extra: str, **options: Any) -> ServerProcess:
        server = ServerProcess(database_url, tmp_path, workers, extra, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
