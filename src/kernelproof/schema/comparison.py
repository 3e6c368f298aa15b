"""Run B of a suite against run A: per-task changes and the exit status a CI gate reads."""

from __future__ import annotations

from enum import Enum, IntEnum

from pydantic import BaseModel, ConfigDict

from kernelproof.schema.interval import SpeedupInterval
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

    ci_a: SpeedupInterval | None
    """Confidence interval of :attr:`speedup_a`."""

    ci_b: SpeedupInterval | None
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


class MachineRow(BaseModel):
    """One proof of a candidate on one machine (or environment)."""

    model_config = ConfigDict(frozen=True)

    where: str
    """The report file, or ``verification N (run R)`` of a store."""

    machine: str
    """The hardware in words: the CPU model and architecture, or the GPU."""

    environment: str
    """The digest of the environment the verdict is bound to."""

    verdict: Verdict
    """The verdict there."""

    speedup: float | None = None
    """The speedup at the default shape (None when not timed)."""

    speedup_ci: SpeedupInterval | None = None
    """Its 95% interval (None when it has none)."""

    sol_fraction: float | None = None
    """The candidate's fraction of the speed of light."""


class CandidateAcrossMachines(BaseModel):
    """One candidate (against one task) verified in several environments, side by side."""

    model_config = ConfigDict(frozen=True)

    candidate: str
    """The candidate's file as the first report names it."""

    candidate_sha256: str
    """The candidate's source hash, shared by every row."""

    task: str
    """The task file as the first report names it."""

    rows: list[MachineRow]
    """One per report, in the order given."""

    components: dict[str, list[str | None]]
    """Every fingerprint component that differs between the rows: its value per row."""

    effects: dict[str, str]
    """Per differing component, its effect between the first row and the others
    (``invalidates`` when any pair's difference invalidates, else ``annotates``)."""

    flags: list[str]
    """``verified on A, not on B``; ``faster than the reference on A, slower on B``."""


class MachineComparison(BaseModel):
    """``kernelproof compare`` on reports (or store rows) of the same candidates on several
    machines: one group per candidate."""

    model_config = ConfigDict(frozen=True)

    groups: list[CandidateAcrossMachines]
    """One per candidate (and task) proved in two or more environments."""

    alone: list[str] = []
    """Reports whose candidate no other report shares (nothing to compare them with)."""

    @property
    def exit_code(self) -> CompareExitCode:
        """``REGRESSION`` (1) when a candidate is verified on one machine and not another, or
        fast on one and slow on another; else 0."""
        return (
            CompareExitCode.REGRESSION
            if any(g.flags for g in self.groups)
            else CompareExitCode.SAME_OR_BETTER
        )
