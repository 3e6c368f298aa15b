"""How a verification becomes a reward: conservative by construction.

* 0 for anything not ``verified``: ``incorrect``, ``suspect``, ``broken``, ``error``, a
  completion with no candidate, a candidate cut by the batch's deadline.
* For a verified candidate, the speedup's lower confidence bound
  (:func:`kernelproof.api.reward`): noise cannot be farmed, and an unmeasured speed is 0.
  ``mode="correctness"`` gives 1.0 instead (no timing needed).
* An optional ``format`` component (off by default): ``format_weight`` for a completion
  from which a candidate could be taken (one closed, parseable block defining the entry
  point), whatever its verdict, except ``suspect``: a hack earns nothing, not even format.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema import Report, Verdict

__all__ = ["RewardShaping"]


class RewardShaping(BaseModel):
    """The reward of one scored completion; every field is documented in the module."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["speedup", "correctness"] = "speedup"
    """``speedup``: the speedup's lower confidence bound when verified; ``correctness``: 1.0
    when verified (the scorer then skips timing)."""

    format_weight: float = Field(default=0.0, ge=0.0)
    """Added when a candidate could be taken from the completion and its verdict is not
    ``suspect``. Keep it small next to a verified kernel's reward (about 1)."""

    cap: float | None = Field(default=None, gt=0.0)
    """Largest verification term (a speedup beyond it counts as ``cap``); None: no cap."""

    def reward(self, report: Report | None, *, extracted: bool) -> float:
        """The reward for a completion: ``report`` is None when nothing was verified (no
        candidate, the deadline)."""
        from kernelproof.api import reward as speedup_reward

        term = 0.0
        if report is not None and report.verdict is Verdict.VERIFIED:
            term = 1.0 if self.mode == "correctness" else speedup_reward(report)
            if not math.isfinite(term):
                term = 0.0
            if self.cap is not None:
                term = min(term, self.cap)
        suspect = report is not None and report.verdict is Verdict.SUSPECT
        bonus = self.format_weight if extracted and not suspect else 0.0
        return float(term + bonus)

    def settings(self) -> dict[str, bool]:
        """Settings the verification needs for this shaping (no timing for correctness)."""
        return {"timing": False} if self.mode == "correctness" else {}
