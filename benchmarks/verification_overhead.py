"""Fixed cost of one verification, and what the integrity probes add to it.

    python benchmarks/verification_overhead.py [--repeats 5] [--candidate PATH]

Fixed cost = wall time of a verification minus the time spent inside reference and candidate
calls (as each worker measured them). The first verification in a process also pays for the
forkserver start (importing torch once); later ones are "warm". The probe cost compares the
same verification with and without the candidate worker's integrity probes (per-call probes,
audit hooks, op audit). Timing is off: this measures the verification machinery.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.controller.verify import verify

ROOT = Path(__file__).resolve().parents[1]


def inside_calls(report) -> float:
    return sum((t.candidate_s or 0.0) + (t.reference_s or 0.0) for t in report.correctness.tests)


def measure(reference: Path, candidate: Path, probes: bool, seed: int) -> tuple[float, float, int]:
    started = time.monotonic()
    report = verify(reference, candidate, timing=False, base_seed=seed, integrity_probes=probes)
    wall = time.monotonic() - started
    assert report.correctness is not None, report.summary
    return wall, inside_calls(report), len(report.correctness.tests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--candidate", type=Path, default=ROOT / "examples/softmax/correct.py")
    args = parser.parse_args()
    reference = args.candidate.parent / "reference.py"
    cold_wall, cold_calls, cells = measure(reference, args.candidate, True, 0)
    rows: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for repeat in range(args.repeats):
        for probes in (True, False):  # interleaved, so drift hits both alike
            wall, calls, _ = measure(reference, args.candidate, probes, repeat + 1)
            rows[probes].append((wall, calls))
    table = Table(title=f"verification overhead: {args.candidate.relative_to(ROOT)} ({cells} cells)")
    for column in ("run", "wall s (median)", "inside calls s", "fixed cost s", "per cell ms"):
        table.add_column(column)
    table.add_row("first (forkserver start)", f"{cold_wall:.2f}", f"{cold_calls:.3f}",
                  f"{cold_wall - cold_calls:.2f}", f"{(cold_wall - cold_calls) / cells * 1e3:.0f}")
    fixed = {}
    for probes, label in ((True, "warm, probes on"), (False, "warm, probes off")):
        walls = [w for w, _ in rows[probes]]
        costs = [w - c for w, c in rows[probes]]
        fixed[probes] = statistics.median(costs)
        table.add_row(label, f"{statistics.median(walls):.2f}",
                      f"{statistics.median(c for _, c in rows[probes]):.3f}",
                      f"{fixed[probes]:.2f}", f"{fixed[probes] / cells * 1e3:.0f}")
    Console().print(table)
    print(f"fixed cost per verification (warm): {fixed[True]:.2f} s with probes; "
          f"probes add {fixed[True] - fixed[False]:.2f} s "
          f"({(fixed[True] - fixed[False]) / cells * 1e3:.0f} ms per cell)")


if __name__ == "__main__":
    main()
