"""Settings handed to a trusted child process over its stdin, never through its environment.

A process that runs verifications (the server's workers) needs settings that include secrets
(the store URL, with its password). Put in the environment, they reach every process the
child starts and ``/proc/<pid>/environ``. Written to the child's stdin instead, they are read
once at start-up, and stdin is then pointed at ``/dev/null``: the forkserver the child starts
later inherits nothing readable, and the child's environment is the trusted allowlist
(:func:`~kernelproof.workers.candidate_environment.trusted_environment`).

The server's supervisor calls :func:`start_with_settings`; the child calls
:func:`read_settings` first thing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from kernelproof.workers.candidate_environment import trusted_environment

#: The most bytes of settings a child reads (a worker's config is a few hundred bytes).
MAX_SETTINGS_BYTES = 1 << 20


def start_with_settings(
    argv: list[str],
    settings: str,
    extra_environment: Mapping[str, str] | None = None,
    **popen_options: object,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with the trusted environment (plus ``extra_environment``, which must
    hold no secret) and write ``settings`` to its stdin, then close it."""
    environment = trusted_environment(os.environ)
    environment.update(extra_environment or {})
    process = subprocess.Popen(argv, env=environment, stdin=subprocess.PIPE, **popen_options)  # type: ignore[call-overload]
    assert process.stdin is not None
    try:
        process.stdin.write(settings.encode())
    except BrokenPipeError:
        pass  # the child died at once; its exit status says why
    finally:
        process.stdin.close()
        process.stdin = None  # written and closed: communicate() must not touch it again
    return process


def read_settings() -> str:
    """The settings written by :func:`start_with_settings`, read from stdin to its end; stdin
    is then ``/dev/null``, so nothing started later can read them."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_SETTINGS_BYTES:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_SETTINGS_BYTES:
        raise ValueError(
            f"settings on stdin exceed {MAX_SETTINGS_BYTES} bytes; a worker's "
            "settings are a small JSON object"
        )
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)
    return b"".join(chunks).decode()
