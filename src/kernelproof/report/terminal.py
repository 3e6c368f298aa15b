"""The terminal summary of a report: the verdict, why, and where to look next."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kernelproof.schema import Report, Severity, TestOutcome, Verdict

VERDICT_STYLE = {
    Verdict.VERIFIED: "bold white on green",
    Verdict.INCORRECT: "bold white on red",
    Verdict.SUSPECT: "bold black on yellow",
    Verdict.BROKEN: "bold white on magenta",
    Verdict.ERROR: "bold white on blue",
}

SEVERITY_STYLE = {
    Severity.FAIL: "bold red",
    Severity.SUSPECT: "bold yellow",
    Severity.WARN: "yellow",
    Severity.INFO: "dim",
}

#: Findings shown per severity before the rest are summarised in one line.
SHOWN_PER_SEVERITY = 6


def render_report(report: Report, console: Console | None = None) -> None:
    """Print a brief, readable summary of ``report``."""
    console = console or Console(stderr=False)
    title = Text(f" {report.verdict.value.upper()} ", style=VERDICT_STYLE[report.verdict])
    candidate = report.candidate.path if report.candidate else "?"
    reference = report.reference.path if report.reference else "?"
    console.print(Panel(
        Text.assemble(title, "  ", report.summary),
        title=f"kernelproof: {candidate} vs {reference}", title_align="left",
    ))
    _render_findings(report, console)
    _render_correctness(report, console)
    _render_timing(report, console)
    console.print(
        f"[dim]{report.environment.device} ({report.environment.device_name}), "
        f"{report.environment.threads} threads, torch {report.environment.versions.get('torch')}, "
        f"{report.duration_s:.1f} s[/dim]"
    )


def _render_findings(report: Report, console: Console) -> None:
    if not report.findings:
        return
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("finding", ratio=1)
    shown: Counter[Severity] = Counter()
    hidden: Counter[Severity] = Counter()
    for finding in report.findings:
        if shown[finding.severity] >= SHOWN_PER_SEVERITY:
            hidden[finding.severity] += 1
            continue
        shown[finding.severity] += 1
        table.add_row(Text(finding.severity.value, style=SEVERITY_STYLE[finding.severity]),
                      finding.check, finding.message)
    console.print(table)
    for severity, count in hidden.items():
        console.print(f"[dim]... and {count} more {severity.value} finding(s) in the JSON report[/dim]")


def _render_correctness(report: Report, console: Console) -> None:
    correctness = report.correctness
    if correctness is None:
        return
    counts = Counter(t.outcome for t in correctness.tests)
    parts = [f"{counts[o]} {o.value}" for o in TestOutcome if counts[o]]
    ratios = [t.error_ratio for t in correctness.tests
              if t.error_ratio is not None and t.outcome is TestOutcome.PASSED]
    worst = f", worst passing error ratio {max(ratios):.2g}" if ratios else ""
    console.print(
        f"correctness: {len(correctness.tests)} variants: {', '.join(parts)}{worst}; "
        f"seeds {correctness.seeds} (reproduce with --seed {correctness.base_seed})"
    )
    if correctness.scaled_down:
        console.print(f"[yellow]note:[/yellow] {correctness.scaled_down}")


def _render_timing(report: Report, console: Console) -> None:
    timing = report.timing
    if timing is None:
        return
    low, high = timing.speedup_ci
    console.print(
        f"timing: speedup {timing.speedup:.3g}x (95% CI {low:.3g}-{high:.3g}); reference "
        f"{timing.reference.median_s * 1e3:.3g} ms, candidate {timing.candidate.median_s * 1e3:.3g} ms"
    )
