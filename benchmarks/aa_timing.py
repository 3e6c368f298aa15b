"""A/A timing: identical code on both sides must get a speedup interval that contains 1.0.

    python benchmarks/aa_timing.py [--tasks level1/10_Softmax,...] [--limit N] [--profile default]

For every suite task (or the ones named), the reference itself is the candidate (renamed
``ModelNew``) and is verified with timing on, with the given profile, at every timed shape.
Prints the pair-level coverage (the share of (task, shape) pairs whose 95% interval contains
1.0, which should be 95% or more), the worst pairs, the between-pair spread in force, and the
time it all took. ``--no-spread`` shows the coverage without the between-pair spread (the
intervals built from rounds alone), on the same runs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.controller.verify import verify
from kernelproof.timing.process_spread import Z_95

ROOT = Path(__file__).resolve().parents[1]


def _tasks(names: str | None, limit: int | None) -> list[Path]:
    if names:
        paths = [ROOT / "tasks" / f"{name}.py" for name in names.split(",")]
        missing = [str(p.relative_to(ROOT)) for p in paths if not p.is_file()]
        if missing:
            raise SystemExit(f"no such task: {', '.join(missing)}; see tasks/level*/")
        return paths
    found = sorted((ROOT / "tasks").glob("level*/*.py"))
    return found[:limit] if limit else found


def _unwidened(speedup: float, low: float, high: float, spread: float) -> tuple[float, float]:
    """The interval before the spread was added (the inverse of timing.process_spread.widen)."""
    if spread <= 0 or not (speedup > 0 and low > 0 and math.isfinite(high)):
        return low, high
    extra = (Z_95 * spread) ** 2
    below = math.sqrt(max(0.0, math.log(speedup / low) ** 2 - extra))
    above = math.sqrt(max(0.0, math.log(high / speedup) ** 2 - extra))
    return speedup * math.exp(-below), speedup * math.exp(above)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", default=None, help="comma-separated, e.g. level1/10_Softmax")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    console = Console(width=120)
    rows: list[tuple[str, str, float, float, float, bool, bool]] = []
    started = time.monotonic()
    spreads: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for task in _tasks(args.tasks, args.limit):
            candidate = Path(scratch) / f"{task.stem}_same.py"
            candidate.write_text(task.read_text() + "\n\nModelNew = Model\n")
            report = verify(
                task, candidate, profile=args.profile, base_seed=args.seed, allow_torch=True
            )
            timing = report.timing
            label = f"{task.parent.name}/{task.stem}"
            if timing is None:
                console.print(f"{label}: not timed ({report.verdict.value}: {report.summary})")
                continue
            for shape in timing.per_shape:
                low, high = shape.speedup_ci
                spread = shape.process_spread or 0.0
                spreads.append(spread)
                raw_low, raw_high = _unwidened(shape.speedup, low, high, spread)
                rows.append(
                    (
                        label,
                        shape.variant,
                        shape.speedup,
                        low,
                        high,
                        low <= 1.0 <= high,
                        raw_low <= 1.0 <= raw_high,
                    )
                )
                console.print(
                    f"{label} {shape.variant}: {shape.speedup:.3f} "
                    f"[{low:.3f}, {high:.3f}] (rounds alone [{raw_low:.3f}, "
                    f"{raw_high:.3f}])"
                )
    elapsed = time.monotonic() - started
    # An interval the bootstrap could not compute ([0, inf]: too few samples in the budget)
    # says nothing; it is counted apart, never as covering 1.0.
    unmeasured = [r for r in rows if not math.isfinite(r[4])]
    rows = [r for r in rows if math.isfinite(r[4])]
    covered = sum(r[5] for r in rows)
    covered_raw = sum(r[6] for r in rows)
    table = Table(title="worst (task, shape) pairs: furthest from 1.0")
    for column in ("task", "shape", "speedup", "95% CI", "contains 1.0"):
        table.add_column(column)
    for row in sorted(rows, key=lambda r: -abs(math.log(r[2])) if r[2] > 0 else 0)[:12]:
        table.add_row(
            row[0],
            row[1],
            f"{row[2]:.3f}",
            f"[{row[3]:.3f}, {row[4]:.3f}]",
            "yes" if row[5] else "NO",
        )
    console.print(table)
    if rows:
        console.print(
            f"pairs: {len(rows)}; coverage with the between-pair spread "
            f"({min(spreads):.4f}-{max(spreads):.4f} by call time): "
            f"{covered}/{len(rows)} = {covered / len(rows):.1%}; "
            f"from rounds alone: {covered_raw}/{len(rows)} = "
            f"{covered_raw / len(rows):.1%}; {len(unmeasured)} more pair(s) had too few "
            f"samples for an interval; {elapsed:.0f} s"
        )
        # The bias left on identical code: how far from 1.0 the point estimates land.
        bias = sorted(abs(math.log(r[2])) for r in rows if r[2] > 0)
        if bias:
            console.print(
                f"remaining bias |ln speedup| on identical code: median "
                f"{statistics.median(bias):.4f}, 95th percentile "
                f"{bias[min(len(bias) - 1, int(0.95 * len(bias)))]:.4f}, "
                f"largest {bias[-1]:.4f}"
            )


if __name__ == "__main__":
    main()
