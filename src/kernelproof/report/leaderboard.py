"""The bench leaderboard in the terminal: per task verdicts and speedups, then the metrics."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kernelproof.report import formatting as fmt
from kernelproof.report.colours import verdict_markup
from kernelproof.report.sentences import headline
from kernelproof.schema.interval import measured_interval
from kernelproof.schema.suite import BenchOutcome


def render_leaderboard(outcome: BenchOutcome, console: Console) -> None:
    """The per-verification table of a bench run, then its suite metrics."""
    table = Table(title=f"kernelproof bench: run {outcome.run_id} ({outcome.layout} layout)")
    for column in ("task", "candidate", "verdict", "speedup", "95% CI", "vs compile", "why"):
        table.add_column(column, overflow="fold")
    for item, report in sorted(
        outcome.reports,
        key=lambda pair: (pair[0].task.level or 0, _problem(pair[0].task.problem), pair[0].sample),
    ):
        timing = report.timing
        # A speedup without an interval (too few rounds) is not shown as one: no metric uses it.
        measured = timing is not None and measured_interval(timing.speedup_ci) is not None
        table.add_row(
            item.task.key,
            item.candidate.name,
            verdict_markup(report.verdict),
            f"{timing.speedup:.2f}x"
            if timing and measured
            else ("n/a (no interval)" if timing else "-"),
            fmt.interval(timing.speedup_ci) if timing else "-",
            f"{timing.baselines.torch_compile:.2f}x"
            if timing and timing.baselines.torch_compile
            else "-",
            headline(report.summary, 70) if report.verdict.value != "verified" else "",
        )
    console.print(table)
    missing = [t.key for t in outcome.tasks if not t.candidates]
    overall = outcome.summary.overall
    fast = ", ".join(f"fast_{p:g}={v:.2f}" for p, v in sorted(overall.fast_p.items()))
    geomean = f"{overall.geomean_speedup:.3f}x" if overall.geomean_speedup else "n/a"
    console.print(
        f"{overall.tasks} tasks, {overall.samples} samples: verdicts {overall.verdicts}; "
        f"correct {overall.correctness_rate or 0:.0%}; {fast}; geomean speedup {geomean} "
        f"over {overall.timed_tasks} timed tasks"
        + (
            f" ({fmt.plural(overall.shapes_without_interval, 'shape')} left out: too few rounds "
            "for an interval)"
            if overall.shapes_without_interval
            else ""
        )
        + f"; {outcome.resumed} resumed from the store; "
        f"{len(missing)} task(s) without a solution; {outcome.wall_s:.0f} s"
    )
    for level, group in outcome.summary.levels.items():
        console.print(
            f"  level {level}: {group.tasks} tasks, correct "
            f"{group.correctness_rate or 0:.0%}, fast_1={group.fast_p.get(1.0, 0):.2f}"
        )


def _problem(problem: str) -> int:
    return int(problem) if problem.isdigit() else 0
