"""A guard incident rerun through ``verify``: the report's files at the call's knobs, with the
call's saved inputs as one more cell (``kernelproof guard replay``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelproof.controller.verify import verify
from kernelproof.errors import UsageError
from kernelproof.schema import Report
from kernelproof.schema.incident import Incident

__all__ = ["replay"]


def replay(folder: Path, incident: Incident) -> Report:
    """Rerun the incident through ``verify``: the report's candidate and reference files at the
    call's knobs, with the saved inputs as one more cell. Raises :class:`UsageError` when the
    incident cannot be replayed (written without a folder, or the report names no files)."""
    refusal = incident.replay_refusal()
    if refusal is not None or incident.reference_path is None or incident.candidate_path is None:
        raise UsageError(refusal or f"incident {incident.id} names no files to replay")
    settings: dict[str, Any] = {
        **incident.replay_settings,
        # The folder may have moved since it was written: read the inputs from it.
        "inputs_file": str(folder / incident.inputs_file),
    }
    return verify(incident.reference_path, incident.candidate_path, **settings)
