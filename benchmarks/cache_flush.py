"""What each cold-cache flush costs, and what the timed call then measures.

    python benchmarks/cache_flush.py [--calls 40]

For a few CPU calls (memory-bound and with weights), prints the median flush cost and the
median call time after: no flush (hot), the data flush (the call's own lines evicted with
clflush, the default) and the full flush (a buffer twice the last-level cache written). The data
flush should make calls about as slow as the full flush does (their data comes from DRAM) at a
small fraction of its cost; with the full flush, framework overhead (code, allocator state) is
cold too, which inflates small calls.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from kernelproof.timing.cache_eviction import reachable_tensors
from kernelproof.timing.call_timer import CallTimer


def cases() -> dict[str, tuple[Callable[..., Any], Callable[[], list[Any]], list[Any]]]:
    linear = torch.nn.Linear(1024, 1024)
    return {
        "softmax 8x1000 (32 KiB)": (
            lambda x: torch.softmax(x, -1),
            lambda: [torch.randn(8, 1000)],
            [],
        ),
        "softmax 64x4096 (1 MiB)": (
            lambda x: torch.softmax(x, -1),
            lambda: [torch.randn(64, 4096)],
            [],
        ),
        "softmax 512x4096 (8 MiB)": (
            lambda x: torch.softmax(x, -1),
            lambda: [torch.randn(512, 4096)],
            [],
        ),
        "linear 64x1024 @ 1024x1024 (4 MiB weights)": (
            linear,
            lambda: [torch.randn(64, 1024)],
            reachable_tensors(linear),
        ),
    }


def measure(
    timer: CallTimer,
    fn: Callable[..., Any],
    make: Callable[[], list[Any]],
    resident: list[Any],
    calls: int,
) -> tuple[float, float]:
    """Median flush and call seconds over ``calls`` calls, each on fresh inputs."""
    flushes, times = [], []
    with torch.no_grad():
        for _ in range(3):
            fn(*make())
        for _ in range(calls):
            inputs = make()
            started = time.perf_counter()
            timer.flush([*inputs, *resident])
            flushed = time.perf_counter()
            fn(*inputs)
            times.append(time.perf_counter() - flushed)
            flushes.append(flushed - started)
    return statistics.median(flushes), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    timers = {
        "hot": CallTimer.for_device("cpu", hot=True),
        "data": CallTimer.for_device("cpu", cache_flush="data"),
        "full": CallTimer.for_device("cpu", cache_flush="full"),
    }
    if timers["data"].evictor is None:
        Console().print("[yellow]no compiled evictor here: 'data' falls back to 'full'[/]")
    table = Table(title=f"cold-cache flushes, 1 thread, median of {args.calls} calls")
    for column in ("call", "flush", "flush cost us", "call us"):
        table.add_column(column)
    for name, (fn, make, resident) in cases().items():
        for label, timer in timers.items():
            flush_s, call_s = measure(timer, fn, make, resident, args.calls)
            table.add_row(
                name if label == "hot" else "", label, f"{flush_s * 1e6:.1f}", f"{call_s * 1e6:.1f}"
            )
    Console().print(table)


if __name__ == "__main__":
    main()
