"""The controller's clock against the worker's: does the worker's accounting fill the batch?"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kernelproof.errors import UsageError

#: An honest worker's timed calls fill most of the batch (the rest is IPC, fresh inputs and
#: cache flushes), so the ratio sits near 1. A tenth leaves a 10x margin for scheduler noise
#: and that overhead; only work moved outside the timed window (side threads, deferred work, a
#: patched clock) falls that low.
IMPLAUSIBLY_FAST_RATIO = 0.1

#: Below 50 ms of wall time, process wake-ups, IPC latency and timer granularity (milliseconds on
#: a loaded machine) dominate the batch, so a low ratio says nothing about the worker.
MIN_CROSS_CHECK_WALL_S = 0.05


def controller_cross_check(reported_s: Sequence[float], wall_s: float) -> float:
    """The share of the controller's wall time around a batch that the worker says it timed.

    Returns ``sum(reported_s) / wall_s``.

    ``wall_s`` is the controller's own clock from sending the batch to receiving its results;
    the candidate cannot touch it. An honest worker gives a ratio near 1, a little below
    because of untimed work (IPC, fresh inputs, cache flushes). A worker whose calls run work outside the
    timed window (a side thread, deferred launches) or whose clock was patched reports times whose
    sum is far below the wall: see :func:`implausibly_fast`.

    The worker's times are untrusted and are not validated as errors: if any is negative or not
    finite, the result is NaN, which :func:`implausibly_fast` treats as implausible. The
    controller's own ``wall_s`` must be sane; a bad one raises
    :class:`~kernelproof.errors.UsageError`.
    """
    if not (math.isfinite(wall_s) and wall_s > 0):
        raise UsageError(
            f"wall_s={wall_s!r} must be the positive, finite batch wall time in seconds"
        )
    reported = np.asarray(reported_s, dtype=np.float64)
    if reported.ndim != 1 or reported.size == 0:
        raise UsageError(
            f"reported_s must be a non-empty flat sequence of per-call seconds; got shape "
            f"{reported.shape}"
        )
    if not np.all(np.isfinite(reported) & (reported >= 0)):
        return math.nan
    return float(reported.sum()) / wall_s


def implausibly_fast(ratio: float, wall_s: float | None = None) -> bool:
    """Whether a :func:`controller_cross_check` ratio means the worker under-reports its time.

    True when ``ratio`` is below :data:`IMPLAUSIBLY_FAST_RATIO`, or is NaN (the worker's times were
    nonsense). Pass the batch's ``wall_s`` so that batches shorter than
    :data:`MIN_CROSS_CHECK_WALL_S`, where fixed overheads swamp the calls, are never flagged for
    a low ratio; without it the caller vouches that the batch was long enough.
    """
    if math.isnan(ratio):
        return True
    if wall_s is not None and wall_s < MIN_CROSS_CHECK_WALL_S:
        return False
    return ratio < IMPLAUSIBLY_FAST_RATIO
