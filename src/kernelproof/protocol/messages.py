"""Outcome records that cross the process boundary as values (never as exceptions)."""

from __future__ import annotations

import traceback
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Phase(str, Enum):
    """Where in a worker's life an outcome happened."""

    START = "start"
    BUILD = "build"
    """Importing the candidate (including any C++/numba/Triton compilation it does at import)."""

    PREPARE = "prepare"
    """Rendering the task at some knobs and constructing the model."""

    CALL = "call"
    COMPARE = "compare"


class CapturedError(BaseModel):
    """An exception captured in a worker, reduced to text."""

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    traceback: str = ""

    @classmethod
    def from_exception(cls, exc: BaseException, *, limit: int = 4000) -> CapturedError:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(
            type=type(exc).__name__, message=head_and_tail(str(exc), limit), traceback=text[-limit:]
        )

    @property
    def is_out_of_memory(self) -> bool:
        lowered = self.message.lower()
        return (
            self.type == "MemoryError"
            or "out of memory" in lowered
            or ("can't allocate memory" in lowered)
        )


class WorkerReply(BaseModel):
    """What a worker answers to one request: data on success, the captured error otherwise."""

    ok: bool
    phase: Phase
    duration_s: float = 0.0
    error: CapturedError | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    observations: list[dict[str, Any]] = Field(default_factory=list)
    """Probe results from the worker (checked further by the controller)."""


def head_and_tail(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, keeping its start and its end: a build error
    opens with the compiler's long command line and ends with what went wrong."""
    if len(text) <= limit:
        return text
    marker = " [...] "
    head = (limit - len(marker)) // 3
    return text[:head] + marker + text[len(text) - (limit - len(marker) - head) :]
