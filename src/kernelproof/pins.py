"""Hashes of the artifacts later runs trust, and the check before each use.

The calibration (the ceilings every floor check divides by) and the compiled cache-eviction
helper (loaded by every worker) live in kernelproof's cache folder. Only the controller writes
them, and it records each one's SHA-256 in ``pins.json`` beside them. Candidates cannot write
that folder (their sandbox does not grant it); the pin catches everything else that could: a
candidate run with ``--insecure-sandbox``, another tool, a stale or half-written file. An
artifact whose bytes no longer match its pin is not used: it is deleted, and rebuilt or
measured again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelproof.config import cache_dir

log = logging.getLogger(__name__)

#: The pin file, in the cache folder.
PINS_FILE = "pins.json"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextmanager
def _locked() -> Iterator[Path]:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "pins.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder / PINS_FILE
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, str]:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def pin(artifact: Path) -> None:
    """Record the current bytes of ``artifact`` as the trusted ones (the controller just wrote
    it)."""
    data = artifact.read_bytes()
    with _locked() as pins:
        table = _read(pins)
        table[artifact.name] = digest(data)
        partial = pins.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(table, indent=1, sort_keys=True))
        os.replace(partial, pins)


def trusted_bytes(artifact: Path) -> bytes | None:
    """The artifact's bytes when they match its pin; None when it is absent, unpinned or
    changed. A changed artifact is deleted and logged: whoever wrote it was not the
    controller."""
    try:
        data = artifact.read_bytes()
    except OSError:
        return None
    with _locked() as pins:
        expected = _read(pins).get(artifact.name)
    if expected == digest(data):
        return data
    if expected is None:
        log.warning(
            "ignoring %s: it has no pin (written by something other than kernelproof's controller)",
            artifact,
        )
    else:
        log.warning(
            "ignoring %s: its contents changed since kernelproof wrote it (expected "
            "sha256 %s); it is rebuilt or measured again",
            artifact,
            expected[:16],
        )
    try:
        artifact.unlink()
    except OSError:
        pass
    return None
