"""The cached calibration record: what was measured, where it is kept, and when it is trusted.

One JSON file per machine fingerprint, device and thread count under ``$KERNELPROOF_CACHE_DIR``
(default ``~/.cache/kernelproof``), with the raw samples next to the derived figures. Written
only by the controller and pinned by hash (:mod:`kernelproof.pins`); a record measured on a
noisy machine is kept for the process only, never on disk.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, Field, ValidationError

from kernelproof.config import cache_dir
from kernelproof.pins import pin, trusted_bytes
from kernelproof.roofline.devices import canonical_dtype
from kernelproof.roofline.fingerprint import machine_fingerprint, resolve_device

log = logging.getLogger(__name__)

CALIBRATION_SCHEMA: Final = "kernelproof.calibration/1"


class MatmulMeasurement(BaseModel):
    """The throughput of square matmuls in one format, with the samples it is derived from."""

    size: int
    """Side n of the n x n x n matmul that was timed (the ramp's last size)."""

    max_size: int
    """The largest size the ramp was allowed; a request with another cap re-measures."""

    flops_per_s: float
    """2 n^3 over the best sample."""

    samples_s: list[float]
    """Seconds per call, in the order measured."""


class CalibrationRecord(BaseModel):
    """One machine's measured ceilings, as cached on disk."""

    schema_: Literal["kernelproof.calibration/1"] = Field(
        default=CALIBRATION_SCHEMA, alias="schema"
    )
    fingerprint: str
    fields: dict[str, str]
    """What the fingerprint was computed from (CPU model, cores, memory, torch, GPUs)."""

    device: str
    """``"cpu"`` or ``"cuda:<index>"``."""

    threads: int | None
    """torch intra-op threads during the CPU measurement; ``None`` on CUDA."""

    measured_at: str
    copy_bytes: int
    """Size of the source buffer of the copy; read + written traffic is twice this."""

    bytes_per_s: float
    """2 * copy_bytes over the best copy sample."""

    copy_samples_s: list[float]
    matmul: dict[str, MatmulMeasurement] = Field(default_factory=dict)
    """Keyed by compute format (:data:`~kernelproof.roofline.devices.DTYPES`)."""

    model_config = {"populate_by_name": True}

    def peak_flops(self, dtype: str) -> float | None:
        """The measured throughput of one format, or ``None`` when it was not measured."""
        measured = self.matmul.get(canonical_dtype(dtype))
        return None if measured is None else measured.flops_per_s


def cache_path(fingerprint: str, device: str, threads: int | None) -> Path:
    tag = f"cpu-t{threads}" if device == "cpu" else device.replace(":", "")
    return cache_dir() / f"calibration-{fingerprint}-{tag}.json"


def load_calibration(
    device: str = "cpu", *, threads: int | None = None
) -> CalibrationRecord | None:
    """The cached calibration of this machine for ``device`` and thread count, if there is one.

    ``threads=None`` means torch's current intra-op thread count. A missing, unreadable or
    outdated cache file reads as ``None``.
    """
    import torch

    _, _, name = resolve_device(device)
    if name == "cpu" and threads is None:
        threads = torch.get_num_threads()
    if name != "cpu":
        threads = None
    return read_record(cache_path(machine_fingerprint(name), name, threads))


def read_record(path: Path) -> CalibrationRecord | None:
    """The cached record, only if its bytes are the ones the controller pinned when it wrote
    them (a candidate that rewrote the ceilings x1000 would make every floor vanish)."""
    data = trusted_bytes(path)
    if data is None:
        return None
    try:
        return CalibrationRecord.model_validate_json(data)
    except (ValueError, ValidationError) as error:
        log.warning("ignoring unreadable calibration cache %s (%s); re-measuring", path, error)
        return None


def write_record(path: Path, record: CalibrationRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(record.model_dump_json(by_alias=True, indent=2))
    os.replace(partial, path)  # atomic: a concurrent reader sees the old file or the new one
    pin(path)


#: Calibrations measured on a noisy machine, kept for this process only (never on disk).
UNCACHED: dict[Path, CalibrationRecord] = {}

#: A calibration whose median copy is slower than its best by more than this factor was
#: measured while other work competed for memory bandwidth: its ceilings read low, and every
#: later floor check would trust them. It is used once, and not cached.
NOISY_COPY_SPREAD = 1.25


def copy_noise(samples: list[float]) -> str | None:
    """Why the copy samples look noisy, or None when they look clean."""
    if len(samples) < 3:
        return None
    best, median = min(samples), sorted(samples)[len(samples) // 2]
    if best > 0 and median > NOISY_COPY_SPREAD * best:
        return f"median copy {median / best:.2f}x the best"
    return None
