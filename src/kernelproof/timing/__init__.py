"""Timing: how per-call times are summarised, compared and trusted. Statistics are pure numpy.

- ``noise``: the report's summary of one side's samples and the signs of an unstable machine;
- ``bootstrap``: the speedup's confidence interval over interleaved rounds;
- ``stopping``: when the timing loop stops;
- ``cross_check``: the controller's clock against the worker's.
"""

from kernelproof.timing.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    SpeedupEstimate,
    round_speedup_interval,
)
from kernelproof.timing.cross_check import (
    IMPLAUSIBLY_FAST_RATIO,
    MIN_CROSS_CHECK_WALL_S,
    controller_cross_check,
    implausibly_fast,
)
from kernelproof.timing.noise import noise_diagnostic, summarize
from kernelproof.timing.stopping import (
    DEFAULT_BUDGET_S,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_MIN_ROUNDS,
    DEFAULT_TARGET_HALF_WIDTH,
    STOP_BUDGET,
    STOP_CONTINUE,
    STOP_CONVERGED,
    STOP_MAX_ROUNDS,
    STOP_REASONS,
    StopDecision,
    StoppingRule,
)

__all__ = [
    "DEFAULT_BUDGET_S",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_MIN_ROUNDS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_TARGET_HALF_WIDTH",
    "IMPLAUSIBLY_FAST_RATIO",
    "MIN_CROSS_CHECK_WALL_S",
    "STOP_BUDGET",
    "STOP_CONTINUE",
    "STOP_CONVERGED",
    "STOP_MAX_ROUNDS",
    "STOP_REASONS",
    "SpeedupEstimate",
    "StopDecision",
    "StoppingRule",
    "controller_cross_check",
    "implausibly_fast",
    "noise_diagnostic",
    "round_speedup_interval",
    "summarize",
]
