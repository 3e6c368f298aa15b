"""The drift view in the terminal (``kernelproof guard report``) and the shape extension's
proposals (``kernelproof guard shapes``)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelproof.report import formatting as fmt
from kernelproof.schema.drift import DriftSummary

#: Outside signatures listed in the terminal; the JSON and HTML hold all of them.
OUTSIDE_SHOWN = 8


def render_drift(summary: DriftSummary, console: Console) -> None:
    """One row per signature dimension (shares over the whole log), the values the matrix did
    not cover, the signatures outside the envelope, and the log's damaged lines."""
    inside = fmt.percent(summary.inside_envelope / summary.calls) if summary.calls else "-"
    table = Table(
        title=f"drift of {escape(summary.candidate_path or 'the candidate')}: "
        f"{summary.calls} call(s) in {len(summary.windows)} window(s), "
        f"{inside} inside the envelope"
    )
    for header in ("dimension", "verified", "calls", "inside", "near edge", "outside"):
        table.add_column(
            header,
            overflow="fold",
            justify="right" if header in ("calls", "inside", "near edge", "outside") else "left",
        )
    for row in summary.dimensions:
        total = row.total
        outside = fmt.percent(total.share(total.outside))
        table.add_row(
            escape(row.name),
            escape(row.verified),
            str(total.calls),
            fmt.percent(total.share(total.inside)),
            fmt.percent(total.share(total.near_edge)),
            f"[red]{outside}[/red]" if total.outside else outside,
        )
    console.print(table)
    values = summary.values
    if values.sampled:
        decades = ", ".join(
            f"1e{d}: {n}" if d != "zero" else f"all zero: {n}"
            for d, n in sorted(
                values.magnitude_decades.items(), key=lambda item: _decade_order(item[0])
            )
        )
        console.print(
            f"values of {values.sampled} sampled call(s): largest magnitude by "
            f"decade {escape(decades)}; {values.non_finite} with Inf/NaN, "
            f"{values.subnormal} subnormal, {values.huge} huge"
        )
    for line in summary.uncovered_values:
        console.print(f"[yellow]not covered by the matrix:[/yellow] {escape(line)}")
    for entry in summary.outside[:OUTSIDE_SHOWN]:
        console.print(f"outside: {escape(entry.signature.describe())} x{entry.calls}")
    if len(summary.outside) > OUTSIDE_SHOWN:
        console.print(f"... and {len(summary.outside) - OUTSIDE_SHOWN} more outside signature(s)")
    for problem in summary.problems:
        console.print(f"[yellow]damaged log line:[/yellow] {escape(problem)}")
    if summary.outside:
        task = summary.reference_path
        console.print(
            "turn the outside signatures into task shapes: kernelproof guard shapes "
            f"{escape(summary.log)} --task "
            + (escape(task) if task else "<the task file the report verified>")
        )


def _decade_order(decade: str) -> float:
    return float("-inf") if decade == "zero" else float(decade)
