"""What a server publishes about a verification: its report with the server's secrets and
absolute paths taken out, and, for ``--private-code``, without anything derived from the
candidate's source.

A candidate's output, errors and tracebacks land in its report, and a server shows reports to
anyone. The candidate's environment is an allowlist (see docs/security.md), so it should hold
no secret; this is the second line of defence: every known secret value (the store URL and its
password, the values of the server's environment variables whose names say secret) is replaced
by ``[redacted]`` wherever it turns up, also cut short at a string's end, where a truncated
message keeps only its beginning. Absolute paths of the server (its suite, temp and install
folders) are replaced by a short label, so a public page tells nothing of the host's layout.
"""

from __future__ import annotations

import functools
import io
import keyword
import os
import re
import sys
import tempfile
import tokenize
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import make_url

from kernelproof.schema import Report

__all__ = [
    "REDACTED",
    "Scrubber",
    "private_names",
    "secret_values",
    "server_paths",
    "without_source",
]

#: What a secret is replaced with.
REDACTED = "[redacted]"

#: What a line of private source (or a traceback frame of it) is replaced with.
PRIVATE_LINE = "[private: a line of the submitted source, shown only to its owner]"

#: Names of environment variables whose values are secrets.
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|"
    r"PRIVATE|DSN|DATABASE_URL|_URL$|_URI$",
    re.IGNORECASE,
)

#: Shorter values are not treated as secrets: replacing "1" or "true" everywhere would wreck
#: the report and hide nothing.
MIN_SECRET_CHARS = 6

#: A truncated string keeps at least this many characters of a secret's start before its end:
#: those are redacted too (fewer tell next to nothing, and would hit ordinary words).
MIN_PREFIX_CHARS = 6

#: Longer beginnings of a secret are still redacted, at their first this many characters.
MAX_PREFIX_CHARS = 256

#: URLs with credentials in them (``scheme://user:password@host``), whatever their variable.
CREDENTIAL_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@")

#: Source lines shorter than this (``)``, ``else:``) say nothing of the code.
MIN_SOURCE_LINE_CHARS = 6

#: What a name the private source brings in is replaced with.
PRIVATE_NAME = "<private>"

#: Shorter names (``x``, ``out``) say nothing of the code.
MIN_PRIVATE_NAME_CHARS = 4

#: Names every candidate uses, beyond Python's and torch's own.
PUBLIC_NAMES = (
    "ModelNew",
    "Model",
    "forward",
    "self",
    "torch",
    "numpy",
    "triton",
    "numba",
    "get_inputs",
    "get_init_inputs",
    "load_inline",
    "cpp_extension",
)

#: One word: a value the report's schema may fix (a verdict, a check id, a variant's name).
TOKEN = re.compile(r"[\w:./-]*")

#: A traceback frame: ``File "...", line N, in NAME``.
FRAME = re.compile(r'File "[^"]*", line \d+')


def secret_values(db_url: str | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    """The secrets a server knows: the store URL (whole and its password) and the values of
    environment variables whose names say secret or that hold a URL with a password."""
    found: list[str] = []
    if db_url:
        found.append(db_url)
        try:
            url = make_url(db_url)
            if url.password:
                found.append(str(url.password))
            found.append(url.render_as_string(hide_password=False))
        except Exception:  # noqa: BLE001 - an unparsable URL is still redacted whole
            pass
    for name, value in (os.environ if environ is None else environ).items():
        if SECRET_NAME.search(name) and value:
            found.append(value)
        for match in CREDENTIAL_URL.finditer(value or ""):
            found += [match.group(0), match.group(1)]
    return sorted({v for v in found if len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def server_paths(suite: Path | None = None) -> list[tuple[str, str]]:
    """The server's absolute folders and the label each is shown as, longest first."""
    import kernelproof

    pairs = {
        str(Path(tempfile.gettempdir()).resolve()): "<tmp>",
        tempfile.gettempdir(): "<tmp>",
        "/tmp": "<tmp>",
        "/var/tmp": "<tmp>",
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        sys.exec_prefix: "<python>",
        str(Path(kernelproof.__file__).resolve().parents[1]): "<kernelproof>",
        os.getcwd(): "<server>",
        str(Path.home()): "~",
    }
    if suite is not None:
        pairs[str(suite.resolve())] = "<suite>"
        pairs[str(suite)] = "<suite>"
    return sorted(
        ((p.rstrip("/"), label) for p, label in pairs.items() if len(p) > 1),
        key=lambda pair: len(pair[0]),
        reverse=True,
    )


@dataclass(frozen=True)
class Scrubber:
    """Replaces known secrets and server paths in every string of a report."""

    secrets: tuple[str, ...] = ()
    paths: tuple[tuple[str, str], ...] = ()

    @classmethod
    def for_server(
        cls, db_url: str, suite: Path | None, environ: Mapping[str, str] | None = None
    ) -> Scrubber:
        return cls(tuple(secret_values(db_url, environ)), tuple(server_paths(suite)))

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, REDACTED)
        for secret in self.secrets:
            cut = _truncated_secret(secret)
            if cut is not None:
                value = cut.sub(REDACTED, value)
        for path, label in self.paths:
            value = re.sub(re.escape(path) + r"(?=/|\b|$)", label, value)
        return value

    def report(self, report: Report) -> Report:
        try:
            return _map_report(report, self.text)
        except ValidationError:
            # A secret equal to a value the schema fixes (an odd variable's value such as
            # "verified"): that word is no secret in the report; scrub the sentences.
            return _map_report(
                report, lambda value: value if TOKEN.fullmatch(value) else self.text(value)
            )


def without_source(report: Report, source: str, public_source: str = "") -> Report:
    """``report`` as a public page of a ``--private-code`` server may show it: no repro
    script or command; every line that holds a line of ``source`` or a traceback frame
    replaced by :data:`PRIVATE_LINE`; and the names the source brings in (its functions,
    variables, kernels), except those of ``public_source`` (the task's reference), Python's
    and torch's, replaced by :data:`PRIVATE_NAME`: an error saying ``name 'fold_bias' is not
    defined`` tells others what is inside."""
    lines = _source_lines(source)
    names = private_names(source, public_source)
    named = (
        re.compile(
            r"\b(?:" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")\b"
        )
        if names
        else None
    )
    cleaned = report.model_copy(
        update={
            "repros": [
                repro.model_copy(
                    update={
                        "script": PRIVATE_LINE,
                        "command": PRIVATE_LINE,
                        "detail": PRIVATE_LINE if repro.detail else "",
                    }
                )
                for repro in report.repros
            ]
        }
    )

    def hide(value: str, *, free_text_only: bool = False) -> str:
        if "\n" in value or FRAME.search(value) or any(line in value for line in lines):
            value = "\n".join(
                PRIVATE_LINE if FRAME.search(part) or any(line in part for line in lines) else part
                for part in value.split("\n")
            )
        if named is None or (free_text_only and TOKEN.fullmatch(value)):
            return value
        return named.sub(PRIVATE_NAME, value)

    try:
        return _map_report(cleaned, hide)
    except ValidationError:
        # A private name equal to a value the schema fixes (a verdict, a check id: a source
        # may name a variable ``broken``): leave single words alone, hide names in sentences.
        return _map_report(cleaned, lambda value: hide(value, free_text_only=True))


def private_names(source: str, public_source: str = "") -> set[str]:
    """The identifiers of ``source``'s code (not its comments or strings) that are not
    also in ``public_source``, Python's builtins and keywords, or torch's namespaces."""
    return _identifiers(source) - _identifiers(public_source) - _public_names()


def _identifiers(source: str) -> set[str]:
    names: set[str] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME:
                names.add(token.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        names |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source))
    return {name for name in names if len(name) >= MIN_PRIVATE_NAME_CHARS}


@functools.lru_cache(maxsize=1)
def _public_names() -> frozenset[str]:
    """Names every candidate may use without telling anything: Python's and torch's."""
    import builtins

    names = set(dir(builtins)) | set(keyword.kwlist) | set(PUBLIC_NAMES)
    try:
        import torch

        for space in (torch, torch.nn, torch.nn.functional, torch.Tensor, torch.nn.Module):
            names |= set(dir(space))
    except ImportError:
        pass
    return frozenset(names)


def _source_lines(source: str) -> list[str]:
    """The source's lines that say something (comments included), stripped."""
    kept = {line.strip() for line in source.splitlines()}
    return sorted(
        (line for line in kept if len(line) >= MIN_SOURCE_LINE_CHARS), key=len, reverse=True
    )


@functools.lru_cache(maxsize=256)
def _truncated_secret(secret: str) -> re.Pattern[str] | None:
    """A secret's beginning at the end of a string (or before an ellipsis): what is left of
    it where a long message was cut short."""
    prefixes = [
        re.escape(secret[:n])
        for n in range(min(len(secret) - 1, MAX_PREFIX_CHARS), MIN_PREFIX_CHARS - 1, -1)
    ]
    if not prefixes:
        return None  # too short to leave a telling beginning
    return re.compile(f"(?:{'|'.join(prefixes)})(?=(?:\\.\\.\\.|\u2026)?['\"]?\\s*$)")


def _map_report(report: Report, change: Callable[[str], str]) -> Report:
    data = _map_strings(report.model_dump(mode="json", by_alias=True), change)
    return Report.model_validate(data)


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {
            _map_strings(k, change) if isinstance(k, str) else k: _map_strings(v, change)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    return value
