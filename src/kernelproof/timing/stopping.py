"""When the timing loop stops: on the speedup's confidence interval, within a time budget."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelproof.config import Settings
from kernelproof.errors import UsageError
from kernelproof.timing.bootstrap import SpeedupEstimate

# The defaults are the verification's own (Settings), declared once there: a rule built here
# without arguments stops exactly as a verification does.

#: A speedup known to +-2% tells a 5% gain, about the smallest worth shipping, from none.
DEFAULT_TARGET_HALF_WIDTH: float = Settings.model_fields["target_ci"].default

#: Rounds before trusting any interval (Settings.min_rounds).
DEFAULT_MIN_ROUNDS: int = Settings.model_fields["min_rounds"].default

#: Rounds at most (Settings.max_rounds).
DEFAULT_MAX_ROUNDS: int = Settings.model_fields["max_rounds"].default

#: The whole timing phase's budget (Settings.budget_s).
DEFAULT_BUDGET_S: float = Settings.model_fields["budget_s"].default


#: Reasons a :class:`StopDecision` can give. The empty string means "keep measuring".
STOP_CONVERGED = "converged"
STOP_BUDGET = "budget"
STOP_MAX_ROUNDS = "max-rounds"
STOP_CONTINUE = ""
STOP_REASONS = frozenset({STOP_CONVERGED, STOP_BUDGET, STOP_MAX_ROUNDS, STOP_CONTINUE})


@dataclass(frozen=True)
class StopDecision:
    """Whether the timing loop should stop after this round, and why."""

    stop: bool
    reason: str
    """One of :data:`STOP_CONVERGED`, :data:`STOP_BUDGET`, :data:`STOP_MAX_ROUNDS`, or
    :data:`STOP_CONTINUE` (the empty string) while measuring goes on."""

    detail: str = ""
    """A plain sentence with the numbers behind the decision, for logs and the report."""


@dataclass(frozen=True)
class StoppingRule:
    """Adaptive stopping on the speedup's confidence interval, within a time and round budget.

    Measuring stops at the first of:

    1. **converged**: at least ``min_rounds`` rounds, and the interval's relative half-width is at
       most ``target_half_width``;
    2. **max-rounds**: ``max_rounds`` rounds done;
    3. **budget**: ``budget_s`` seconds spent. The budget overrides ``min_rounds``: a kernel
       too slow for ten rounds in the budget still ends, and the reason tells the reviewer why
       the interval is wide. With ``grace_rounds``, it waits until that many rounds are done
       (an interval needs them), up to twice the budget: a shape given a thin slice of a shared
       budget otherwise ended with no interval at all ([0, inf]; 8 of 10 shapes of a softmax
       under load).

    Convergence is checked first, so a run that converges on its last allowed round says so.
    """

    target_half_width: float = DEFAULT_TARGET_HALF_WIDTH
    """Stop once (high - low) / 2 / speedup is at most this."""

    min_rounds: int = DEFAULT_MIN_ROUNDS
    max_rounds: int = DEFAULT_MAX_ROUNDS
    budget_s: float = DEFAULT_BUDGET_S
    """Seconds of measuring allowed, from the first round."""

    grace_rounds: int = 0
    """Rounds the budget waits for, up to twice itself (0: the budget is a hard limit)."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.target_half_width) and self.target_half_width > 0):
            raise UsageError(
                f"target_half_width={self.target_half_width!r} must be a positive relative "
                f"half-width, e.g. {DEFAULT_TARGET_HALF_WIDTH} for +-2%"
            )
        if self.min_rounds < 1:
            raise UsageError(f"min_rounds={self.min_rounds!r} must be at least 1")
        if self.max_rounds < self.min_rounds:
            raise UsageError(
                f"max_rounds={self.max_rounds!r} is below min_rounds={self.min_rounds!r}: raise "
                "max_rounds or lower min_rounds"
            )
        if not (self.budget_s > 0):
            raise UsageError(f"budget_s={self.budget_s!r} must be a positive number of seconds")

    def decide(
        self, estimate: SpeedupEstimate | None, rounds: int, elapsed_s: float
    ) -> StopDecision:
        """Whether to stop after ``rounds`` rounds and ``elapsed_s`` seconds.

        ``estimate`` is the latest interval, or None when none has been computed yet (the loop
        may skip the bootstrap until ``min_rounds``).
        """
        if (
            estimate is not None
            and rounds >= self.min_rounds
            and estimate.half_width_rel <= self.target_half_width
        ):
            return StopDecision(
                True,
                STOP_CONVERGED,
                f"speedup {estimate.speedup:.3g}x known to +-{estimate.half_width_rel:.1%} "
                f"(target +-{self.target_half_width:.1%}) after {rounds} rounds",
            )
        if rounds >= self.max_rounds:
            return StopDecision(
                True, STOP_MAX_ROUNDS, f"{rounds} rounds reached the limit of {self.max_rounds}"
            )
        if elapsed_s >= self.budget_s and (
            rounds >= self.grace_rounds or elapsed_s >= 2 * self.budget_s
        ):
            return StopDecision(
                True,
                STOP_BUDGET,
                f"{elapsed_s:.3g} s spent of a {self.budget_s:.3g} s budget after {rounds} rounds",
            )
        return StopDecision(False, STOP_CONTINUE)
