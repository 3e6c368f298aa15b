"""A call's arguments saved to a file, and read back: how a guard incident's inputs replay
through ``kernelproof verify --inputs FILE``.

The file is ``torch.save`` of ``{"format": INPUTS_FORMAT, "args": [...]}`` holding only tensors,
plain values and lists of them, so it loads with ``torch.load(weights_only=True)``: reading one
never unpickles code. Tensors keep their strides on disk; on the way to a worker they travel
contiguous with their strides beside them (:func:`given_slots`) and are laid out again there
(:func:`rebuild`).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from kernelproof.errors import UsageError

#: The format tag of a saved inputs file.
INPUTS_FORMAT = "kernelproof.inputs/1"


def save_arguments(path: Path, values: list[Any]) -> None:
    """Write a call's arguments (or outputs). Tensors go to the CPU, keeping their strides;
    anything but tensors and plain values is kept as its ``repr`` (readable, not replayable)."""
    import torch

    def plain(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.detach().cpu()
        if isinstance(value, (bool, int, float, str, type(None))):
            return value
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return repr(value)[:200]

    torch.save({"format": INPUTS_FORMAT, "args": [plain(v) for v in values]}, path)


def load_arguments(path: str | Path) -> list[Any]:
    """The arguments saved in ``path``. Raises :class:`UsageError` naming the file and the fix
    when it is missing or not such a file."""
    import torch

    path = Path(path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UsageError(
            f"--inputs {path}: no such file; pass the inputs.pt of an incident "
            "(kernelproof incidents DIR lists them)"
        ) from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        raise UsageError(
            f"--inputs {path} is not a saved inputs file ({str(exc)[:200]}); "
            "pass the inputs.pt of an incident"
        ) from None
    if (
        not isinstance(data, dict)
        or data.get("format") != INPUTS_FORMAT
        or not isinstance(data.get("args"), list)
    ):
        raise UsageError(
            f"--inputs {path} is not a saved inputs file (no {INPUTS_FORMAT!r} "
            "format tag); pass the inputs.pt of an incident"
        )
    return data["args"]


def given_slots(args: list[Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """The request's description of saved arguments, and the tensors to send with it: per
    argument ``{"tensor": i, "strides": [...]}`` or ``{"value": v}``."""
    import torch

    slots: list[dict[str, Any]] = []
    tensors: list[Any] = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            slots.append({"tensor": len(tensors), "strides": list(arg.stride())})
            tensors.append(arg)
        else:
            slots.append({"value": arg})
    return slots, tensors


def rebuild(slots: list[dict[str, Any]], tensors: list[Any], device: str) -> list[Any]:
    """The arguments again, inside a worker: each tensor on ``device`` with its saved strides
    (contiguous where they overlap, as an expanded view's do)."""
    import torch

    args: list[Any] = []
    for slot in slots:
        if "tensor" not in slot:
            args.append(slot.get("value"))
            continue
        tensor = tensors[int(slot["tensor"])].to(device)
        strides = tuple(int(s) for s in slot.get("strides") or ())
        if len(strides) == tensor.dim() and 0 not in strides and strides != tensor.stride():
            laid_out = torch.empty_strided(
                tuple(tensor.shape), strides, dtype=tensor.dtype, device=device
            )
            laid_out.copy_(tensor)
            tensor = laid_out
        args.append(tensor)
    return args
