"""The gaps a server exposed to a team must not have, in-process (FastAPI's TestClient):
ids beyond 64 bits, a broken tokens file, token revocation, the packet's policy header, 405s
that say what is allowed, an owner-only SQLite store, and ``--private-code`` pages free of
anything derived from another user's source."""

from __future__ import annotations

import logging
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from kernelproof.schema import Finding, Repro, Severity, Verdict
from kernelproof.serve.app import create_app
from kernelproof.serve.config import ServeConfig
from kernelproof.serve.server import open_server
from kernelproof.serve.supervisor import ThreadWorkers
from kernelproof.serve.tokens import create_token

from .conftest import SUITE, fake_report, fake_source
from .test_api import Client

#: A line of a candidate's source that its failure quotes (as a traceback does).
SECRET_LINE = "return my_private_kernel(x, scale=0.7071)  # the trick: skip the erf"


def _quoting_verify(catalog: Any) -> Any:
    """A fake verification whose report quotes the candidate's source, as a real traceback,
    a static-scan excerpt and a shrunk repro do."""

    def run(task: Any, candidate: Path) -> Any:
        source = candidate.read_text()
        report = fake_report(source, catalog, task.key)
        traceback = (
            "Traceback (most recent call last):\n"
            f'  File "{candidate}", line 9, in forward\n'
            f"    {SECRET_LINE}\n"
            "NameError: name 'my_private_kernel' is not defined"
        )
        return report.model_copy(
            update={
                "verdict": Verdict.BROKEN,
                "findings": [
                    Finding(
                        check="crash",
                        severity=Severity.FAIL,
                        forces=Verdict.BROKEN,
                        message=traceback,
                    )
                ],
                "repros": [
                    Repro(
                        failure="crash", knobs={}, seed=1, command="python repro.py", script=source
                    )
                ],
            }
        )

    return run


@pytest.fixture
def serve_with(tmp_path: Path) -> Iterator[Callable[..., Client]]:
    """``serve_with(database_url, verify=None, **config)``: an app with one thread worker."""
    stack: list[TestClient] = []

    def start(database_url: str, verify: Any = None, **config: Any) -> Client:
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

        def pool(server: Any) -> Any:
            from .conftest import fake_verify

            return ThreadWorkers(
                server.queue, server.catalog, server.run_id, (verify or fake_verify)(server.catalog)
            )

        http = TestClient(create_app(open_server(settings, pool)))
        http.__enter__()
        stack.append(http)
        return Client(http, tokens)

    yield start
    for http in stack:
        http.__exit__(None, None, None)


def test_ids_beyond_64_bits_are_refused_as_invalid_not_a_server_error(serve_with, database_url):
    client = serve_with(database_url)
    for big in (2**31, 2**63, 2**64 + 5, 10**30):
        for path in (
            f"/api/submissions/{big}",
            f"/api/submissions/{big}/report",
            f"/submissions/{big}",
        ):
            response = client.http.get(path)
            assert response.status_code == 422, (path, response.text)
            assert "less than or equal" in response.json()["error"], path
        owner = client.http.get(f"/api/submissions/{big}/packet", headers=client.auth("alice"))
        assert owner.status_code == 422, owner.text
    assert client.http.get(f"/api/submissions/{2**31 - 1}").status_code == 404


def test_a_missing_or_broken_tokens_file_is_a_plain_503_with_the_detail_in_the_log(
    serve_with, tmp_path, caplog
):
    client = serve_with(f"sqlite:///{tmp_path / 'kp.db'}")
    tokens = tmp_path / "tokens-0.jsonl"
    tokens.write_text("this is not json\n")
    with caplog.at_level(logging.ERROR, logger="kernelproof.serve"):
        broken = client.submit(fake_source())
    assert broken.status_code == 503 and broken.headers["Retry-After"]
    assert str(tmp_path) not in broken.text and "tokens-0" not in broken.text
    assert f"{tokens}:1" in caplog.text  # the operator learns which line is wrong
    tokens.unlink()
    missing = client.http.get("/api/submissions/1", headers=client.auth("alice"))
    assert missing.status_code == 503 and str(tmp_path) not in missing.text
    assert client.http.get("/api/tasks").status_code == 200  # anonymous reads go on


def test_a_revoked_token_is_refused_from_the_next_request(serve_with, tmp_path):
    from kernelproof.cli import app as cli

    client = serve_with(f"sqlite:///{tmp_path / 'kp.db'}")
    assert client.submit(fake_source(tag="before")).status_code == 202
    tokens = tmp_path / "tokens-0.jsonl"
    result = CliRunner().invoke(cli, ["token", "revoke", "alice", "--tokens", str(tokens)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    refused = client.submit(fake_source(tag="after"))
    assert refused.status_code == 401 and "not known" in refused.json()["error"]
    assert client.submit(fake_source(tag="bob"), name="bob").status_code == 202
    again = CliRunner().invoke(cli, ["token", "revoke", "alice", "--tokens", str(tokens)])
    assert again.exit_code != 0 and "no token named 'alice'" in str(again.exception)


def test_the_packet_page_has_the_policy_header_and_a_405_says_what_is_allowed(serve_with, tmp_path):
    client = serve_with(f"sqlite:///{tmp_path / 'kp.db'}")
    submission_id = client.submit(fake_source(speedup=1.1)).json()["id"]
    view = client.wait(submission_id)
    for packet in (
        client.http.get(view["packet"]),
        client.http.get(f"/api/submissions/{submission_id}/packet", headers=client.auth("alice")),
    ):
        assert packet.status_code == 200 and 'data-verdict="verified"' in packet.text
        assert "default-src 'none'" in packet.headers["Content-Security-Policy"]
    wrong = client.http.delete(f"/api/submissions/{submission_id}")
    assert wrong.status_code == 405 and wrong.headers["Allow"] == "GET"
    post_only = client.http.get("/api/submissions")
    assert post_only.status_code == 405 and post_only.headers["Allow"] == "POST"


def test_a_sqlite_store_is_created_readable_by_its_owner_only(serve_with, tmp_path):
    database = tmp_path / "kp.db"
    serve_with(f"sqlite:///{database}")
    assert stat.S_IMODE(database.stat().st_mode) == 0o600


def test_private_code_pages_show_nothing_derived_from_the_source_to_others(
    serve_with, database_url
):
    client = serve_with(database_url, _quoting_verify, private_code=True)
    source = fake_source("broken") + f"\ndef helper(x):\n    {SECRET_LINE}\n"
    submission_id = client.submit(source).json()["id"]
    view = client.wait(submission_id)
    assert view["result"]["verdict"] == "broken"
    public = client.http.get(view["packet"])
    assert public.status_code == 200 and 'data-verdict="broken"' in public.text
    assert "my_private_kernel" not in public.text and "skip the erf" not in public.text
    assert "NameError" in public.text  # what failed is still public, only the code is not
    owner = client.http.get(
        f"/api/submissions/{submission_id}/packet", headers=client.auth("alice")
    )
    assert "my_private_kernel" in owner.text
    for name in (None, "bob"):
        headers = client.auth(name) if name else {}
        assert (
            client.http.get(f"/api/submissions/{submission_id}/report", headers=headers).status_code
            == 403
        )


def test_a_reward_task_naming_an_unknown_home_is_an_answer_not_a_server_error(serve_with, tmp_path):
    client = serve_with(f"sqlite:///{tmp_path / 'kp.db'}")
    response = client.http.post(
        "/api/rewards",
        headers=client.auth("alice"),
        json={"items": [{"task": "~no-such-user-kp/x", "completion": "x"}]},
    )
    assert response.status_code in (200, 422), response.text  # found by schemathesis: a 500
    assert "Could not determine home" not in response.text
