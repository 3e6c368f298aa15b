"""Measured machine ceilings: streaming-copy bandwidth and matmul throughput, cached per machine.

A datasheet gives the ceilings of a known GPU; everything else (every CPU, an unknown GPU, a
format the datasheet omits) gets measured ones. The measurement is the best of several repeats
after a warm-up, because a ceiling estimates what the machine *can* do, and noise only ever makes
a run slower. The result is cached as JSON under ``$KERNELPROOF_CACHE_DIR`` (default
``~/.cache/kernelproof``), one file per machine fingerprint, device and thread count, with the raw
samples kept next to the derived figures.

Measured ceilings are what the best library routine reaches, not the silicon's limit. A kernel
that beats a measured ceiling is therefore possible in principle (a better GEMM than the
library's), which is why a floor from a calibration reads "this fast is implausible", never
"impossible".
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernelproof.config import cache_dir
from kernelproof.errors import UsageError
from kernelproof.roofline.calibration_measure import (
    COPY_SAMPLES_PER_REPEAT,
    CPU_MAX_MATMUL_SIZE,
    CUDA_MAX_MATMUL_SIZE,
    DEFAULT_REPEATS,
    current_device,
    default_copy_bytes,
    measure_copy,
    measure_matmul,
    tf32_allowed,
    torch_threads,
)
from kernelproof.roofline.calibration_record import (
    CALIBRATION_SCHEMA,
    NOISY_COPY_SPREAD,
    UNCACHED,
    CalibrationRecord,
    MatmulMeasurement,
    cache_path,
    copy_noise,
    load_calibration,
    read_record,
    write_record,
)
from kernelproof.roofline.devices import DTYPES, PeakFlops, canonical_dtype, find_device
from kernelproof.roofline.fingerprint import fingerprint_fields, machine_fingerprint, resolve_device
from kernelproof.schedstat import own_wait_s
from kernelproof.schema.roofline import Ceilings

if TYPE_CHECKING:
    import torch

__all__ = [
    "CALIBRATION_SCHEMA",
    "NOISY_COPY_SPREAD",
    "CalibrationRecord",
    "MatmulMeasurement",
    "attainable_peak",
    "cache_dir",
    "calibrate",
    "ceilings_for",
    "load_calibration",
    "measure_copy",
]

_FIRST_MEASURED = {"cpu": ("float32",), "cuda": ("float32", "tf32", "bfloat16")}

#: Formats a kernel may compute in without losing any bit of its inputs, per input format. A
#: bf16 kernel may upcast and use a float32 or TF32 path (both hold every bf16 value exactly), so
#: its ceiling is the fastest of those. TF32 is added for float32 only when torch allows it.
_EXACT_SUBSTITUTES: dict[str, tuple[str, ...]] = {
    "float64": ("float64",),
    "float32": ("float32",),
    "tf32": ("tf32", "float32"),
    "float16": ("float16", "tf32", "float32"),
    "bfloat16": ("bfloat16", "tf32", "float32"),
}


def attainable_peak(
    dtype: str | torch.dtype, peak: Callable[[str], float | None], *, tf32_allowed: bool = False
) -> float | None:
    """The highest rate a kernel in ``dtype`` may legitimately reach, given per-format peaks.

    A kernel may compute in any format that holds its inputs exactly (bf16 data in float32, for
    one), so the ceiling is the fastest of those; float32 also counts TF32 when torch's matmul
    precision allows it, because then the reference itself runs in TF32.
    """
    key = canonical_dtype(dtype)
    formats = _EXACT_SUBSTITUTES[key]
    if key == "float32" and tf32_allowed:
        formats = (*formats, "tf32")
    rates = [rate for rate in (peak(f) for f in formats) if rate is not None and rate > 0]
    return max(rates) if rates else None


def calibrate(
    device: str = "cpu",
    *,
    dtype: str | torch.dtype = "float32",
    threads: int | None = None,
    force: bool = False,
    copy_bytes: int | None = None,
    matmul_size: int | None = None,
    repeats: int = DEFAULT_REPEATS,
) -> Ceilings:
    """Measured ceilings of this machine for ``device`` and compute format ``dtype``.

    Bandwidth is the best ``dst.copy_(src)`` over a buffer far beyond the last-level cache,
    counting bytes read plus bytes written. Throughput is the best square matmul in ``dtype``,
    ramped from :data:`MATMUL_START_SIZE` up to ``matmul_size`` until a call lasts
    :data:`MATMUL_TARGET_S`. The first calibration also measures float32 (and, on CUDA, TF32 and
    bf16); later ones add formats to the cached record as they are asked for.

    The record is cached per machine fingerprint, device and thread count and reused unless
    ``force`` is set, or ``copy_bytes`` / ``matmul_size`` are given and differ from the cached
    sizes (without them, whatever sizes the cache holds are reused). ``copy_bytes`` is the source
    buffer of the copy and ``matmul_size`` the largest matmul side; tests shrink them to stay
    fast. ``threads`` sets torch's intra-op threads for the measurement and restores them
    afterwards; ``None`` measures with torch's current count. ``repeats`` is the number of samples
    per matmul after the warm-up; the cheap copy takes :data:`COPY_SAMPLES_PER_REPEAT` times as
    many.

    The returned ``peak_flops`` is :func:`attainable_peak` over the measured formats, and the
    ``source`` is ``"calibration:<fingerprint>"``.
    """
    key = canonical_dtype(dtype)
    if repeats < 1:
        raise UsageError(f"repeats must be at least 1, got {repeats!r}")
    for knob, value in (("copy_bytes", copy_bytes), ("matmul_size", matmul_size)):
        if value is not None and value < 1:
            raise UsageError(f"{knob} must be a positive integer, got {value!r}; or omit it")
    kind, index, name = resolve_device(device)
    if kind == "cpu" and key == "tf32":
        key = "float32"  # no TF32 path on CPU: a tf32 request is a float32 one
    with torch_threads(threads if kind == "cpu" else None) as in_force, current_device(index):
        record_threads = in_force if kind == "cpu" else None
        fingerprint = machine_fingerprint(name)
        path = cache_path(fingerprint, name, record_threads)
        record = None if force else (read_record(path) or UNCACHED.get(path))
        started, waited = time.monotonic(), own_wait_s()
        if record is not None and copy_bytes is not None and record.copy_bytes != copy_bytes:
            record = None  # explicit sizes must match the cached ones
        if record is None:
            wanted_copy = copy_bytes if copy_bytes is not None else default_copy_bytes(kind, index)
            bandwidth, copy_samples = measure_copy(
                kind, name, wanted_copy, repeats * COPY_SAMPLES_PER_REPEAT
            )
            record = CalibrationRecord(
                fingerprint=fingerprint,
                fields=fingerprint_fields(name),
                device=name,
                threads=record_threads,
                measured_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                copy_bytes=wanted_copy,
                bytes_per_s=bandwidth,
                copy_samples_s=copy_samples,
            )
        sizes = {m.max_size for m in record.matmul.values()}
        if matmul_size is not None and sizes - {matmul_size}:
            # Explicit sizes must match the cache, and the formats of one record each other.
            record.matmul.clear()
        # Without an explicit size, a new format is measured at the size cap the record already
        # uses, so that every format of one record is measured alike.
        default_size = CPU_MAX_MATMUL_SIZE if kind == "cpu" else CUDA_MAX_MATMUL_SIZE
        record_size = next((m.max_size for m in record.matmul.values()), default_size)
        wanted_size = matmul_size if matmul_size is not None else record_size
        needed = [key, *_FIRST_MEASURED[kind]] if not record.matmul else [key]
        changed = False
        for fmt in dict.fromkeys(needed):
            if fmt not in record.matmul:
                record.matmul[fmt] = measure_matmul(kind, name, fmt, wanted_size, repeats)
                changed = True
        noise = copy_noise(record.copy_samples_s) if changed or not path.exists() else None
        if noise is None and (changed or not path.exists()):
            noise = _starved(time.monotonic() - started, own_wait_s() - waited)
        if noise is None and (changed or not path.exists()):
            write_record(path, record)
            UNCACHED.pop(path, None)
        elif noise is not None:
            UNCACHED[path] = record  # this process reuses it; the next one measures again

    allowed = kind == "cuda" and tf32_allowed()
    peak = attainable_peak(key, record.peak_flops, tf32_allowed=allowed)
    assert peak is not None  # ``key`` itself was just measured
    source = f"calibration:{fingerprint}"
    if noise is not None:
        source += f" (taken on a noisy machine: {noise}; not cached)"
    return Ceilings(peak_flops=peak, peak_bytes_per_s=record.bytes_per_s, source=source)


#: A calibration whose thread waited for a CPU longer than this share of its measuring time
#: (/proc schedstat) ran on a busy machine: a steady load slows every sample alike, which the
#: samples' own spread cannot show, and its ceilings would read low for every later run (a
#: 3.2 GB/s bandwidth cached at a load of 18 on 2 cores made honest kernels "below the floor").
STARVED_WAIT_SHARE = 0.1


def _starved(elapsed_s: float, waited_s: float) -> str | None:
    """Why a calibration is too starved to cache, or None."""
    if elapsed_s <= 0 or waited_s <= STARVED_WAIT_SHARE * elapsed_s:
        return None
    return f"its thread waited for a CPU {waited_s / elapsed_s:.0%} of the time"


def ceilings_for(device: str, dtype: str | torch.dtype, *, threads: int | None = None) -> Ceilings:
    """The ceilings a kernel in ``dtype`` on ``device`` is measured against.

    On CUDA a GPU found in the device table gets its datasheet figures (``source`` names the entry
    and its document); an unknown GPU, or a format its datasheet omits, gets a calibration. On CPU
    it is always the cached calibration, measured now if absent. ``threads`` sets torch's
    intra-op threads for a CPU calibration (restored afterwards); the cache is per thread count.
    """
    key = canonical_dtype(dtype)
    kind, index, name = resolve_device(device)
    if kind == "cuda":
        import torch

        assert index is not None
        spec = find_device(torch.cuda.get_device_name(index))
        if spec is not None:
            table: PeakFlops = spec.peak_flops
            peak = attainable_peak(key, table.get, tf32_allowed=tf32_allowed())
            if peak is not None:
                return Ceilings(
                    peak_flops=peak,
                    peak_bytes_per_s=spec.bytes_per_s,
                    source=f"device-table:{spec.key} ({spec.source})",
                )
    return calibrate(name, dtype=key, threads=threads)


assert set(_EXACT_SUBSTITUTES) == set(DTYPES)
