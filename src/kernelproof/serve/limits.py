"""What one token may ask of the server: source size, submission rate, queued submissions.

The rate limit is a token bucket per API token, kept in the server's memory: a restart refills
every bucket, which costs at most one burst per token. Limits are checked before any work is
done for a submission, and every refusal names the limit, the value that broke it and the fix.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

__all__ = ["Limits", "RateLimiter"]


class Limits(BaseModel):
    """The server's limits; the defaults suit a public server on one machine."""

    max_source_bytes: int = Field(default=256 * 1024, gt=0)
    """Largest candidate source, in UTF-8 bytes: far above any real kernel (KernelBench's
    longest solutions are a few KiB), far below what could fill the database."""

    submissions_per_minute: float = Field(default=30.0, gt=0)
    """Sustained submissions per token per minute: one verification takes seconds to minutes,
    so a faster stream could only fill the queue."""

    burst: int = Field(default=10, gt=0)
    """Submissions a token may send at once before the rate applies."""

    max_queued_per_token: int = Field(default=20, gt=0)
    """Submissions of one token waiting or running at once, so no token can starve the others
    of workers."""


@dataclass
class RateLimiter:
    """A token bucket per name: ``burst`` at once, refilled at ``per_minute``."""

    per_minute: float
    burst: int
    _levels: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, name: str, now: float | None = None) -> float:
        """Take one submission from ``name``'s bucket. Returns 0 when allowed, else the
        seconds until one is available again (nothing is taken then)."""
        now = time.monotonic() if now is None else now
        rate = self.per_minute / 60.0
        with self._lock:
            level, then = self._levels.get(name, (float(self.burst), now))
            level = min(float(self.burst), level + (now - then) * rate)
            if level >= 1.0:
                self._levels[name] = (level - 1.0, now)
                return 0.0
            self._levels[name] = (level, now)
            return math.ceil((1.0 - level) / rate * 10) / 10
