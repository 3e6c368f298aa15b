"""How much of the calibrated bandwidth a plain ``dst.copy_(src)`` reaches on CPU, per buffer size.

A sanity check of the calibration: buffers beyond the last-level cache should land near 1.0 (the
calibration is itself a copy, so a figure far from 1.0 means the machine is noisy or the cached
calibration is stale: rerun with ``--force``). Buffers that fit in cache may exceed 1.0.

    python benchmarks/roofline_copy.py [--threads N] [--repeats R] [--force]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from kernelproof.roofline import calibrate, load_calibration

#: Buffer sizes in MiB: one that fits in a typical LLC, then sizes well beyond it.
SIZES_MIB = (16, 64, 256, 1024)


def time_copy(numel: int, repeats: int) -> list[float]:
    """Seconds per ``dst.copy_(src)`` of ``numel`` float32 elements, after one warm-up."""
    src = torch.ones(numel, dtype=torch.float32)
    dst = torch.zeros_like(src)
    dst.copy_(src)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        dst.copy_(src)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument("--repeats", type=int, default=10, help="samples per size")
    parser.add_argument("--force", action="store_true", help="recalibrate even if cached")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    ceilings = calibrate("cpu", force=args.force)
    record = load_calibration("cpu")
    assert record is not None
    print(
        f"calibration {ceilings.source}: {ceilings.peak_bytes_per_s / 1e9:.2f} GB/s "
        f"({record.copy_bytes >> 20} MiB copy, {record.threads} threads, {record.measured_at})"
    )
    print(f"{'size MiB':>9} {'best ms':>9} {'median ms':>10} {'best GB/s':>10} {'fraction':>9}")
    for mib in SIZES_MIB:
        numel = (mib << 20) // 4
        samples = time_copy(numel, args.repeats)
        rate = 2 * numel * 4 / min(samples)
        print(
            f"{mib:>9} {min(samples) * 1e3:>9.2f} {statistics.median(samples) * 1e3:>10.2f} "
            f"{rate / 1e9:>10.2f} {rate / ceilings.peak_bytes_per_s:>9.2f}"
        )


if __name__ == "__main__":
    main()
