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

import contextlib
import datetime as _dt
import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationError

from kernelproof.config import cache_dir
from kernelproof.pins import pin, trusted_bytes
from kernelproof.errors import UsageError
from kernelproof.roofline.devices import DTYPES, PeakFlops, canonical_dtype, find_device
from kernelproof.roofline.fingerprint import fingerprint_fields, machine_fingerprint, parse_device
from kernelproof.schema.roofline import Ceilings

if TYPE_CHECKING:
    import torch

__all__ = [
    "CALIBRATION_SCHEMA",
    "CalibrationRecord",
    "MatmulMeasurement",
    "attainable_peak",
    "cache_dir",
    "calibrate",
    "ceilings_for",
    "load_calibration",
]

log = logging.getLogger(__name__)

CALIBRATION_SCHEMA = "kernelproof.calibration/1"

#: Environment variable naming the cache folder; tests and CI point it at a scratch folder.

_MiB = 1 << 20
_GiB = 1 << 30

#: Smallest CPU copy buffer: far beyond the last-level cache of a typical CPU, so the copy streams
#: from DRAM; raised to four times the LLC on machines whose caches are larger.
CPU_MIN_COPY_BYTES = 256 * _MiB
#: Smallest GPU copy buffer: well beyond the largest L2 in the table (126 MiB on B200), raised to
#: four times the L2 (or Infinity Cache) of larger parts.
CUDA_MIN_COPY_BYTES = 2 * _GiB
#: How many times the last-level cache the copy buffer must exceed so cache hits are negligible.
LLC_MULTIPLE = 4
#: Fraction of total RAM one CPU copy buffer may take (source and destination are two of them).
CPU_MAX_MEMORY_FRACTION = 1 / 8
#: Fraction of free GPU memory one copy buffer may take (two buffers plus allocator slack).
CUDA_MAX_MEMORY_FRACTION = 1 / 3

#: Largest square matmul timed on CPU: big enough for a many-core server to reach its GEMM peak;
#: the ramp below stops earlier on small machines.
CPU_MAX_MATMUL_SIZE = 4096
#: Largest square matmul timed on CUDA: saturates every GPU in the table in every format.
CUDA_MAX_MATMUL_SIZE = 8192
#: First size of the matmul ramp: cheap even for formats without fast kernels (bf16 on a CPU
#: without AVX512-BF16 runs near 1 GFLOP/s, where 2048^3 would take 17 s).
MATMUL_START_SIZE = 256
#: The ramp doubles the matmul size until one call takes this long (or the cap is reached):
#: long enough to amortise call overhead, short enough to keep a 2-core CPU calibration ~2 s.
MATMUL_TARGET_S = 0.1

#: Repeats per measurement; the best is kept, since interference only ever adds time.
DEFAULT_REPEATS = 5
#: The copy takes this many times ``repeats`` samples: one costs tens of milliseconds, and on a
#: shared machine a burst of contention can outlast a handful of them.
COPY_SAMPLES_PER_REPEAT = 4
#: Each timed sample on a GPU batches calls until it lasts this long: CUDA events resolve ~0.5 us,
#: so single sub-millisecond calls would be dominated by launch gaps and timer resolution.
CUDA_MIN_SAMPLE_S = 0.01

#: Formats measured when a record is first made, besides the one asked for: float32 always;
#: on CUDA also TF32 and bf16, the formats a GPU kernel is most often timed in.
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


def attainable_peak(
    dtype: "str | torch.dtype", peak: Callable[[str], float | None], *, tf32_allowed: bool = False
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


def _resolve_device(device: str) -> tuple[str, int | None, str]:
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


def _tf32_allowed() -> bool:
    """Whether float32 matmuls on CUDA may run in TF32 under torch's current settings."""
    import torch

    matmul = torch.backends.cuda.matmul
    precision = getattr(matmul, "fp32_precision", None)
    if precision in ("tf32", "ieee"):
        return precision == "tf32"
    try:
        return bool(matmul.allow_tf32)
    except RuntimeError:
        # torch refuses to answer when the legacy and new precision APIs were mixed; assume TF32
        # may be on, which gives the higher (never falsely beaten) ceiling.
        return True


@contextlib.contextmanager
def _cuda_matmul_format(key: str) -> Iterator[None]:
    """Run float32 CUDA matmuls in TF32 (``key == "tf32"``) or strict IEEE float32 meanwhile."""
    import torch

    matmul = torch.backends.cuda.matmul
    if key not in ("float32", "tf32"):
        yield
        return
    wanted = "tf32" if key == "tf32" else "ieee"
    if hasattr(matmul, "fp32_precision"):
        previous = matmul.fp32_precision
        matmul.fp32_precision = wanted
        try:
            yield
        finally:
            matmul.fp32_precision = previous
    else:  # torch before the fp32_precision API
        previous_flag = matmul.allow_tf32
        matmul.allow_tf32 = key == "tf32"
        try:
            yield
        finally:
            matmul.allow_tf32 = previous_flag


@contextlib.contextmanager
def _cpu_matmul_format() -> Iterator[None]:
    """Keep CPU float32 matmuls in full float32 (a lower precision setting lets oneDNN use bf16)."""
    import torch

    try:
        previous = torch.get_float32_matmul_precision()
    except RuntimeError:  # mixed legacy/new precision APIs: leave the setting alone
        yield
        return
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[int]:
    """Run with ``threads`` intra-op threads (restored afterwards); yields the count in force."""
    import torch

    if threads is None:
        yield torch.get_num_threads()
        return
    if not isinstance(threads, int) or threads < 1:
        raise UsageError(
            f"threads must be a positive integer, got {threads!r}; pass e.g. threads=1"
        )
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def _current_device(index: int | None) -> Iterator[None]:
    """Make CUDA device ``index`` current, so events and streams belong to it (no-op on CPU)."""
    if index is None:
        yield
        return
    import torch

    with torch.cuda.device(index):
        yield


def _cpu_llc_bytes() -> int:
    """Total last-level cache of the CPU from sysfs (summed over its instances); 0 if unknown."""
    root = Path("/sys/devices/system/cpu")
    best_level = 0
    instances: dict[str, int] = {}
    for index in root.glob("cpu[0-9]*/cache/index[0-9]*"):
        try:
            level = int((index / "level").read_text())
            size_text = (index / "size").read_text().strip()
            shared = (index / "shared_cpu_list").read_text().strip()
        except (OSError, ValueError):
            continue
        size = _parse_cache_size(size_text)
        if level > best_level:
            best_level, instances = level, {}
        if level == best_level:
            instances[shared] = size
    return sum(instances.values())


def _parse_cache_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    try:
        if text and text[-1] in units:
            return int(text[:-1]) * units[text[-1]]
        return int(text)
    except ValueError:
        return 0


def _default_copy_bytes(kind: str, index: int | None) -> int:
    import torch

    if kind == "cpu":
        wanted = max(CPU_MIN_COPY_BYTES, LLC_MULTIPLE * _cpu_llc_bytes())
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return wanted
        return int(min(wanted, total * CPU_MAX_MEMORY_FRACTION))
    assert index is not None
    spec = find_device(torch.cuda.get_device_name(index))
    if spec is not None:
        llc = spec.last_level_cache_bytes
    else:
        llc = int(getattr(torch.cuda.get_device_properties(index), "L2_cache_size", 0))
    free, _ = torch.cuda.mem_get_info(index)
    wanted = max(CUDA_MIN_COPY_BYTES, LLC_MULTIPLE * llc)
    return int(min(wanted, free * CUDA_MAX_MEMORY_FRACTION))


def _time_calls(fn: Callable[[], object], kind: str, repeats: int) -> list[float]:
    """Seconds per call of ``fn``: one warm-up, then ``repeats`` samples.

    On CUDA each sample batches enough calls to last :data:`CUDA_MIN_SAMPLE_S` and is timed with
    events; on CPU each sample is one call timed with ``perf_counter``.
    """
    import torch

    if kind == "cpu":
        fn()
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        return samples

    fn()
    torch.cuda.synchronize()
    start_event = torch.cuda.Event(enable_timing=True)
    end_event = torch.cuda.Event(enable_timing=True)
    start_event.record()
    fn()
    end_event.record()
    end_event.synchronize()
    one = max(start_event.elapsed_time(end_event) / 1e3, 1e-7)
    batch = max(1, math.ceil(CUDA_MIN_SAMPLE_S / one))
    samples = []
    for _ in range(repeats):
        start_event.record()
        for _ in range(batch):
            fn()
        end_event.record()
        end_event.synchronize()
        samples.append(start_event.elapsed_time(end_event) / 1e3 / batch)
    return samples


def _measure_copy(
    kind: str, device: str, copy_bytes: int, repeats: int
) -> tuple[float, list[float]]:
    """Best streaming bandwidth of three streams, each counting the bytes it moves: a read
    (``src.sum()``), a write (``dst.fill_``) and a copy (``dst.copy_(src)``, read plus write).

    A copy alone understates what a read-only kernel reaches: a row sum ran at 1.02-1.06 of
    the copy's speed, because reads need no write-allocate traffic. The floor must hold for
    the fastest honest stream, so the ceiling is the best of the three. The samples returned
    are the winning stream's (seconds per call)."""
    import torch

    numel = max(1, copy_bytes // 4)
    src = torch.ones(numel, dtype=torch.float32, device=device)  # touches every page now
    dst = torch.zeros_like(src)
    nbytes = numel * 4
    streams = {
        "read": (lambda: src.sum(), nbytes),
        "write": (lambda: dst.fill_(1.0), nbytes),
        "copy": (lambda: dst.copy_(src), 2 * nbytes),
    }
    best_rate, best_samples = 0.0, []
    for stream, moved in streams.values():
        samples = _time_calls(stream, kind, repeats)
        if moved / min(samples) > best_rate:
            best_rate, best_samples = moved / min(samples), samples
    del src, dst
    return best_rate, best_samples


def _torch_dtype(key: str) -> "torch.dtype":
    import torch

    return {
        "float64": torch.float64,
        "float32": torch.float32,
        "tf32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
    }[key]


def _measure_matmul(
    kind: str, device: str, key: str, max_size: int, repeats: int
) -> MatmulMeasurement:
    """Best throughput of square matmuls in format ``key``, over sizes doubling up to
    ``max_size`` (or until one call lasts ``MATMUL_TARGET_S``). Every size of the ramp is
    measured, because the fastest is not always the largest: on a CPU with a small L2 a
    2048^3 sgemm ran at 45 GFLOP/s while an honest 64x1024 @ 1024x1024 linear layer
    reached 70, which put a measured time under the "physical" floor."""
    import torch

    fmt = _cpu_matmul_format() if kind == "cpu" else _cuda_matmul_format(key)
    dtype = _torch_dtype(key)
    best: MatmulMeasurement | None = None
    with fmt, torch.no_grad():
        size = min(MATMUL_START_SIZE, max_size)
        while True:
            a = torch.randn(size, size, dtype=dtype, device=device)
            b = torch.randn(size, size, dtype=dtype, device=device)
            samples = _time_calls(lambda: torch.mm(a, b), kind, repeats)
            rate = 2 * size**3 / min(samples)
            if best is None or rate > best.flops_per_s:
                best = MatmulMeasurement(size=size, max_size=max_size, flops_per_s=rate,
                                         samples_s=samples)
            if min(samples) >= MATMUL_TARGET_S or size >= max_size:
                break
            size = min(size * 2, max_size)
    assert best is not None
    return best


def _cache_path(fingerprint: str, device: str, threads: int | None) -> Path:
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

    _, _, name = _resolve_device(device)
    if name == "cpu" and threads is None:
        threads = torch.get_num_threads()
    if name != "cpu":
        threads = None
    return _read_record(_cache_path(machine_fingerprint(name), name, threads))


def _read_record(path: Path) -> CalibrationRecord | None:
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


def _write_record(path: Path, record: CalibrationRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(record.model_dump_json(by_alias=True, indent=2))
    os.replace(partial, path)  # atomic: a concurrent reader sees the old file or the new one
    pin(path)


def calibrate(
    device: str = "cpu",
    *,
    dtype: "str | torch.dtype" = "float32",
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
    kind, index, name = _resolve_device(device)
    if kind == "cpu" and key == "tf32":
        key = "float32"  # no TF32 path on CPU: a tf32 request is a float32 one
    with _torch_threads(threads if kind == "cpu" else None) as in_force, _current_device(index):
        record_threads = in_force if kind == "cpu" else None
        fingerprint = machine_fingerprint(name)
        path = _cache_path(fingerprint, name, record_threads)
        record = None if force else (_read_record(path) or _UNCACHED.get(path))
        if record is not None and copy_bytes is not None and record.copy_bytes != copy_bytes:
            record = None  # explicit sizes must match the cached ones
        if record is None:
            wanted_copy = copy_bytes if copy_bytes is not None else _default_copy_bytes(kind, index)
            bandwidth, copy_samples = _measure_copy(
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
                record.matmul[fmt] = _measure_matmul(kind, name, fmt, wanted_size, repeats)
                changed = True
        noise = _noise(record.copy_samples_s) if changed or not path.exists() else None
        if noise is None and (changed or not path.exists()):
            _write_record(path, record)
            _UNCACHED.pop(path, None)
        elif noise is not None:
            _UNCACHED[path] = record  # this process reuses it; the next one measures again

    allowed = kind == "cuda" and _tf32_allowed()
    peak = attainable_peak(key, record.peak_flops, tf32_allowed=allowed)
    assert peak is not None  # ``key`` itself was just measured
    source = f"calibration:{fingerprint}"
    if noise is not None:
        source += f" (taken on a noisy machine: {noise}; not cached)"
    return Ceilings(peak_flops=peak, peak_bytes_per_s=record.bytes_per_s, source=source)


#: Calibrations measured on a noisy machine, kept for this process only (never on disk).
_UNCACHED: dict[Path, "CalibrationRecord"] = {}

#: A calibration whose median copy is slower than its best by more than this factor was
#: measured while other work competed for memory bandwidth: its ceilings read low, and every
#: later floor check would trust them. It is used once, and not cached.
NOISY_COPY_SPREAD = 1.25


def _noise(samples: list[float]) -> str | None:
    """Why the copy samples look noisy, or None when they look clean."""
    if len(samples) < 3:
        return None
    best, median = min(samples), sorted(samples)[len(samples) // 2]
    if best > 0 and median > NOISY_COPY_SPREAD * best:
        return f"median copy {median / best:.2f}x the best"
    return None


def ceilings_for(
    device: str, dtype: "str | torch.dtype", *, threads: int | None = None
) -> Ceilings:
    """The ceilings a kernel in ``dtype`` on ``device`` is measured against.

    On CUDA a GPU found in the device table gets its datasheet figures (``source`` names the entry
    and its document); an unknown GPU, or a format its datasheet omits, gets a calibration. On CPU
    it is always the cached calibration, measured now if absent. ``threads`` sets torch's
    intra-op threads for a CPU calibration (restored afterwards); the cache is per thread count.
    """
    key = canonical_dtype(dtype)
    kind, index, name = _resolve_device(device)
    if kind == "cuda":
        import torch

        assert index is not None
        spec = find_device(torch.cuda.get_device_name(index))
        if spec is not None:
            table: PeakFlops = spec.peak_flops
            peak = attainable_peak(key, table.get, tf32_allowed=_tf32_allowed())
            if peak is not None:
                return Ceilings(
                    peak_flops=peak,
                    peak_bytes_per_s=spec.bytes_per_s,
                    source=f"device-table:{spec.key} ({spec.source})",
                )
    return calibrate(name, dtype=key, threads=threads)


assert set(_EXACT_SUBSTITUTES) == set(DTYPES)
