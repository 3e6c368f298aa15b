"""The server's OpenAPI schema, complete: every status a route answers, with the error body,
and the request bodies of the routes that read their body themselves (to refuse an oversized
one unread, they take the raw request, so FastAPI cannot see their model).

``tests/serve/test_openapi.py`` holds the server to it with schemathesis.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

__all__ = ["ErrorBody", "errors", "html", "install_schema", "json_body", "json_object"]

#: What each error status means on this server.
MEANINGS = {
    401: "No token, or one the server does not know (WWW-Authenticate: Bearer)",
    403: "Private to the token that submitted it",
    404: "No such submission, task, run or report",
    405: "Method not allowed here (Allow lists the ones that are)",
    409: "Not done yet: poll the submission",
    413: "The body or the source is larger than the server accepts",
    422: "The request is malformed: the message says what to send",
    429: "Over the token's rate limit or queue cap (Retry-After)",
    500: "The task is broken on this server (the operator's to fix)",
    503: "The server cannot check tokens now (its operator has been told); retry later",
}


class ErrorBody(BaseModel):
    """Every error: what was wrong and what to send instead."""

    error: str
    status: int


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` entries of these error statuses: JSON on every route, pages too."""
    return {
        status: {
            "description": MEANINGS[status],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
        for status in statuses
    }


def html(description: str) -> dict[int | str, dict[str, Any]]:
    """A page's 200 response."""
    return {200: {"description": description, "content": {"text/html": {}}}}


def json_object(description: str) -> dict[int | str, dict[str, Any]]:
    """A 200 whose body is a JSON object described elsewhere (a report)."""
    return {
        200: {
            "description": description,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    }


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` for a route that reads a ``model`` JSON body itself."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    }


def install_schema(app: FastAPI, bodies: list[type[BaseModel]]) -> None:
    """Make ``app.openapi()`` include the schemas of ``bodies`` (the request bodies named by
    :func:`json_body`) among its components."""

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, routes=app.routes, description=app.description
            )
            components = document.setdefault("components", {}).setdefault("schemas", {})
            models: list[type[BaseModel]] = [ErrorBody, *bodies]
            for model in models:
                body = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(body.pop("$defs", {}))
                components[model.__name__] = body
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
