"""The reward endpoint (serve/rewards.py) in-process, on SQLite and a real PostgreSQL: rewards
in order with stored reports, OpenRLHF's request shape, tokens, limits, and tasks only from
the served suite. The verifications are canned (tests/rl/canned.py); tests/rl/test_adapters_slow.py
scores real ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.rl.canned import FakeSession, by_marker, completion

from kernelproof.rl.scorer import BatchScorer
from kernelproof.serve.app import create_app
from kernelproof.serve.config import ServeConfig
from kernelproof.serve.rewards import RewardLimits
from kernelproof.serve.server import open_server
from kernelproof.serve.tokens import create_token

from .conftest import SUITE

TASK = "level1/10_Softmax"

#: A KernelBench-style prompt: it carries the reference and an example ``ModelNew`` of its own,
#: which must never be taken for the response's candidate.
PROMPT = (
    "You write fast kernels. Example of the format:\n```python\nimport torch.nn as nn\n"
    "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a + b\n```\n"
    "Now optimise this model:\n```python\nclass Model(nn.Module): ...\n```\n"
)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``app(database_url, **limits)`` -> (client, tokens, session): a server with no queue
    workers whose reward scorer runs on the canned Session."""
    clients: list[TestClient] = []

    def start(database_url: str, **limits: Any) -> tuple[TestClient, dict[str, str], Any]:
        tokens_file = tmp_path / f"tokens-{len(clients)}.jsonl"
        tokens = {name: create_token(name, tokens_file) for name in ("alice", "bob")}
        config = ServeConfig(
            suite=SUITE, db_url=database_url, tokens=tokens_file, profile="quick", workers=0
        )
        application = create_app(open_server(config, lambda server: None))
        service = application.state.rewards
        service.limits = RewardLimits(**limits)
        service.__post_init__()
        session = FakeSession(by_marker)
        service.scorer = BatchScorer(
            session=session, tasks=service.tasks(), jobs=2, keep_report=service.keep
        )
        client = TestClient(application)
        client.__enter__()
        clients.append(client)
        return client, tokens, session

    yield start
    for client in clients:
        client.__exit__(None, None, None)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_rewards_come_back_in_order_and_their_reports_are_stored(app, database_url):
    client, tokens, _ = app(database_url)
    items = [
        {"task": TASK, "completion": completion("# fast")},
        {"task": TASK, "completion": "no code"},
        {
            "task": TASK,
            "completion": [{"role": "assistant", "content": completion("# verdict: suspect")}],
        },
    ]
    answer = client.post("/api/rewards", json={"items": items}, headers=bearer(tokens["alice"]))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["rewards"] == [1.5, 0.0, 0.0]
    assert [r["verdict"] for r in body["results"]] == ["verified", None, "suspect"]
    assert body["report_ids"][1] is None and "no candidate" in body["results"][1]["reason"]
    stored = client.get(
        f"/api/rewards/reports/{body['report_ids'][2]}", headers=bearer(tokens["alice"])
    )
    assert stored.status_code == 200 and stored.json()["verdict"] == "suspect"
    # Another token reads none of it, nor any other verification of the store by its id.
    for report_id in (body["report_ids"][2], int(body["report_ids"][0]) + 100):
        other = client.get(f"/api/rewards/reports/{report_id}", headers=bearer(tokens["bob"]))
        assert other.status_code == 404 and "token 'bob'" in other.json()["error"]
    # Reward verifications rank on no leaderboard.
    board = client.get(f"/api/leaderboard/{TASK}").json()
    assert not board["ranked"] and not board["suspect"]


def test_openrlhf_requests_take_the_response_after_its_prompt(app, tmp_path):
    client, tokens, session = app(f"sqlite:///{tmp_path / 'o.db'}")
    queries = [
        PROMPT + completion("# fast"),
        PROMPT + "I give up.",
        "a query that lost its prompt " + completion("# fast"),
    ]
    answer = client.post(
        f"/api/rewards/openrlhf?token={tokens['alice']}",
        json={"query": queries, "prompts": [PROMPT] * 3, "labels": [TASK] * 3},
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["rewards"] == [1.5, 0.0, 0.0]
    assert body["scores"] == [1.0, 0.0, 0.0]
    assert body["extra_logs"]["extracted"] == [1.0, 0.0, 0.0]
    assert "does not contain its prompt" in body["reasons"][2]
    # The prompt's example ModelNew (a + b) was never a candidate.
    assert all("a + b" not in call["candidate"] for call in session.calls)


def test_tasks_come_only_from_the_served_suite(app, tmp_path):
    client, tokens, session = app(f"sqlite:///{tmp_path / 's.db'}")
    reference = (SUITE / "level1" / "10_Softmax.py").read_text()
    for task in (reference, str(SUITE / "level1" / "10_Softmax.py"), "level9/0_Nothing"):
        answer = client.post(
            "/api/rewards",
            headers=bearer(tokens["alice"]),
            json={"items": [{"task": task, "completion": completion()}]},
        )
        assert answer.status_code == 200
        assert answer.json()["rewards"] == [0.0]
        assert "task" in answer.json()["results"][0]["reason"]
    assert session.calls == []


def test_refusals_name_the_limit_and_the_fix(app, tmp_path):
    client, tokens, _ = app(
        f"sqlite:///{tmp_path / 'l.db'}",
        max_batch=2,
        burst=2,
        batches_per_minute=1,
        max_completion_chars=500,
    )
    item = {"task": TASK, "completion": completion()}
    assert client.post("/api/rewards", json={"items": [item]}).status_code == 401
    assert client.post("/api/rewards?token=kp_wrong", json={"items": [item]}).status_code == 401
    too_many = client.post(
        "/api/rewards", json={"items": [item] * 3}, headers=bearer(tokens["alice"])
    )
    assert too_many.status_code == 413 and "at most 2 per request" in too_many.json()["error"]
    too_long = client.post(
        "/api/rewards",
        headers=bearer(tokens["alice"]),
        json={"items": [{"task": TASK, "completion": "x" * 600}]},
    )
    assert too_long.status_code == 413
    bad = client.post("/api/rewards", json={"itemz": []}, headers=bearer(tokens["alice"]))
    assert bad.status_code == 422 and "RewardRequest" in bad.json()["error"]
    late = client.post(
        "/api/rewards",
        json={"items": [item], "deadline_s": 10_000},
        headers=bearer(tokens["alice"]),
    )
    assert late.status_code == 422 and "at most" in late.json()["error"]
    assert (
        client.post(
            "/api/rewards", json={"items": [item]}, headers=bearer(tokens["alice"])
        ).status_code
        == 200
    )
    assert (
        client.post(
            "/api/rewards", json={"items": [item]}, headers=bearer(tokens["alice"])
        ).status_code
        == 200
    )
    limited = client.post("/api/rewards", json={"items": [item]}, headers=bearer(tokens["alice"]))
    assert limited.status_code == 429 and "Retry-After" in limited.headers
    # Another token has its own bucket.
    assert (
        client.post(
            "/api/rewards", json={"items": [item]}, headers=bearer(tokens["bob"])
        ).status_code
        == 200
    )
