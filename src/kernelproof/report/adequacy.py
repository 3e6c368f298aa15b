"""The terminal view of a task-adequacy audit: one table of mutants, then one verdict line."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelproof.schema import AdequacyReport, MutantResult, OutputAudit


def render_adequacy(report: AdequacyReport, console: Console | None = None) -> None:
    """Print the mutant table (worst seed per output and mutant) and the verdict line."""
    console = console or Console()
    knobs = ", ".join(f"{k}={v}" for k, v in report.knobs.items()) or "no knobs"
    mode = report.tolerance.get("mode", "?")
    console.print(
        f"[bold]audit-task[/bold] {report.task} ({knobs}; {len(report.seeds)} seed(s), "
        f"base seed {report.base_seed}; tolerance: {mode})"
    )
    console.print(_table(report))
    for note in report.notes:
        console.print(f"[dim]note: {note}[/dim]")
    for problem in report.problems:
        console.print(f"[red]problem:[/red] {problem}")
    style = "bold green" if report.adequate else "bold red"
    console.print(Text(report.verdict_line, style=style))


def _table(report: AdequacyReport) -> Table:
    multiple = len({o.index for o in report.outputs}) > 1
    table = Table(show_header=True, header_style="bold")
    if multiple:
        table.add_column("output", justify="right")
    for name in ("mutant", "must", "accepted", "error ratio"):
        table.add_column(name, justify="right" if name == "error ratio" else "left")
    for index, mutants in _worst_per_output(report.outputs).items():
        for mutant in mutants:
            cells = [str(index)] if multiple else []
            table.add_row(*cells, mutant.name, mutant.must, _accepted(mutant), _ratio(mutant))
    return table


def _worst_per_output(outputs: list[OutputAudit]) -> dict[int, list[MutantResult]]:
    """Per output and mutant, the seed's result that is closest to going wrong: for a mutant
    the lowest error ratio, for a control the highest (a wrong outcome on any seed wins)."""
    worst: dict[int, dict[str, MutantResult]] = {}
    for audit in outputs:
        row = worst.setdefault(audit.index, {})
        for mutant in audit.mutants:
            kept = row.get(mutant.name)
            if kept is None or _badness(mutant) > _badness(kept):
                row[mutant.name] = mutant
    return {index: list(row.values()) for index, row in worst.items()}


def _badness(mutant: MutantResult) -> tuple[bool, bool, float]:
    ratio = mutant.error_ratio if mutant.error_ratio is not None else 0.0
    closeness = -ratio if mutant.must == "reject" else ratio
    return (not mutant.as_expected, not mutant.skipped, closeness)


def _accepted(mutant: MutantResult) -> Text:
    if mutant.skipped:
        return Text("skipped", style="dim")
    text = "yes" if mutant.accepted else "no"
    return Text(text, style="green" if mutant.as_expected else "bold red")


def _ratio(mutant: MutantResult) -> str:
    return "" if mutant.error_ratio is None else f"{mutant.error_ratio:.3g}"
