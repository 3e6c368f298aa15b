"""Where the timing budget goes: the duty cycle and the samples per side, with the timed-input
pool on and off, side by side in one run.

    python benchmarks/duty_cycle.py [--budget 2] [--repeats 1]

Three calls of different lengths, each under the quick profile's timing (its 2 s budget):
the LayerNorm suite task (16 MiB of inputs, a few ms per call), and the softmax example at
two sizes (about 130 us and 8 us per call here: the issue's 100 us and 10 us classes, the
short one a little under). The duty cycle is the report's
``timing.duty_cycle``: per side, the time inside its timed calls over the wall time of its
batches; ``phase``, over the whole timing phase.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.controller.verify import verify

ROOT = Path(__file__).resolve().parents[1]

#: (label, reference, candidate, knobs of the default shape or None for the task's own).
CASES = [
    (
        "LayerNorm suite task, 16 MiB",
        ROOT / "tasks/level1/7_LayerNorm.py",
        ROOT / "tasks/solutions/level1/7_numba_rows.py",
        None,
    ),
    (
        "softmax 64x4096 (~100 us)",
        ROOT / "examples/softmax/reference.py",
        ROOT / "examples/softmax/correct.py",
        {"batch_size": 64, "dim": 4096},
    ),
    (
        "softmax 8x1024 (~8 us)",
        ROOT / "examples/softmax/reference.py",
        ROOT / "examples/softmax/correct.py",
        {"batch_size": 8, "dim": 1024},
    ),
]

#: Only the timing phase matters: one seed, the default shape, no other variants.
TIMING_ONLY = dict(
    seeds=1, shape_variants=False, value_variants=False, layout_variants=False, shrink=False
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    table = Table(title=f"timing phase, quick profile, {args.budget:g} s budget")
    for column in (
        "case",
        "input pool",
        "median call (ref)",
        "samples ref / cand",
        "duty ref",
        "duty cand",
        "duty phase",
        "phase s",
    ):
        table.add_column(column)
    for label, reference, candidate, knobs in CASES:
        for repeat in range(args.repeats):
            for pool in (True, False):  # side by side, so load hits both alike
                report = verify(
                    reference,
                    candidate,
                    profile="quick",
                    budget_s=args.budget,
                    base_seed=100 + repeat,
                    input_pool=pool,
                    default_knobs=knobs,
                    **TIMING_ONLY,
                )
                timing = report.timing
                if timing is None:
                    table.add_row(label, str(pool), "-", "-", "-", "-", "-", report.summary[:60])
                    continue
                duty = timing.duty_cycle
                table.add_row(
                    label,
                    "on" if pool else "off",
                    f"{timing.reference.median_s * 1e6:.0f} us",
                    f"{len(timing.reference.samples)} / {len(timing.candidate.samples)}",
                    f"{duty.get('reference', 0):.2f}",
                    f"{duty.get('candidate', 0):.2f}",
                    f"{duty.get('phase', 0):.2f}",
                    f"{timing.elapsed_s:.1f}",
                )
    Console().print(table)


if __name__ == "__main__":
    main()
