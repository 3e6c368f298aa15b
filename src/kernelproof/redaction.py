"""Known secret values, redacted from anything a candidate can make kernelproof show.

The second line of defence behind the candidate's environment allowlist
(:mod:`kernelproof.workers.candidate_environment`): what a candidate prints or raises reaches
findings, log tails, reports and the server's pages. Any known secret value in them is
replaced by :data:`MASK`. Known means: the values of the caller's environment variables
whose names look secret, the passwords of URLs with credentials in any variable (a store URL
``postgresql://user:password@host/db``), and values a caller registers (the server registers
its store URL and tokens with :func:`register_secret`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any

from kernelproof.workers.candidate_environment import secret_name

#: What a secret is replaced with.
MASK = "[redacted]"

#: Secrets shorter than this are not redacted: a two-character value ("1", "on") would mask
#: unrelated text everywhere and protects nothing.
MIN_SECRET_CHARS = 6

#: The password (group 1) of a URL with credentials, e.g. ``scheme://user:password@host``.
_URL_PASSWORD = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://[^/@\s:]*:([^@\s/]+)@")

_REGISTERED: set[str] = set()
_LOCK = threading.Lock()


def register_secret(value: str) -> None:
    """Add a value that must never be shown (a store URL, a token), for this process's life.
    Its URL password, if it has one, is registered too."""
    with _LOCK:
        _REGISTERED.update(_candidates_of(value))


def secret_values(environment: Mapping[str, str] | None = None) -> list[str]:
    """Every known secret: of ``environment`` (default: this process's) and the registered
    ones, longest first (so a URL is masked whole before its password alone)."""
    source = os.environ if environment is None else environment
    found: set[str] = set()
    for name, value in source.items():
        if secret_name(name):
            found.update(_candidates_of(value))
        found.update(match.group(1) for match in _URL_PASSWORD.finditer(value))
    with _LOCK:
        found.update(_REGISTERED)
    return sorted((v for v in found if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def _candidates_of(value: str) -> set[str]:
    return {value, *(match.group(1) for match in _URL_PASSWORD.finditer(value))}


def redact(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every known secret replaced by :data:`MASK`."""
    for secret in secret_values() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_data(data: Any, secrets: list[str] | None = None) -> Any:
    """A copy of JSON-like ``data`` (dicts, lists, strings) with secrets masked in every
    string, keys included."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return data
    if isinstance(data, str):
        return redact(data, secrets)
    if isinstance(data, dict):
        return {redact_data(k, secrets): redact_data(v, secrets) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(item, secrets) for item in data]
    return data
