"""A finding: one piece of evidence about the candidate, with the weight it carries."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.verdict import Severity, Verdict


class SourceLocation(BaseModel):
    """Where in a source file a finding points (for static evidence and CI annotations)."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    column: int = 0


class Finding(BaseModel):
    """One observation about the candidate, with the evidence behind it."""

    model_config = ConfigDict(frozen=True)

    check: str
    """Stable identifier of the check that produced it, e.g. ``input-mutation`` or ``crash``."""

    severity: Severity
    message: str
    """One or two plain sentences a reviewer can act on."""

    evidence: dict[str, Any] = Field(default_factory=dict)
    """JSON-serialisable facts behind the message (values, counts, variant names)."""

    forces: Verdict | None = None
    """The verdict this finding forces at least (``broken`` for a crash, ``incorrect`` for a
    wrong answer). ``None`` lets the severity decide: ``suspect`` forces ``suspect``."""

    variant: str | None = None
    """Name of the correctness variant it was observed on, when it has one."""

    location: SourceLocation | None = None
