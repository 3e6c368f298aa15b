"""Does kernelproof's timing tell the truth? Four measurements, printed as tables.

    python benchmarks/timing_quality.py [--runs 20] [--budget 3]

1. Self-consistency: a candidate identical to the reference; its speedup CI should contain 1.0
   in at least 19 of 20 runs.
2. Resolution: a candidate doing 1.25x the work; reported slower, with a CI excluding 1.0.
3. Precision per second: the same pair and the same wall-clock budget, measured side by side:
   the relative CI half-width of kernelproof against torch.utils.benchmark's blocked_autorange
   (its per-block times bootstrapped the same way). ``--pair small`` is the softmax example
   (1 MiB of inputs), ``--pair large`` the LayerNorm suite task (16 MiB), each against a
   candidate doing 1.25x the work.
4. Roofline sanity: no honest example's candidate median falls below the floor.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from kernelproof.controller.verify import verify

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "examples/softmax/reference.py"
IDENTICAL = ROOT / "benchmarks/candidates/softmax_identical.py"
EXTRA = ROOT / "benchmarks/candidates/softmax_extra_quarter.py"

#: The precision pairs: reference task, 1.25x-work candidate, and the same pair as statements
#: for blocked_autorange (with the inputs they run on).
PAIRS = {
    "small": (
        REFERENCE,
        EXTRA,
        lambda: {"x": torch.randn(64, 4096)},
        {
            "reference": "torch.softmax(x, dim=-1)",
            "candidate": "torch.softmax(x, dim=-1); torch.softmax(x[:16], dim=-1)",
        },
    ),
    "large": (
        ROOT / "tasks/level1/7_LayerNorm.py",
        ROOT / "benchmarks/candidates/layernorm_extra_quarter.py",
        lambda: {"x": torch.randn(16, 256, 1024), "norm": torch.nn.LayerNorm(1024)},
        {"reference": "norm(x)", "candidate": "norm(x); norm(x[:4])"},
    ),
}

#: Only the timing phase matters here: one seed, no other variants, default shape only.
TIMING_ONLY = dict(
    seeds=1,
    shape_variants=False,
    value_variants=False,
    layout_variants=False,
    timing_shapes=False,
    compile_baseline=False,
)


def timed(candidate: Path, budget: float, seed: int, reference: Path = REFERENCE):
    report = verify(reference, candidate, budget_s=budget, base_seed=seed, **TIMING_ONLY)
    assert report.timing is not None, report.summary
    return report.timing


def self_consistency(runs: int, budget: float, console: Console) -> None:
    table = Table(title="1. identical candidate: does the CI contain 1.0?")
    for column in ("run", "speedup", "95% CI", "samples", "stop"):
        table.add_column(column)
    contained = 0
    for run in range(runs):
        timing = timed(IDENTICAL, budget, 1000 + run)
        low, high = timing.speedup_ci
        contained += low <= 1.0 <= high
        table.add_row(
            str(run),
            f"{timing.speedup:.3f}",
            f"[{low:.3f}, {high:.3f}]",
            str(len(timing.candidate.samples)),
            timing.stop_reason,
        )
    console.print(table)
    console.print(f"CI contains 1.0 in {contained} of {runs} runs (target: >= {runs - runs // 20})")


def resolution(budget: float, console: Console) -> None:
    timing = timed(EXTRA, budget, 7)
    low, high = timing.speedup_ci
    console.print(
        f"2. 1.25x-work candidate: speedup {timing.speedup:.3f} (expected ~0.80), "
        f"CI [{low:.3f}, {high:.3f}], excludes 1.0: {high < 1.0}"
    )


def precision_per_second(
    budget: float, repeats: int, console: Console, pair: str = "small"
) -> None:
    """Each repeat times the pair with kernelproof, then gives blocked_autorange the same wall
    time (half per statement); the widths are compared per repeat and by their medians, because
    one run on a shared machine says little."""
    from torch.utils.benchmark import Timer

    reference, candidate, make_globals, statements = PAIRS[pair]
    names = make_globals()
    table = Table(title=f"3. precision per second, {pair} pair (same pair, same timing wall time)")
    for column in (
        "repeat",
        "kernelproof speedup",
        "kernelproof CI +-",
        "calls",
        "blocked_autorange speedup",
        "blocked_autorange CI +-",
        "blocks",
        "timing s",
    ):
        table.add_column(column)
    ours_widths, theirs_widths = [], []
    for repeat in range(repeats):
        timing = timed(candidate, budget, 11 + repeat, reference)
        ours = (timing.speedup_ci[1] - timing.speedup_ci[0]) / 2 / timing.speedup
        blocks = {
            name: Timer(statement, globals={**names, "torch": torch})
            .blocked_autorange(min_run_time=timing.elapsed_s / 2)
            .times
            for name, statement in statements.items()
        }
        speedup, half_width = block_bootstrap(
            blocks["reference"], blocks["candidate"], seed=3 + repeat
        )
        ours_widths.append(ours)
        theirs_widths.append(half_width)
        table.add_row(
            str(repeat),
            f"{timing.speedup:.3f}",
            f"{ours:.2%}",
            str(len(timing.candidate.samples)),
            f"{speedup:.3f}",
            f"{half_width:.2%}",
            str(len(blocks["candidate"])),
            f"{timing.elapsed_s:.1f}",
        )
    console.print(table)
    ours_median, theirs_median = statistics.median(ours_widths), statistics.median(theirs_widths)
    narrower = sum(o <= t for o, t in zip(ours_widths, theirs_widths))
    console.print(f"duty cycle of the last repeat: {timing.duty_cycle}")
    console.print(
        f"median CI half-width: kernelproof {ours_median:.2%} (cold caches, fresh "
        f"inputs every call, two processes) vs blocked_autorange {theirs_median:.2%} "
        f"(hot, one input, in-process); kernelproof no wider in {narrower} of "
        f"{repeats} repeats"
    )


#: Resamples of blocked_autorange's block times, as many as kernelproof's own bootstrap draws.
BLOCK_RESAMPLES = 2000


def block_bootstrap(
    reference: list[float], candidate: list[float], seed: int
) -> tuple[float, float]:
    """The ratio of median block times and its 95% percentile-bootstrap half-width (relative),
    each side's blocks resampled on their own: how blocked_autorange's blocks would be read."""
    gen = np.random.default_rng(seed)
    ref, cand = np.asarray(reference), np.asarray(candidate)
    ratios = np.median(gen.choice(ref, (BLOCK_RESAMPLES, ref.size)), axis=1) / np.median(
        gen.choice(cand, (BLOCK_RESAMPLES, cand.size)), axis=1
    )
    low, high = np.quantile(ratios, [0.025, 0.975])
    speedup = float(np.median(ref) / np.median(cand))
    return speedup, float((high - low) / 2 / speedup)


def roofline_sanity(budget: float, console: Console) -> None:
    table = Table(title="4. honest examples against the speed-of-light floor")
    for column in ("candidate", "median us", "floor us", "SOL fraction", "below floor"):
        table.add_column(column)
    for candidate in sorted((ROOT / "examples").glob("*/correct.py")):
        report = verify(
            candidate.parent / "reference.py",
            candidate,
            budget_s=budget,
            base_seed=5,
            **TIMING_ONLY,
        )
        if report.roofline is None or report.timing is None:
            table.add_row(str(candidate.relative_to(ROOT)), "-", "-", "-", report.summary[:40])
            continue
        fraction = report.roofline.sol_fraction.candidate or 0.0
        table.add_row(
            str(candidate.relative_to(ROOT)),
            f"{report.timing.candidate.median_s * 1e6:.1f}",
            f"{report.roofline.floor_s * 1e6:.1f}",
            f"{fraction:.3f}",
            str(any(f.check == "below-floor" for f in report.findings)),
        )
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--budget", type=float, default=3.0)
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="precision-per-second repeats (each one pair of measurements)",
    )
    parser.add_argument("--only", choices=["consistency", "resolution", "precision", "roofline"])
    parser.add_argument(
        "--pair", choices=sorted(PAIRS), default="small", help="the precision-per-second pair"
    )
    args = parser.parse_args()
    console = Console()
    steps = {
        "consistency": lambda: self_consistency(args.runs, args.budget, console),
        "resolution": lambda: resolution(args.budget, console),
        "precision": lambda: precision_per_second(args.budget, args.repeats, console, args.pair),
        "roofline": lambda: roofline_sanity(args.budget, console),
    }
    for name, step in steps.items():
        if args.only in (None, name):
            step()


if __name__ == "__main__":
    main()
