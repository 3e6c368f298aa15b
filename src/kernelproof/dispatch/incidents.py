"""Writing, reading and replaying the guard's incidents.

Each incident is a folder under the guard's ``incident_dir``: ``incident.json`` (an
:class:`~kernelproof.schema.incident.Incident`), the call's inputs as saved before the
candidate ran (``inputs.pt``) and both outputs. Tensors are written with ``torch.save`` as
plain containers of tensors and values, so they load with ``torch.load(weights_only=True)``:
reading an incident never unpickles code.
"""

from __future__ import annotations

import os
import shlex
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelproof.errors import UsageError
from kernelproof.schema.incident import INCIDENT_FILE, Incident
from kernelproof.schema.report import Report

#: The format tag of a saved inputs file (what ``verify --inputs`` reads).
INPUTS_FORMAT = "kernelproof.inputs/1"


def new_incident_folder(directory: Path, call_index: int) -> Path:
    """A fresh folder for one incident, named so that a listing sorts by time."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    base = f"{stamp}-call{call_index:08d}-pid{os.getpid()}"
    for attempt in range(1000):
        folder = directory / (base if attempt == 0 else f"{base}-{attempt}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise UsageError(f"cannot make a new incident folder in {directory}: 1000 names are taken")


def save_tensors(path: Path, values: list[Any]) -> None:
    """Write a call's arguments (or outputs) as a plain container ``torch.load`` reads back
    with ``weights_only=True``. Tensors go to the CPU, keeping their strides."""
    import torch

    def plain(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().cpu()
        if isinstance(value, (bool, int, float, str, type(None))):
            return value
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return repr(value)[:200]  # not replayable, but what it was stays readable

    torch.save({"format": INPUTS_FORMAT, "args": [plain(v) for v in values]}, path)


def load_saved_inputs(path: str | Path) -> list[Any]:
    """The arguments saved in ``path`` (an incident's ``inputs.pt``). Raises
    :class:`UsageError` naming the file and the fix when it is not such a file."""
    import pickle

    import torch

    path = Path(path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UsageError(f"--inputs {path}: no such file; pass the inputs.pt of an incident "
                         "(kernelproof incidents DIR lists them)") from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as exc:
        raise UsageError(f"--inputs {path} is not a saved inputs file ({str(exc)[:200]}); "
                         "pass the inputs.pt of an incident") from None
    if not isinstance(data, dict) or data.get("format") != INPUTS_FORMAT or not isinstance(
            data.get("args"), list):
        raise UsageError(f"--inputs {path} is not a saved inputs file (no {INPUTS_FORMAT!r} "
                         "format tag); pass the inputs.pt of an incident")
    return data["args"]


def replay_command(report: Report, knobs: dict[str, int], inputs: Path) -> str | None:
    """The ``kernelproof verify`` command that reruns the candidate on saved inputs at these
    knobs, with the report's seed (the same initial weights) and judging settings; None when
    the report names no files."""
    if report.reference is None or report.candidate is None:
        return None
    words = ["kernelproof", "verify", report.reference.path, report.candidate.path,
             "--knobs", ",".join(f"{k}={v}" for k, v in knobs.items()),
             "--inputs", str(inputs), "--no-timing"]
    if report.correctness is not None:
        words += ["--seed", str(report.correctness.base_seed)]
    settings = report.settings
    for option in ("device", "dtype", "atol", "rtol"):
        value = settings.get(option)
        if value is not None and not (option == "device" and value == "cpu"):
            words += [f"--{option}", str(value)]
    return " ".join(shlex.quote(word) for word in words)


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
            raise UsageError(f"{path} is not a kernelproof incident ({str(exc)[:200]}); "
                             "move it out of the directory") from None
    return found


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
