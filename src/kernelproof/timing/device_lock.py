"""One timing phase per device at a time, across threads and processes on this machine.

Correctness phases may share a device, but two timing phases would measure each other. The
lock is an advisory ``flock`` on a file per device: each holder opens its own descriptor, so it
serialises threads of one process and separate processes (a local pool, Ray workers) alike, and
the kernel releases it when a holder dies.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def lock_path(device: str) -> Path:
    base = Path(os.environ.get("KERNELPROOF_CACHE_DIR") or tempfile.gettempdir()) / "locks"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"timing-{device.replace(':', '_')}.lock"


@contextmanager
def device_timing_lock(device: str) -> Iterator[None]:
    """Hold the device's timing lock for the duration of the block."""
    with open(lock_path(device), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
