"""Candidates verified per minute on the bundled suite: local pool vs Ray vs a naive
one-process-per-candidate baseline, measured in the same run.

    python benchmarks/throughput.py [--suite tasks --solutions tasks/solutions] [--jobs 2]
                                    [--limit N]

Every mode verifies the same candidates with the same quick settings (correctness only: timing
would make throughput a function of the timing budget). The naive baseline starts a fresh
``kernelproof verify`` process per candidate, paying Python and torch start-up each time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.suite.bench import BenchOptions, run_bench
from kernelproof.suite.layout import bench_items, read_suite

ROOT = Path(__file__).resolve().parents[1]
QUICK = {"seeds": 2, "timing": False, "shrink": False}


def naive(items, scratch: Path) -> float:
    started = time.monotonic()
    for item in items:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "kernelproof.cli",
                "verify",
                str(item.task.reference),
                str(item.candidate),
                "--seeds",
                "2",
                "--no-timing",
                "--no-shrink",
            ],
            capture_output=True,
            check=False,
        )
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", type=Path, default=ROOT / "tasks")
    parser.add_argument("--solutions", type=Path, default=ROOT / "tasks" / "solutions")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=8, help="candidates per mode")
    args = parser.parse_args()
    layout, tasks = read_suite(args.suite, args.solutions)
    items = bench_items(tasks)[: args.limit]
    keep = {(i.task.key, i.candidate) for i in items}
    limited = [t for t in tasks if any((t.key, c) in keep for c in t.candidates)]
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        suite_copy, solutions_copy = _materialise(limited, keep, scratch)
        rows = []
        for label, ray in (("local pool", None), ("Ray (local cluster)", "local")):
            options = BenchOptions(
                jobs=args.jobs,
                ray=ray,
                resume=False,
                overrides=QUICK,
                db_url=f"sqlite:///{scratch / (label[:3] + '.db')}",
            )
            started = time.monotonic()
            outcome = run_bench(suite_copy, solutions_copy, options, Console(quiet=True))
            rows.append((label, len(outcome.reports), time.monotonic() - started))
        rows.append(("naive: one process per candidate", len(items), naive(items, scratch)))
    table = Table(
        title=f"throughput on {len(items)} candidates ({layout} layout, "
        f"--jobs {args.jobs}, correctness only)"
    )
    for column in ("mode", "candidates", "wall s", "candidates / minute"):
        table.add_column(column)
    for label, count, wall in rows:
        table.add_row(label, str(count), f"{wall:.1f}", f"{count / wall * 60:.1f}")
    Console().print(table)


def _materialise(tasks, keep, scratch: Path) -> tuple[Path, Path]:
    """A copy of the suite holding only the chosen candidates (same layout)."""
    suite, solutions = scratch / "suite", scratch / "solutions"
    for task in tasks:
        level = f"level{task.level}"
        (suite / level).mkdir(parents=True, exist_ok=True)
        (suite / level / task.reference.name).write_text(task.reference.read_text())
        folder = solutions / level / task.problem
        folder.mkdir(parents=True, exist_ok=True)
        for candidate in task.candidates:
            if (task.key, candidate) in keep:
                (folder / candidate.name).write_text(candidate.read_text())
    return suite, solutions


if __name__ == "__main__":
    main()
