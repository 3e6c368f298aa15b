"""The clock of a verification's stages: which stage runs, how long each took, and the
verdict its findings implied when it ended (``report.pipeline``)."""

from __future__ import annotations

import time

from kernelproof.schema import Stage, StageRecord, Verdict


class StageClock:
    """Records stages as a verification enters them; one instance per verification."""

    def __init__(self) -> None:
        self.records: list[StageRecord] = []
        self.current: Stage | None = None
        self._since = time.monotonic()

    def ran(self, stage: Stage, duration_s: float, verdict: Verdict) -> None:
        """A stage that ran before this clock could time it (loading, the static scan)."""
        self.records.append(
            StageRecord(stage=stage, duration_s=max(0.0, duration_s), verdict=verdict)
        )
        self._since = time.monotonic()

    def enter(self, stage: Stage, verdict_so_far: Verdict) -> None:
        """End the current stage with the verdict its findings imply, and start ``stage``."""
        self.end(verdict_so_far)
        self.current = stage
        self._since = time.monotonic()

    def end(self, verdict: Verdict) -> None:
        """End the current stage (if any) with ``verdict``."""
        if self.current is not None:
            self.records.append(
                StageRecord(
                    stage=self.current, duration_s=time.monotonic() - self._since, verdict=verdict
                )
            )
            self.current = None

    def relabel(self, stage: Stage) -> None:
        """The running stage turned out to be ``stage`` (a constructor that fails while the
        first input is being prepared belongs to the build)."""
        if self.current is not None:
            self.current = stage

    def last_stage_value(self) -> str:
        """The name of the running stage, or of the last one recorded."""
        if self.current is not None:
            return self.current.value
        return self.records[-1].stage.value if self.records else Stage.LOAD.value
