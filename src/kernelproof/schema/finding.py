"""A finding: one piece of evidence about the candidate, with the weight it carries."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field

from kernelproof.schema.checks import EvidenceBasis, FindingCheck, evidence_basis
from kernelproof.schema.verdict import Severity, Verdict


class SourceLocation(BaseModel):
    """Where in a source file a finding points (for static evidence and CI annotations)."""

    model_config = ConfigDict(frozen=True)

    path: str
    """The file as given on the command line."""

    line: int
    """1-based line number."""

    column: int = 0
    """0-based column (0 when only the line is known)."""


class Finding(BaseModel):
    """One observation about the candidate, with the evidence behind it."""

    model_config = ConfigDict(frozen=True)

    check: FindingCheck
    """Stable identifier of the check that produced it, e.g. ``input-mutation`` or ``crash``.
    A closed list (:class:`FindingCheck`): an unknown id fails validation."""

    severity: Severity
    """How much weight the finding carries (``fail``, ``suspect``, ``warn``, ``info``)."""

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
    """Where in the candidate's source it points (static evidence only)."""

    @computed_field  # type: ignore[prop-decorator]  # pydantic's form; mypy wants @property alone
    @property
    def basis(self) -> EvidenceBasis:
        """What the finding rests on: ``outside`` the candidate's process (unforgeable),
        the ``candidate``'s own reports (cross-checked evidence), or its ``static`` source."""
        return evidence_basis(self.check)
