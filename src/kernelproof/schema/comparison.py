"""Run B of a suite against run A: per-task changes and the exit status a CI gate reads."""

from __future__ import annotations

from enum import Enum, IntEnum

from pydantic import BaseModel, ConfigDict

from kernelproof.schema.verdict import Verdict


class CompareExitCode(IntEnum):
    """Process exit status of ``kernelproof compare``. ``ERROR`` matches ``verify``'s 4."""

    SAME_OR_BETTER = 0
    """No task regressed."""

    REGRESSION = 1
    """Some task lost its ``verified`` verdict or became slower beyond both CIs."""

    ERROR = 4
    """A run id or the store is at fault: a clear message says what to fix."""


class ChangeKind(str, Enum):
    """How one task changed from run A to run B."""

    LOST_VERIFIED = "lost-verified"
    """Verified in A, not verified in B: a regression."""

    SLOWER = "slower"
    """Verified in both, and B's CI lies wholly below A's (B high < A low): a regression."""

    GAINED_VERIFIED = "gained-verified"
    """Not verified in A, verified in B."""

    FASTER = "faster"
    """Verified in both, and B's CI lies wholly above A's (B low > A high)."""

    UNCHANGED = "unchanged"
    """No verdict gained or lost, and no speedup change beyond the CIs."""

    ONLY_A = "only-a"
    """The task has no result in B (not counted as a regression)."""

    ONLY_B = "only-b"
    """The task has no result in A."""

    @property
    def is_regression(self) -> bool:
        """True for :attr:`LOST_VERIFIED` and :attr:`SLOWER`."""
        return self in (ChangeKind.LOST_VERIFIED, ChangeKind.SLOWER)


class TaskChange(BaseModel):
    """One task in both runs (its best sample in each) and how it changed."""

    model_config = ConfigDict(frozen=True)

    task_key: str
    """The task's key within the suite."""

    verdict_a: Verdict | None
    """The best sample's verdict in run A (``None`` when absent)."""

    verdict_b: Verdict | None
    """The best sample's verdict in run B."""

    speedup_a: float | None
    """The best sample's speedup in run A."""

    speedup_b: float | None
    """The best sample's speedup in run B."""

    ci_a: tuple[float, float] | None
    """Confidence interval of :attr:`speedup_a`."""

    ci_b: tuple[float, float] | None
    """Confidence interval of :attr:`speedup_b`."""

    ratio: float | None
    """``speedup_b / speedup_a`` when both are known."""

    kind: ChangeKind
    """How the task changed."""


class RunComparison(BaseModel):
    """Run B against run A, per task, with the counts a CI gate needs."""

    model_config = ConfigDict(frozen=True)

    changes: list[TaskChange]
    """One change per task present in either run, sorted by task key."""

    counts: dict[str, int]
    """Tasks per :class:`ChangeKind` value, every kind present."""

    geomean_a: float | None
    """Geometric-mean speedup of run A."""

    geomean_b: float | None
    """Geometric-mean speedup of run B."""

    @property
    def regressions(self) -> list[TaskChange]:
        """The changes that are regressions."""
        return [c for c in self.changes if c.kind.is_regression]

    @property
    def exit_code(self) -> CompareExitCode:
        """``REGRESSION`` when any task regressed, else ``SAME_OR_BETTER``."""
        return CompareExitCode.REGRESSION if self.regressions else CompareExitCode.SAME_OR_BETTER
