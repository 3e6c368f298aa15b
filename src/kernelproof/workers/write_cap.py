"""The cap on what a candidate may write: its scratch folder and its build caches together.

The sandbox lets a candidate write only those folders (Landlock), and no single file beyond
:data:`WRITE_CAP_BYTES` (``RLIMIT_FSIZE``: the write fails with ``EFBIG``, "File too large").
Many files can still add up, so the controller measures the folders from outside while it
waits for the worker, as it measures the worker's memory, and kills a worker over the cap:
its verdict says it wrote more than a candidate may. Every entry point (``verify``, ``bench``,
the Python API, a server's workers) runs its candidates through the same worker process, so
the cap holds for all of them.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

__all__ = ["MAX_ENTRIES", "MEASURE_EVERY_S", "WRITE_CAP_BYTES", "WriteMeter"]

#: Bytes a candidate may have written at once, all its folders together. Honest builds
#: (a load_inline extension, Triton's and Inductor's caches) take tens of MiB.
WRITE_CAP_BYTES = 1 << 30

#: Seconds between two measurements: a walk of the folders costs milliseconds.
MEASURE_EVERY_S = 0.5

#: Files and folders a measurement looks at before it counts the candidate as over the cap: a
#: candidate making millions of empty files must not make the controller's walk take minutes.
MAX_ENTRIES = 200_000


@dataclass
class WriteMeter:
    """Measures the folders (and files: its log) a candidate may write, at most every
    :data:`MEASURE_EVERY_S`."""

    folders: list[str]
    cap_bytes: int = WRITE_CAP_BYTES
    _next: float = field(default=0.0)

    def over_cap(self) -> str | None:
        """Why the candidate is over the cap, or None (also between measurements)."""
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + MEASURE_EVERY_S
        return self.measure()

    def measure(self) -> str | None:
        """Why the candidate is over the cap now, or None."""
        size, entries = 0, 0
        for path in self.folders:
            if os.path.isfile(path):
                try:
                    size += os.stat(path).st_blocks * 512
                except OSError:
                    pass
        stack = [folder for folder in self.folders if os.path.isdir(folder)]
        while stack:
            try:
                with os.scandir(stack.pop()) as listing:
                    for entry in listing:
                        entries += 1
                        if entries > MAX_ENTRIES:
                            return (
                                f"the candidate made more than {MAX_ENTRIES} files and "
                                "folders in its scratch and build folders, over the "
                                "sandbox's cap"
                            )
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                stack.append(entry.path)
                            else:
                                size += entry.stat(follow_symlinks=False).st_blocks * 512
                        except OSError:
                            continue
            except OSError:
                continue
            if size > self.cap_bytes:
                return (
                    f"the candidate wrote over {size / 2**30:.1f} GiB to its scratch and "
                    f"build folders and its log, over the sandbox's cap of "
                    f"{self.cap_bytes / 2**30:.1f} GiB"
                )
        return None
