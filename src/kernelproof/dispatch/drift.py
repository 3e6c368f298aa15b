"""The guard's drift recorder: production calls counted per signature, window by window, and
the values of sampled calls, appended to a JSON-lines log (:mod:`kernelproof.schema.drift`).

What a call costs: a dictionary increment per call under one uncontended lock (the routing key
the guard computes anyway is the dictionary's key; a key seen for the first time also builds
its signature), and a clock read to see whether the window is over. Value statistics (a pass
over the inputs) are computed only on the sampled share of calls (``shadow_rate``).
"""

from __future__ import annotations

import atexit
import math
import os
import threading
import time
import weakref
from collections.abc import Hashable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from kernelproof.schema.drift import (
    GuardRecord,
    SignatureCount,
    ValueCoverage,
    ValueStats,
    WindowRecord,
)
from kernelproof.schema.envelope import CallSignature
from kernelproof.schema.report import Report

__all__ = ["DEFAULT_WINDOW_S", "DriftRecorder", "value_coverage", "value_stats"]

#: A window of one minute: a serving day is 1440 points, enough to see a shift come, few
#: enough to plot and to keep (a window holds each distinct signature once).
DEFAULT_WINDOW_S = 60.0

#: Value variants of the matrix, by the value statistic each proves the candidate on.
COVERING_VARIANTS = {
    "non_finite": "value:inf-nan",
    "subnormal": "value:denormal",
    "huge": "value:largest-finite",
}


class DriftRecorder:
    """Counts one guard's calls and writes them to ``path`` a window at a time."""

    def __init__(self, path: Path, report: Report, window_s: float = DEFAULT_WINDOW_S) -> None:
        self.path = path
        self.window_s = window_s
        started = _utc_now()
        self.guard_id = f"{started}-pid{os.getpid()}-{id(self) & 0xFFFF:04x}"
        self._lock = threading.Lock()
        self._reset(started)
        candidate, reference = report.candidate, report.reference
        assert report.envelope is not None
        self._write(
            GuardRecord(
                guard=self.guard_id,
                started_utc=started,
                envelope=report.envelope,
                candidate_path=candidate.path if candidate else None,
                candidate_sha256=candidate.sha256 if candidate else None,
                reference_path=reference.path if reference else None,
                values=value_coverage(report),
            ).model_dump_json(by_alias=True)
        )
        finalizer = weakref.WeakMethod(self.flush)
        atexit.register(lambda: (finalizer() or (lambda: None))())

    def count(self, key: Hashable | None, args: Sequence[Any], inside: bool) -> None:
        """Count one call (``key``: the guard's routing key; None when the call's arguments
        cannot be described, or it had keyword arguments)."""
        with self._lock:
            entry = self._seen.get(key)
            if entry is None:
                signature = CallSignature.of(args) if key is not None else None
                entry = self._seen[key] = [signature, 0, inside]
            entry[1] += 1
            self._calls += 1
        if time.monotonic() >= self._deadline:
            self.flush()

    def observe(self, args: Sequence[Any]) -> None:
        """Add one sampled call's value statistics."""
        stats = value_stats(args)
        if stats is None:
            return
        with self._lock:
            self._values.merge(stats)

    def flush(self) -> None:
        """Write the current window (when it saw a call) and start the next."""
        with self._lock:
            seen, calls, values, start = self._seen, self._calls, self._values, self._start
            self._reset(_utc_now())
        if not calls:
            return
        record = WindowRecord(
            guard=self.guard_id,
            start_utc=start,
            end_utc=_utc_now(),
            calls=calls,
            signatures=[
                SignatureCount(signature=s, calls=n, inside=inside)
                for s, n, inside in seen.values()
            ],
            values=values,
        )
        self._write(record.model_dump_json(by_alias=True))

    def _reset(self, start: str) -> None:
        self._seen: dict[Hashable | None, list[Any]] = {}
        self._calls = 0
        self._values = ValueStats()
        self._start = start
        self._deadline = time.monotonic() + self.window_s

    def _write(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as log:  # one write per line: appends
            log.write(line + "\n")  # from several guards interleave


def value_coverage(report: Report) -> ValueCoverage:
    """Which unusual values the report's matrix passed (None: not tried)."""
    outcomes: dict[str, bool] = {}
    for test in report.correctness.tests if report.correctness else []:
        name = test.variant.name
        outcomes[name] = outcomes.get(name, True) and test.outcome.value == "passed"
    return ValueCoverage(
        **{field: outcomes.get(variant) for field, variant in COVERING_VARIANTS.items()}
    )


def value_stats(args: Sequence[Any]) -> ValueStats | None:
    """One call's value statistics over its floating-point tensor arguments (None when it has
    none)."""
    tensors = [
        a.detach()
        for a in args
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel()
    ]
    if not tensors:
        return None
    stats = ValueStats(sampled=1)
    largest = 0.0
    for tensor in tensors:
        info = torch.finfo(tensor.dtype)
        finite = torch.isfinite(tensor)
        if not bool(finite.all()):
            stats.non_finite = 1
        magnitude = torch.where(finite, tensor, torch.zeros_like(tensor)).abs()
        top = float(magnitude.max())
        largest = max(largest, top)
        if top > math.sqrt(info.max):
            stats.huge = 1
        if bool(((magnitude > 0) & (magnitude < info.tiny)).any()):
            stats.subnormal = 1
    decade = "zero" if largest == 0 else str(math.floor(math.log10(largest)))
    stats.magnitude_decades[decade] = 1
    return stats


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")
