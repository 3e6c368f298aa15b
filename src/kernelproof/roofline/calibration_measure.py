"""Measuring a machine's ceilings: streaming-copy bandwidth and matmul throughput.

Each measurement is the best of several repeats after a warm-up: a ceiling estimates what the
machine *can* do, and noise only ever makes a run slower. The record these go into is
:mod:`kernelproof.roofline.calibration_record`; the choice of ceilings from them is
:mod:`kernelproof.roofline.calibration`.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kernelproof.errors import UsageError
from kernelproof.roofline.calibration_record import MatmulMeasurement
from kernelproof.roofline.devices import find_device

if TYPE_CHECKING:
    import torch

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


def tf32_allowed() -> bool:
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
def cuda_matmul_format(key: str) -> Iterator[None]:
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
def cpu_matmul_format() -> Iterator[None]:
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
def torch_threads(threads: int | None) -> Iterator[int]:
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
def current_device(index: int | None) -> Iterator[None]:
    """Make CUDA device ``index`` current, so events and streams belong to it (no-op on CPU)."""
    if index is None:
        yield
        return
    import torch

    with torch.cuda.device(index):
        yield


def cpu_llc_bytes() -> int:
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
        size = parse_cache_size(size_text)
        if level > best_level:
            best_level, instances = level, {}
        if level == best_level:
            instances[shared] = size
    return sum(instances.values())


def parse_cache_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    try:
        if text and text[-1] in units:
            return int(text[:-1]) * units[text[-1]]
        return int(text)
    except ValueError:
        return 0


def default_copy_bytes(kind: str, index: int | None) -> int:
    import torch

    if kind == "cpu":
        wanted = max(CPU_MIN_COPY_BYTES, LLC_MULTIPLE * cpu_llc_bytes())
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


def time_calls(fn: Callable[[], object], kind: str, repeats: int) -> list[float]:
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


def measure_copy(
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
        samples = time_calls(stream, kind, repeats)
        if moved / min(samples) > best_rate:
            best_rate, best_samples = moved / min(samples), samples
    return best_rate, best_samples


def torch_dtype(key: str) -> torch.dtype:
    import torch

    return {
        "float64": torch.float64,
        "float32": torch.float32,
        "tf32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
    }[key]


def measure_matmul(
    kind: str, device: str, key: str, max_size: int, repeats: int
) -> MatmulMeasurement:
    """Best throughput of square matmuls in format ``key``, over sizes doubling up to
    ``max_size`` (or until one call lasts ``MATMUL_TARGET_S``). Every size of the ramp is
    measured, because the fastest is not always the largest: on a CPU with a small L2 a
    2048^3 sgemm ran at 45 GFLOP/s while an honest 64x1024 @ 1024x1024 linear layer
    reached 70, which put a measured time under the "physical" floor."""
    import torch

    fmt = cpu_matmul_format() if kind == "cpu" else cuda_matmul_format(key)
    dtype = torch_dtype(key)
    best: MatmulMeasurement | None = None
    with fmt, torch.no_grad():
        size = min(MATMUL_START_SIZE, max_size)
        while True:
            a = torch.randn(size, size, dtype=dtype, device=device)
            b = torch.randn(size, size, dtype=dtype, device=device)
            samples = time_calls(lambda: torch.mm(a, b), kind, repeats)  # noqa: B023 - timed before the loop moves on
            rate = 2 * size**3 / min(samples)
            if best is None or rate > best.flops_per_s:
                best = MatmulMeasurement(
                    size=size, max_size=max_size, flops_per_s=rate, samples_s=samples
                )
            if min(samples) >= MATMUL_TARGET_S or size >= max_size:
                break
            size = min(size * 2, max_size)
    assert best is not None
    return best
