"""Writing, reading and replaying the guard's incidents.

Each incident is a folder under the guard's ``incident_dir``: ``incident.json`` (an
:class:`~kernelproof.schema.incident.Incident`), the call's inputs as saved before the
candidate ran (``inputs.pt``) and both outputs, written by
:func:`kernelproof.tasks.saved_inputs.save_arguments` (they load with
``torch.load(weights_only=True)``: reading an incident never unpickles code).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelproof.config import Settings
from kernelproof.errors import UsageError
from kernelproof.report.commands import settings_command
from kernelproof.schema.incident import INCIDENT_FILE, Incident
from kernelproof.schema.report import Report


def new_incident_folder(directory: Path, call_index: int | None) -> Path:
    """A fresh folder for one incident, named so that a listing sorts by time (``None``: an
    incident of the guard's start-up, named ``environment``)."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    what = "environment" if call_index is None else f"call{call_index:08d}"
    base = f"{stamp}-{what}-pid{os.getpid()}"
    for attempt in range(1000):
        folder = directory / (base if attempt == 0 else f"{base}-{attempt}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise UsageError(f"cannot make a new incident folder in {directory}: 1000 names are taken")


def replay_settings(report: Report, knobs: dict[str, int], inputs: Path) -> dict[str, Any]:
    """The verify settings that rerun the candidate on saved inputs at these knobs: the
    report's own (same judging, same base seed, so the same initial weights), the matrix cut
    down to the default shape's seeds and the saved cell, untimed and unshrunk."""
    settings = {k: v for k, v in report.settings.items() if k in Settings.model_fields}
    base_seed = report.correctness.base_seed if report.correctness else settings.get("base_seed")
    settings.update(
        default_knobs=dict(knobs),
        inputs_file=str(inputs),
        timing=False,
        shrink=False,
        input_seeds=None,
        base_seed=base_seed,
    )
    return settings


def replay_command(report: Report, settings: dict[str, Any]) -> str | None:
    """The ``kernelproof verify`` command for :func:`replay_settings`; None when the report
    names no files."""
    if report.reference is None or report.candidate is None:
        return None
    return settings_command(
        report.reference.path, report.candidate.path, settings.get("base_seed"), settings
    ).text


def write_incident(incident: Incident, folder: Path) -> Path:
    path = folder / INCIDENT_FILE
    path.write_text(incident.to_json() + "\n", encoding="utf-8")
    return path


def read_incidents(directory: str | Path) -> list[tuple[Path, Incident]]:
    """Every incident under ``directory``, oldest first, with its folder. Raises
    :class:`UsageError` when the directory does not exist or an incident file is damaged."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UsageError(f"{directory} is not a directory; pass the guard's incident_dir")
    found = []
    for path in sorted(directory.glob(f"*/{INCIDENT_FILE}")):
        try:
            found.append((path.parent, Incident.model_validate_json(path.read_text("utf-8"))))
        except (OSError, ValidationError) as exc:
            raise UsageError(
                f"{path} is not a kernelproof incident ({str(exc)[:200]}); "
                "move it out of the directory"
            ) from None
    return found


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def find_incident(found: list[tuple[Path, Incident]], which: str) -> tuple[Path, Incident]:
    """The incident ``which`` names: its id (or a unique prefix of it), its 1-based position
    in the listing, or ``latest``. Raises :class:`UsageError` naming the choices."""
    if not found:
        raise UsageError("there are no incidents to replay in this directory")
    if which == "latest":
        return found[-1]
    if which.isdigit() and 1 <= int(which) <= len(found):
        return found[int(which) - 1]
    matches = [item for item in found if item[1].id.startswith(which)]
    if len(matches) == 1:
        return matches[0]
    problem = "matches several incidents" if matches else "matches no incident"
    raise UsageError(
        f"--replay {which!r} {problem}; pass an id from the listing, its number "
        f"(1..{len(found)}) or 'latest'"
    )


def check_replayable(incident: Incident) -> None:
    """Raise :class:`UsageError` (saying what to do instead) for an incident that cannot be
    replayed (:meth:`Incident.replay_refusal`)."""
    refusal = incident.replay_refusal()
    if refusal is not None:
        raise UsageError(refusal)


def replay_meaning(incident: Incident, report: Report) -> str:
    """One line on what the replay's verdict says about the incident."""
    cell = next(
        (
            t
            for t in (report.correctness.tests if report.correctness else [])
            if t.variant.kind.value == "saved"
        ),
        None,
    )
    if cell is None:
        return (
            f"the replay did not reach the saved inputs (verdict {report.verdict.value}): "
            f"{report.summary}"
        )
    if cell.outcome.value == "passed":
        return (
            "not reproduced: a fresh candidate is right on these inputs, so the incident "
            "depends on the guarded module's state (call count, weights, earlier calls), "
            "which a replay does not rebuild; the saved outputs are the evidence"
        )
    return f"reproduced: the saved inputs' cell {cell.outcome.value} ({cell.message[:300]})"
