"""Shrinking a soak's drift to a small repro: the smallest host knobs at which the candidate
still drifts beyond tolerance by the run's first drifting step, and the fewest steps that show
it (the first drifting step at those knobs, plus one).

Knob values come from the matrix's shrinker (:func:`kernelproof.controller.repro.smaller_values`).
Every trial is a fresh soak that stops at its first drifting step,
so it is bounded in tries and seconds like the matrix's shrinking.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kernelproof.controller.repro import smaller_values
from kernelproof.schema.e2e import DriftRepro

#: Trial soaks per drift, and the wall-clock cap on them all: each trial starts a worker pair
#: and runs up to the soak's length.
MAX_DRIFT_SHRINK_TRIES = 20
MAX_DRIFT_SHRINK_S = 90.0

#: What a trial returns when the host (or its loop) rejects the knobs: not evidence that the
#: drift needs a larger value, so the next smaller one is still tried.
REJECTED = -1

#: ``first_drift(knobs, steps)``: a trial soak of at most ``steps`` steps at the host's
#: ``knobs``; the first step beyond tolerance, None when it holds, :data:`REJECTED` when the
#: soak could not run a step.
FirstDrift = Callable[[dict[str, int], int], "int | None"]


def shrink_drift(first_drift: FirstDrift, knobs: dict[str, int], first_step: int) -> DriftRepro:
    """The smallest knobs and the fewest steps at them. Each knob, largest first, steps down
    through the shrinker's smaller values (largest first) while the soak still drifts, and
    keeps the last value that did: a drift that needs a size usually needs every size above
    it too, so the first value that holds ends the knob's search. A trial must drift no later
    than the current repro, so neither the knobs nor the steps ever grow (and a trial runs no
    further than that)."""
    started, tries = time.monotonic(), 0
    current, first = dict(knobs), first_step
    for name in sorted(current, key=lambda k: -current[k]):
        for value in sorted(smaller_values(current[name]), reverse=True):
            if tries >= MAX_DRIFT_SHRINK_TRIES or time.monotonic() - started > MAX_DRIFT_SHRINK_S:
                break
            tries += 1
            found = first_drift({**current, name: value}, first + 1)
            if found == REJECTED:
                continue
            if found is None:
                break
            current, first = {**current, name: value}, found
    return DriftRepro(
        knobs=current,
        steps=first + 1,
        tries=tries,
        shrunk=current != knobs or first < first_step,
        seconds=time.monotonic() - started,
    )
