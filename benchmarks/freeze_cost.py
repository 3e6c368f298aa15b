"""What freezing the candidate between requests costs the controller, per request.

    python benchmarks/freeze_cost.py [--requests 30]

A sandboxed candidate worker (an honest softmax) answers cheap ``plan`` requests; per request
the freezer scans /proc for the worker's processes, stops them, waits until every thread shows
stopped, and reads their CPU clocks; the thaw reads them again and resumes. Prints the medians
of the scan, the wait for the stops to land and the thaw, and the request round trip with and
without the freezer.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kernelproof.config import resolve_settings
from kernelproof.protocol.requests import PlanRequest
from kernelproof.tasks.source import read_task
from kernelproof.workers.pair import WorkerPair

ROOT = Path(__file__).resolve().parents[1]
CANDIDATE = """import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        candidate = Path(folder) / "candidate.py"
        candidate.write_text(CANDIDATE)
        task = read_task(ROOT / "examples" / "softmax" / "reference.py")
        with WorkerPair(task=task, candidate_path=candidate, settings=resolve_settings()) as pair:
            assert pair.start_candidate().ok
            worker = pair.candidate
            freezer = worker.freezer
            assert freezer is not None
            scans: list[float] = []
            scan = freezer._scan

            def timed_scan() -> list[int]:
                started = time.perf_counter()
                found = scan()
                scans.append(time.perf_counter() - started)
                return found

            freezer._scan = timed_scan  # type: ignore[method-assign]
            rounds: dict[str, list[float]] = {"frozen": [], "not frozen": []}
            waits, thaws = [], []
            for label in rounds:
                if label == "not frozen":
                    worker.thaw()
                    worker.freezer = None
                for _ in range(args.requests):
                    started = time.perf_counter()
                    if worker.freezer is not None:
                        worker.thaw()
                        thaws.append(time.perf_counter() - started)
                    assert pair.ask_candidate(PlanRequest(knobs=task.default_knobs)).ok
                    rounds[label].append(time.perf_counter() - started)
                    if worker.freezer is not None:
                        waits.append(freezer.stop_wait_s)
    ms = 1e3
    print(
        f"/proc scan: median {statistics.median(scans) * ms:.2f} ms, "
        f"{len(scans) / args.requests:.1f} per request"
    )
    print(
        f"wait for the stops to land: median {statistics.median(waits) * ms:.2f} ms, "
        f"max {max(waits) * ms:.1f} ms; thaw: median {statistics.median(thaws) * ms:.2f} ms"
    )
    for label, times in rounds.items():
        print(f"request round trip, {label}: median {statistics.median(times) * ms:.1f} ms")


if __name__ == "__main__":
    main()
