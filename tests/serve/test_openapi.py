"""schemathesis against the server's own OpenAPI schema, valid and invalid requests alike: no
500, no status, content type, header or body outside the schema, every 405 with its
``Allow``. The app runs in-process on SQLite with no workers: the subject is the API's
contract, not the verifier."""

from __future__ import annotations

from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="the test extra installs schemathesis")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    allow_header_conformance,
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from kernelproof.serve.app import create_app  # noqa: E402
from kernelproof.serve.config import ServeConfig  # noqa: E402
from kernelproof.serve.server import open_server  # noqa: E402
from kernelproof.serve.tokens import create_token  # noqa: E402

from .conftest import SUITE, fake_source  # noqa: E402

pytestmark = pytest.mark.slow

#: The checks: the error paths must stay inside the schema (schemathesis's
#: positive_data_acceptance is left out: a schema cannot say that a task must exist or that
#: OpenRLHF's three lists must be as long as each other, and those are 404s and 422s).
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
    allow_header_conformance,
]

#: Examples per operation and generation mode: enough to reach every error branch of these
#: small routes; more only costs minutes on a loaded machine.
EXAMPLES = 25


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestClient, str]:
    folder: Path = tmp_path_factory.mktemp("openapi")
    tokens = folder / "tokens.jsonl"
    token = create_token("alice", tokens)
    config = ServeConfig(
        suite=SUITE,
        db_url=f"sqlite:///{folder / 'kp.db'}",
        tokens=tokens,
        profile="quick",
        overrides={"timing": False},
    )
    client = TestClient(create_app(open_server(config, lambda _server: None)))
    client.__enter__()
    response = client.post(
        "/api/submissions",
        headers={"Authorization": f"Bearer {token}"},
        json={"task": "level1/19_NewGELU", "source": fake_source()},
    )
    assert response.status_code == 202, response.text  # id 1 exists: 409s are reachable
    return client, token


def _failures(client: TestClient, token: str, mode: GenerationMode) -> dict[str, set[str]]:
    """What schemathesis found wrong, by operation: each failure's title and its first line."""
    from hypothesis import given
    from hypothesis.errors import Unsatisfiable

    api = schemathesis.openapi.from_asgi("/api/openapi.json", client.app)
    found: dict[str, set[str]] = {}
    for result in api.get_all_operations():
        operation = result.ok()

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(operation.as_strategy(mode))
        def run(case):  # type: ignore[no-untyped-def]
            try:
                case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)
            except BaseException as exc:  # noqa: BLE001 - a FailureGroup: record each
                for failure in getattr(exc, "exceptions", [exc]):
                    found.setdefault(operation.label, set()).add(  # noqa: B023 - run() runs in this iteration
                        " ".join(str(failure).split())[:240]
                    )

        try:
            run()
        except Unsatisfiable:
            assert mode is GenerationMode.NEGATIVE, operation.label
            # A route with no parameters and no body has no invalid request to make.
    return found


@pytest.mark.parametrize(
    "mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"]
)
def test_every_answer_of_the_api_is_in_its_schema(served, mode):
    client, token = served
    assert _failures(client, token, mode) == {}


def test_the_schema_documents_request_bodies_and_error_statuses(served):
    client, _ = served
    document = client.get("/api/openapi.json").json()
    submit = document["paths"]["/api/submissions"]["post"]
    body = submit["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.rpartition("/")[2] in document["components"]["schemas"]
    assert {"200", "202", "401", "413", "422", "429", "503"} <= set(submit["responses"])
    for path in ("/api/rewards", "/api/rewards/openrlhf"):
        assert "requestBody" in document["paths"][path]["post"], path
