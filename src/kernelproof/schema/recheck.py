"""``kernelproof recheck``: which verdicts an environment change invalidated, and what
re-verifying them gave.

One :class:`RecheckItem` per verdict considered (a report file, or a task slot of the results
store), with the environment difference that decided it (:mod:`~kernelproof.schema.environment_rule`),
the verdict and speedup before and after, and how they changed. A re-proved report carries a
:class:`RecheckOrigin` naming what it re-proves. Pure pydantic.
"""

from __future__ import annotations

from collections import Counter
from enum import Enum, IntEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.environment_rule import ComponentChange, EnvironmentDiff
from kernelproof.schema.interval import SpeedupInterval
from kernelproof.schema.verdict import Verdict

RECHECK_SCHEMA: Final = "kernelproof.recheck/1"


class VerdictSnapshot(BaseModel):
    """A verdict and its speed, as one side of a recheck shows them."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    """The verdict."""

    speedup: float | None = None
    """The speedup at the default shape (None when not timed)."""

    speedup_ci: SpeedupInterval | None = None
    """Its 95% interval, when finite."""

    sol_fraction: float | None = None
    """The candidate's fraction of the speed of light, when timed."""

    where: str
    """The report file, or ``verification N (run R)`` of a store."""

    environment: str = ""
    """The digest of its binding environment."""


class RecheckOrigin(BaseModel):
    """On a report ``kernelproof recheck`` produced: the verdict it re-proves, and why."""

    model_config = ConfigDict(frozen=True)

    original: VerdictSnapshot
    """The proof that was invalidated: its verdict, speed and where it is kept."""

    invalidated_by: list[ComponentChange] = Field(default_factory=list)
    """The environment differences that invalidated it."""

    rechecked_utc: str = ""
    """When it was re-proved, ISO 8601 in UTC."""


class RecheckExitCode(IntEnum):
    """Exit status of ``kernelproof recheck``; ``ERROR`` matches ``verify``'s 4."""

    HOLDS = 0
    """No verified kernel lost its verdict."""

    LOST_VERIFIED = 1
    """A kernel verified before the environment changed is not verified in this one."""

    ERROR = 4
    """Bad input (a store or folder that cannot be read), or an invalidated verdict that could
    not be re-verified (its source is gone): a message says which."""


class RecheckStatus(str, Enum):
    """What ``recheck`` did with one verdict."""

    STILL_VALID = "still-valid"
    """No invalidating difference: the verdict stands (annotations are shown)."""

    REVERIFIED = "reverified"
    """Invalidated, and re-verified by this run."""

    REVERIFIED_EARLIER = "reverified-earlier"
    """Invalidated, and already re-verified in this environment by an earlier (perhaps
    interrupted) recheck: its result is reported, not redone."""

    PENDING = "pending"
    """Invalidated and not re-verified: ``--dry-run``, or an interruption came first."""

    FAILED = "failed"
    """Invalidated, and could not be re-verified (the source file is gone or unreadable)."""


class VerdictChange(str, Enum):
    """The re-proved verdict against the invalidated one."""

    UNCHANGED = "unchanged"
    """The same verdict."""

    LOST_VERIFIED = "lost-verified"
    """Verified before, not verified now: the exit code is 1."""

    GAINED_VERIFIED = "gained-verified"
    """Not verified before, verified now."""

    CHANGED = "changed"
    """Another non-verified verdict (incorrect -> broken)."""


class SpeedChange(str, Enum):
    """The re-proved speedup against the invalidated one, judged by their intervals."""

    FASTER = "faster"
    """The new interval lies wholly above the old one."""

    SLOWER = "slower"
    """The new interval lies wholly below the old one."""

    WITHIN = "within-intervals"
    """The intervals overlap: no change beyond the noise."""

    NOT_TIMED = "not-timed"
    """One side has no speedup with an interval."""


class RecheckItem(BaseModel):
    """One verdict: what invalidated it (or not), and what re-proving gave."""

    key: str
    """The report file, or the store's ``task_key#sample``."""

    candidate: str | None = None
    """The candidate file as recorded."""

    task: str | None = None
    """The task file as recorded."""

    status: RecheckStatus
    """What recheck did with it."""

    diff: EnvironmentDiff
    """The proved environment (of ``before``) against this one."""

    before: VerdictSnapshot
    """The verdict the last proof gave (before this environment)."""

    after: VerdictSnapshot | None = None
    """The re-proved verdict (reverified and reverified-earlier only)."""

    verdict_change: VerdictChange | None = None
    """How the verdict moved (re-proved items only)."""

    speed_change: SpeedChange | None = None
    """How the speedup moved, judged by the intervals."""

    message: str = ""
    """Why it failed, or a note."""


class RecheckReport(BaseModel):
    """The change report of one ``kernelproof recheck``."""

    schema_: Literal["kernelproof.recheck/1"] = Field(default=RECHECK_SCHEMA, alias="schema")
    """The schema version, ``kernelproof.recheck/1`` (serialised as ``schema``)."""

    source: str
    """The results store's URL (password hidden) or the report folder."""

    environment: dict[str, str] = Field(default_factory=dict)
    """This machine's components (the software and hardware part of the fingerprint)."""

    everything: bool = False
    """``--all``: annotating differences were treated as invalidating."""

    dry_run: bool = False
    """``--dry-run``: nothing was verified."""

    interrupted: bool = False
    """Stopped early: pending items were not reached (run it again to resume)."""

    started_utc: str = ""
    """ISO 8601, UTC."""

    finished_utc: str = ""
    """ISO 8601, UTC."""

    items: list[RecheckItem] = Field(default_factory=list)
    """One per verdict considered, in the order of the source."""

    skipped: list[str] = Field(default_factory=list)
    """Files of the folder that are not kernelproof reports (each with why)."""

    model_config = ConfigDict(populate_by_name=True)

    @property
    def counts(self) -> dict[str, int]:
        """Items per status and per verdict change."""
        counts = Counter(item.status.value for item in self.items)
        counts.update(item.verdict_change.value for item in self.items if item.verdict_change)
        return dict(counts)

    @property
    def lost_verified(self) -> list[RecheckItem]:
        return [i for i in self.items if i.verdict_change is VerdictChange.LOST_VERIFIED]

    @property
    def failed(self) -> list[RecheckItem]:
        return [i for i in self.items if i.status is RecheckStatus.FAILED]

    @property
    def exit_code(self) -> RecheckExitCode:
        """1 when a verified kernel lost its verdict, else 4 when a verdict could not be
        re-verified, else 0."""
        if self.lost_verified:
            return RecheckExitCode.LOST_VERIFIED
        return RecheckExitCode.ERROR if self.failed else RecheckExitCode.HOLDS

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)
