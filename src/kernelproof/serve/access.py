"""Who is asking and what they may send: bearer tokens and bounded request bodies, shared by
the submission API (``app``) and the reward endpoints (``rewards``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, overload

from fastapi import Request

from kernelproof.serve.tokens import TokenBook

__all__ = [
    "DRAIN_LIMIT_BYTES",
    "JSON_ENVELOPE_BYTES",
    "JSON_OVERHEAD_FACTOR",
    "ApiError",
    "authenticated",
    "bounded_body",
    "drain_body",
    "too_large",
]

#: JSON escaping can make a source up to six times longer (``\\u0000``), plus the envelope:
#: a body beyond this cannot hold a source within the limit, so it is refused unread.
JSON_OVERHEAD_FACTOR = 6
JSON_ENVELOPE_BYTES = 4096

#: A client that sends a too-large body at once (``urllib`` does) reads the 413 only once the
#: server has read what it sent: closing with unread data resets the connection, and the
#: client sees a reset instead of the answer. Bodies up to this size are read and dropped
#: before the 413; beyond it the connection is closed unread.
DRAIN_LIMIT_BYTES = 64 << 20


class ApiError(Exception):
    """An error answered as JSON with ``status``; the message says what to fix."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


@overload
def authenticated(
    tokens: Callable[[], TokenBook], request: Request, *, required: Literal[True]
) -> str: ...
@overload
def authenticated(
    tokens: Callable[[], TokenBook], request: Request, *, required: bool
) -> str | None: ...
def authenticated(
    tokens: Callable[[], TokenBook], request: Request, *, required: bool
) -> str | None:
    """The name of the request's bearer token; ``None`` for an anonymous request that may be
    one. A token that is sent must be valid, even where none is required."""
    header = request.headers.get("authorization")
    if header is None:
        if required:
            raise ApiError(
                401,
                "no token: send 'Authorization: Bearer TOKEN' (the server's "
                "operator makes tokens with `kernelproof token create NAME "
                "--tokens FILE`)",
                {"WWW-Authenticate": "Bearer"},
            )
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            f"the Authorization header must be 'Bearer TOKEN', not {scheme!r} ...",
            {"WWW-Authenticate": "Bearer"},
        )
    name = tokens().name_of(token.strip())
    if name is None:
        raise ApiError(
            401,
            "this token is not known to the server: check it was copied whole "
            "(it starts with 'kp_'), or ask the operator for a new one",
            {"WWW-Authenticate": "Bearer"},
        )
    return name


async def bounded_body(request: Request, max_source_bytes: int) -> bytes:
    """The request body, refused with 413 as soon as it cannot hold a source within the limit."""
    cap = max_source_bytes * JSON_OVERHEAD_FACTOR + JSON_ENVELOPE_BYTES
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        if int(declared) <= DRAIN_LIMIT_BYTES:
            await drain_body(request)
        raise too_large(int(declared), max_source_bytes, "the request body")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            await drain_body(request, size)
            raise too_large(size, max_source_bytes, "the request body (so far)")
        chunks.append(chunk)
    return b"".join(chunks)


async def drain_body(request: Request, read: int = 0) -> None:
    """Read and drop the rest of the body (up to :data:`DRAIN_LIMIT_BYTES`), so the client,
    still sending, receives the refusal instead of a connection reset."""
    async for chunk in request.stream():
        read += len(chunk)
        if read > DRAIN_LIMIT_BYTES:
            return


def too_large(size: int, limit: int, what: str) -> ApiError:
    return ApiError(
        413,
        f"{what} is {size} bytes; the source may be at most {limit} bytes of "
        "UTF-8: submit the kernel's own code only (no data, no vendored "
        "libraries)",
        {"Connection": "close"},
    )
