"""A short stable identity of the machine, so that a cached calibration is reused only where valid.

The fingerprint covers what changes the ceilings: the CPU model, the core count, the total memory,
the torch build and, for CUDA, the GPU names and count. It leaves out what varies between runs of
one machine (free memory, clock, load, hostname), so the same box keeps the same fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from pathlib import Path

from kernelproof.errors import UsageError

__all__ = [
    "cpu_model",
    "fingerprint_fields",
    "machine_fingerprint",
    "parse_device",
    "resolve_device",
]

#: Hex digits kept from the SHA-256: 64 bits is ample to tell a handful of machines apart and stays
#: short enough to read in a report and a file name.
FINGERPRINT_HEX_DIGITS = 16

_CPUINFO = Path("/proc/cpuinfo")
_MEMINFO = Path("/proc/meminfo")
#: Keys of /proc/cpuinfo that name the processor: x86 first, then ARM and POWER spellings.
_CPU_MODEL_KEYS = ("model name", "Model", "Hardware", "cpu model", "cpu")


def parse_device(device: str) -> tuple[str, int | None]:
    """Split a device string into its type and index: ``"cuda:1"`` -> ``("cuda", 1)``.

    Only ``cpu`` and ``cuda`` (which is also ROCm's spelling) are supported; anything else raises
    :class:`~kernelproof.errors.UsageError`.
    """
    kind, _, index = str(device).strip().lower().partition(":")
    if kind not in ("cpu", "cuda"):
        raise UsageError(
            f"unsupported device {device!r} for the roofline; use 'cpu', 'cuda' or 'cuda:<index>'"
        )
    if not index:
        return kind, None
    if kind == "cpu" or not index.isdigit():
        raise UsageError(f"malformed device {device!r}; use 'cpu', 'cuda' or 'cuda:<index>'")
    return kind, int(index)


def cpu_model(cpuinfo: str | None = None) -> str:
    """The processor's model name from a /proc/cpuinfo text (this machine's when ``None``)."""
    if cpuinfo is None:
        try:
            cpuinfo = _CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    text = cpuinfo
    for key in _CPU_MODEL_KEYS:
        for line in text.splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() == key and value.strip():
                return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def _total_memory_gib() -> int:
    """Total RAM rounded to GiB: the kernel's reserved share moves MemTotal a few MiB per boot."""
    try:
        for line in _MEMINFO.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) * 1024 / (1 << 30))
    except (OSError, ValueError, IndexError):
        pass
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30))
    except (ValueError, OSError, AttributeError):
        return 0


def fingerprint_fields(device: str) -> dict[str, str]:
    """The facts the fingerprint of ``device`` is made of, for display next to the hash."""
    import torch

    kind, _ = parse_device(device)
    fields = {
        "device": kind,
        "cpu_model": cpu_model(),
        "cpu_count": str(os.cpu_count() or 0),
        "memory_gib": str(_total_memory_gib()),
        "torch": torch.__version__,
    }
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(
                f"device {device!r} requested but torch.cuda.is_available() is False; "
                "use device 'cpu' or install a CUDA build of torch"
            )
        count = torch.cuda.device_count()
        fields["gpu_count"] = str(count)
        fields["gpus"] = ",".join(torch.cuda.get_device_name(i) for i in range(count))
    return fields


def machine_fingerprint(device: str) -> str:
    """A short hex hash identifying this machine for ``device`` (``cpu``, ``cuda``, ``cuda:N``).

    Stable across processes and reboots of the same machine with the same torch; different when
    the CPU model, core count, memory size, torch version or (for CUDA) the set of GPUs differs.
    """
    canonical = json.dumps(fingerprint_fields(device), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_HEX_DIGITS]


def resolve_device(device: str) -> tuple[str, int | None, str]:
    """(kind, index, canonical name) with the CUDA index made explicit."""
    import torch

    kind, index = parse_device(device)
    if kind == "cpu":
        return kind, None, "cpu"
    if not torch.cuda.is_available():
        raise UsageError(
            f"device {device!r} requested but torch.cuda.is_available() is False; "
            "use device 'cpu' or install a CUDA build of torch"
        )
    if index is None:
        index = torch.cuda.current_device()
    if index >= torch.cuda.device_count():
        raise UsageError(
            f"device {device!r} does not exist: {torch.cuda.device_count()} CUDA device(s) visible"
        )
    return kind, index, f"cuda:{index}"
