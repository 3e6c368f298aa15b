"""The HTTP API and the pages, in-process (FastAPI's TestClient) with a fake verification:
what is tested here is the server (auth, limits, privacy, ranking, JSON errors), not the
verifier; tests/serve/test_end_to_end.py runs real verifications through a real server."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kernelproof.serve.app import create_app
from kernelproof.serve.config import ServeConfig
from kernelproof.serve.limits import Limits
from kernelproof.serve.server import open_server
from kernelproof.serve.supervisor import ThreadWorkers
from kernelproof.serve.tokens import create_token

from .conftest import SUITE, fake_source, fake_verify

TASK = "level1/19_NewGELU"

#: Seconds a fake verification may take to finish under load.
DONE_WITHIN_S = 30


class Client:
    """A TestClient plus the tokens of the test server."""

    def __init__(self, http: TestClient, tokens: dict[str, str]) -> None:
        self.http, self.tokens = http, tokens

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def submit(self, source: str, name: str = "alice", task: str = TASK) -> Any:
        return self.http.post(
            "/api/submissions", json={"task": task, "source": source}, headers=self.auth(name)
        )

    def wait(self, submission_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + DONE_WITHIN_S
        while time.monotonic() < deadline:
            view = self.http.get(f"/api/submissions/{submission_id}").json()
            if view["status"] in ("done", "failed"):
                return view
            time.sleep(0.05)
        raise AssertionError(f"submission {submission_id} not done in {DONE_WITHIN_S} s: {view}")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Client]]:
    """``serve(database_url, workers=1, **config)``: a running app and its client."""
    stack: list[TestClient] = []

    def start(database_url: str, workers: int = 1, **config: Any) -> Client:
        tokens_file = tmp_path / f"tokens-{len(stack)}.jsonl"
        tokens = {name: create_token(name, tokens_file) for name in ("alice", "bob")}
        settings = ServeConfig(
            suite=SUITE,
            db_url=database_url,
            tokens=tokens_file,
            profile="quick",
            overrides={"timing": False},
            **config,
        )

        def pool(server):
            if not workers:
                return None
            return ThreadWorkers(
                server.queue,
                server.catalog,
                server.run_id,
                fake_verify(server.catalog),
                count=workers,
            )

        http = TestClient(create_app(open_server(settings, pool)))
        http.__enter__()
        stack.append(http)
        return Client(http, tokens)

    yield start
    for http in stack:
        http.__exit__(None, None, None)


def test_a_submission_is_queued_verified_ranked_and_its_packet_served(serve, database_url):
    client = serve(database_url)
    posted = client.submit(fake_source(speedup=2.0, ci=(1.8, 2.2)))
    assert posted.status_code == 202, posted.text
    assert posted.json()["status"] == "queued" and "source" not in posted.json()
    view = client.wait(posted.json()["id"])
    assert view["status"] == "done" and view["attempts"] == 1
    assert view["result"]["verdict"] == "verified" and view["result"]["speedup"] == 2.0
    assert view["result"]["speedup_ci"] == [1.8, 2.2]
    packet = client.http.get(view["packet"])
    assert packet.status_code == 200 and 'data-verdict="verified"' in packet.text
    board = client.http.get(f"/api/leaderboard/{TASK}").json()
    assert [e["submission_id"] for e in board["ranked"]] == [view["id"]]
    again = client.submit(fake_source(speedup=2.0, ci=(1.8, 2.2)), name="bob")
    assert again.status_code == 200 and again.json()["reused"] is True
    assert again.json()["result"]["verification_id"] == view["result"]["verification_id"]


def test_leaderboard_ranks_verified_by_lower_ci_bound_and_lists_the_rest_apart(serve, tmp_path):
    client = serve(f"sqlite:///{tmp_path / 'kp.db'}")
    noisy = client.submit(fake_source(speedup=3.0, ci=(0.9, 5.0))).json()["id"]
    steady = client.submit(fake_source(speedup=1.5, ci=(1.4, 1.6))).json()["id"]
    suspect = client.submit(fake_source("suspect", speedup=9.0, ci=(8.0, 10.0))).json()["id"]
    wrong = client.submit(fake_source("incorrect")).json()["id"]
    broken = client.submit(fake_source("broken")).json()["id"]
    for submission_id in (noisy, steady, suspect, wrong, broken):
        client.wait(submission_id)
    board = client.http.get(f"/api/leaderboard/{TASK}").json()
    assert [e["submission_id"] for e in board["ranked"]] == [steady, noisy]
    assert [e["submission_id"] for e in board["suspect"]] == [suspect]
    assert [e["submission_id"] for e in board["incorrect"]] == [wrong]
    assert [e["submission_id"] for e in board["other"]] == [broken]
    assert board["fast_p"]["0"] == pytest.approx(2 / 5)  # the suspect 9x does not count
    assert board["fast_p"]["2"] == pytest.approx(1 / 5)
    page = client.http.get(f"/tasks/{TASK}").text
    assert page.index(f'data-submission="{steady}"') < page.index(f'data-submission="{noisy}"')
    tasks = {t["task"]: t for t in client.http.get("/api/tasks").json()}
    assert tasks[TASK]["verified"] == 2 and tasks[TASK]["best_speedup_ci_low"] == 1.4


def test_every_refusal_is_json_that_says_what_to_fix(serve, tmp_path):
    client = serve(
        f"sqlite:///{tmp_path / 'kp.db'}", workers=0, limits=Limits(max_source_bytes=1000)
    )
    cases = {
        "no token": (
            client.http.post("/api/submissions", json={"task": TASK, "source": "x"}),
            401,
            "Authorization: Bearer",
        ),
        "bad token": (
            client.http.post(
                "/api/submissions",
                json={"task": TASK, "source": "x"},
                headers={"Authorization": "Bearer kp_nope"},
            ),
            401,
            "not known",
        ),
        "unknown task": (client.submit(fake_source(), task="level9/nope"), 404, "GET /api/tasks"),
        "too large": (client.submit(fake_source() + "#" * 2000), 413, "at most 1000 bytes"),
        "body far too large": (
            client.http.post(
                "/api/submissions",
                content=b"{" + b" " * 20_000 + b"}",
                headers={**client.auth("alice"), "Content-Type": "application/json"},
            ),
            413,
            "at most 1000 bytes",
        ),
        "not json": (
            client.http.post("/api/submissions", content=b"task=x", headers=client.auth("alice")),
            422,
            "must be JSON",
        ),
        "extra field": (
            client.http.post(
                "/api/submissions",
                json={"task": TASK, "source": "x", "x": 1},
                headers=client.auth("alice"),
            ),
            422,
            "x",
        ),
        "no ModelNew": (client.submit("import torch\n"), 422, "ModelNew"),
        "unknown submission": (client.http.get("/api/submissions/999"), 404, "POST"),
        "unknown page": (client.http.get("/nope"), 404, "/tasks/TASK"),
        "unknown leaderboard": (client.http.get("/tasks/level9/nope"), 404, "GET /api/tasks"),
    }
    for name, (response, status, hint) in cases.items():
        assert response.status_code == status, (name, response.text)
        body = response.json()
        assert body["status"] == status and hint in body["error"], (name, body)
        assert "Traceback" not in body["error"] and "/tmp/" not in body["error"], (name, body)


def test_rate_limits_and_queue_caps_are_per_token(serve, tmp_path):
    client = serve(
        f"sqlite:///{tmp_path / 'kp.db'}",
        workers=0,
        limits=Limits(burst=3, submissions_per_minute=1, max_queued_per_token=100),
    )
    statuses = [client.submit(fake_source(tag=str(i))).status_code for i in range(5)]
    assert statuses == [202, 202, 202, 429, 429]
    limited = client.submit(fake_source(tag="x"))
    assert "rate limit" in limited.json()["error"] and int(limited.headers["Retry-After"]) >= 1
    assert client.submit(fake_source(tag="bob"), name="bob").status_code == 202

    capped = serve(
        f"sqlite:///{tmp_path / 'capped.db'}",
        workers=0,
        limits=Limits(burst=50, max_queued_per_token=2),
    )
    statuses = [capped.submit(fake_source(tag=str(i))).status_code for i in range(3)]
    assert statuses == [202, 202, 429]
    assert capped.submit(fake_source(tag="b"), name="bob").status_code == 202


def test_sources_are_private_to_their_token_and_the_code_section_optionally(serve, tmp_path):
    client = serve(f"sqlite:///{tmp_path / 'kp.db'}", private_code=True)
    source = fake_source(speedup=1.2, ci=(1.1, 1.3))
    submission_id = client.submit(source).json()["id"]
    client.wait(submission_id)
    url = f"/api/submissions/{submission_id}"
    assert client.http.get(url, headers=client.auth("alice")).json()["source"] == source
    assert "source" not in client.http.get(url, headers=client.auth("bob")).json()
    assert "source" not in client.http.get(url).json()
    public = client.http.get(f"/submissions/{submission_id}").text
    assert 'data-verdict="verified"' in public and "Private: this server shows" in public
    owner = client.http.get(f"{url}/packet", headers=client.auth("alice"))
    assert owner.status_code == 200 and "Private: this server shows" not in owner.text
    assert '<section id="code">' in owner.text
    assert client.http.get(f"{url}/packet", headers=client.auth("bob")).status_code == 403
    assert client.http.get(f"{url}/report").status_code == 403
    report = client.http.get(f"{url}/report", headers=client.auth("alice"))
    assert report.status_code == 200 and report.json()["verdict"] == "verified"


def test_pages_render_with_a_policy_that_forbids_outside_assets(serve, tmp_path):
    client = serve(f"sqlite:///{tmp_path / 'kp.db'}", workers=0)
    submission_id = client.submit(fake_source()).json()["id"]
    for path in ("/", f"/tasks/{TASK}", "/history", "/queue", f"/submissions/{submission_id}"):
        page = client.http.get(path)
        assert page.status_code == 200, path
        assert "default-src 'none'" in page.headers["Content-Security-Policy"], path
        assert "http://" not in page.text and "https://" not in page.text, path
    assert 'data-status="queued"' in client.http.get(f"/submissions/{submission_id}").text
    assert f"#{submission_id}" in client.http.get("/queue").text
    runs = client.http.get("/history?a=1&b=1")
    assert runs.status_code == 200 and 'id="comparison"' in runs.text
    assert client.http.get("/history?a=1&b=99").status_code == 404


def test_a_submission_identical_to_a_bench_result_reuses_it_and_the_task_page_shows_bench_runs(
    serve, tmp_path
):
    from kernelproof.roofline import machine_fingerprint
    from kernelproof.serve.catalog import SuiteCatalog
    from kernelproof.store.results import ResultsStore

    from .conftest import fake_report

    url = f"sqlite:///{tmp_path / 'kp.db'}"
    catalog = SuiteCatalog.read(SUITE, "quick", {"timing": False}, machine_fingerprint("cpu"))
    source = fake_source(speedup=1.7, ci=(1.6, 1.8), tag="bench")
    with ResultsStore(url) as store:  # what `kernelproof bench` leaves behind
        run = store.start_run(suite=SUITE, solutions="solutions", label="nightly")
        stored = store.add(run, TASK, 1, "19", 0, fake_report(source, catalog, TASK))
    client = serve(url, workers=0)
    reused = client.submit(source)
    assert reused.status_code == 200 and reused.json()["reused"] is True
    assert reused.json()["result"]["verification_id"] == stored
    page = client.http.get(f"/tasks/{TASK}").text
    bench = page[page.index('id="bench"') :]
    assert "nightly" in bench and "1.7x" in bench
