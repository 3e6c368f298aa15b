"""The terminal summary of a report: the HTML packet's story in brief.

Verdict and why, findings, correctness, inferred assumptions, repro commands, timing per shape
with the baselines, the speed of light, and the command that reruns the whole verification.
Every string that may come from the candidate is printed as plain text, never as rich markup.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import IO

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kernelproof.report import formatting as fmt
from kernelproof.report.colours import verdict_banner_style
from kernelproof.report.commands import verify_command
from kernelproof.report.summary_text import headline, left_out_clause, not_timed_reason
from kernelproof.schema import Report, Severity, TestOutcome, Timing

SEVERITY_STYLE = {
    Severity.FAIL: "bold red",
    Severity.SUSPECT: "bold yellow",
    Severity.WARN: "yellow",
    Severity.INFO: "dim",
}

#: Findings shown per severity before the rest are summarised in one line.
SHOWN_PER_SEVERITY = 6

#: Matrix cells named after an assumption; the packet lists them all.
NAMED_CELLS = 3

#: Repros printed in full; the rest are counted (the packet and the JSON hold them all).
SHOWN_REPROS = 3

#: Width when stdout is not a terminal (a CI log, a pipe, a file). rich falls back to 80
#: columns there, which squeezed the findings column to ~45 characters and cut paths with an
#: ellipsis; logs have no width limit, so a fixed wide layout stays readable.
NON_TTY_WIDTH = 120


def report_console(file: IO[str] | None = None) -> Console:
    """The console the CLI prints reports on: the terminal's width on a TTY (or ``$COLUMNS``
    when set), else :data:`NON_TTY_WIDTH` columns."""
    console = Console(file=file)
    if console.is_terminal or os.environ.get("COLUMNS"):
        return console
    return Console(file=file, width=max(console.width, NON_TTY_WIDTH))


def render_report(report: Report, console: Console | None = None) -> None:
    """Print a brief, readable summary of ``report``."""
    console = console or report_console()
    title = Text(f" {report.verdict.value.upper()} ", style=verdict_banner_style(report.verdict))
    candidate = report.candidate.path if report.candidate else "?"
    reference = report.reference.path if report.reference else "?"
    console.print(
        Panel(
            Text.assemble(title, "  ", headline(report)),
            title=Text(f"kernelproof: {candidate} vs {reference}"),
            title_align="left",
        )
    )
    _render_findings(report, console)
    _render_correctness(report, console)
    _render_assumptions(report, console)
    _render_repros(report, console)
    _render_timing(report, console)
    _render_roofline(report, console)
    _render_e2e(report, console)
    _render_reproduce(report, console)
    environment = report.environment
    console.print(
        Text(
            f"{environment.device} ({environment.device_name or 'unknown device'}), "
            f"{environment.threads} threads, torch {environment.versions.get('torch', '?')}, "
            f"{fmt.seconds(report.duration_s)}",
            style="dim",
        )
    )


def _render_findings(report: Report, console: Console) -> None:
    if not report.findings:
        return
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("severity", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("finding", ratio=1, overflow="fold")  # a long path wraps, never cut
    shown: Counter[Severity] = Counter()
    hidden: Counter[Severity] = Counter()
    for finding in sorted(report.findings, key=lambda f: -f.severity.rank):
        if shown[finding.severity] >= SHOWN_PER_SEVERITY:
            hidden[finding.severity] += 1
            continue
        shown[finding.severity] += 1
        where = ""
        if finding.location is not None:
            where = f" ({finding.location.path}:{finding.location.line})"
        table.add_row(
            Text(finding.severity.value, style=SEVERITY_STYLE[finding.severity]),
            Text(finding.check),
            Text(finding.message + where),
        )
    console.print(table)
    for severity, count in hidden.items():
        console.print(
            Text(
                f"... and {count} more {severity.value} finding(s) in the JSON "
                "report and the HTML packet",
                style="dim",
            )
        )


def _render_correctness(report: Report, console: Console) -> None:
    correctness = report.correctness
    if correctness is None:
        return
    counts = Counter(t.outcome for t in correctness.tests)
    parts = [f"{counts[o]} {o.value}" for o in TestOutcome if counts[o]]
    ratios = [
        t.error_ratio
        for t in correctness.tests
        if t.error_ratio is not None and t.outcome is TestOutcome.PASSED
    ]
    worst = f", worst passing error ratio {max(ratios):.2g}" if ratios else ""
    console.print(
        Text(
            f"correctness: {fmt.plural(len(correctness.tests), 'variant')}: "
            f"{', '.join(parts) or 'none ran'}{worst}; seeds {correctness.seeds} "
            f"(reproduce with --seed {correctness.base_seed})"
        )
    )
    if correctness.scaled_down:
        console.print(Text.assemble(("note: ", "yellow"), correctness.scaled_down))
    if report.envelope is not None and report.envelope.signatures:
        # Where the verdict holds: what kernelproof.guard and the end-to-end check route by.
        console.print(Text(f"envelope: {report.envelope.describe()}", style="dim"))


def _render_assumptions(report: Report, console: Console) -> None:
    if not report.assumptions:
        return
    console.print(Text("assumes:", style="bold"))
    for assumption in report.assumptions:
        named = assumption.variants[:NAMED_CELLS]
        more = len(assumption.variants) - len(named)
        cells = f" ({', '.join(named)}{f' and {more} more' if more else ''})" if named else ""
        console.print(Text(f"  - {assumption.statement}{cells}"))


def _render_repros(report: Report, console: Console) -> None:
    if not report.repros:
        return
    console.print(Text("repro (smallest failing case):", style="bold"))
    for repro in report.repros[:SHOWN_REPROS]:
        console.print(
            Text(
                f"  {repro.failure} -> {fmt.knobs(repro.knobs)}, seed {repro.seed}"
                + (f": {repro.detail}" if repro.detail else "")
            )
        )
        console.print(Text(f"    {repro.command}", style="cyan"), soft_wrap=True)
    if len(report.repros) > SHOWN_REPROS:
        console.print(
            Text(
                f"  ... and {len(report.repros) - SHOWN_REPROS} more, with standalone "
                "scripts, in the JSON report and the HTML packet",
                style="dim",
            )
        )


def _render_timing(report: Report, console: Console) -> None:
    timing = report.timing
    if timing is None:
        console.print(Text(f"timing: not timed: {not_timed_reason(report)}", style="dim"))
        return
    console.print(
        Text(
            f"timing: speedup {fmt.speedup(timing.speedup)} (95% CI "
            f"{fmt.interval(timing.speedup_ci)}) at the default shape; reference "
            f"{fmt.seconds(timing.reference.median_s)}, candidate "
            f"{fmt.seconds(timing.candidate.median_s)} per call ({timing.mode} caches)"
        )
    )
    if len(timing.per_shape) > 1:
        console.print(_per_shape_table(timing))
    if len(timing.per_shape) > 1:
        console.print(Text(_range_line(timing)))
    console.print(Text(_baselines_line(timing)))


def _range_line(timing: Timing) -> str:
    """The speedup's range over the shapes with an interval, and how many were left out."""
    spread = timing.speedup_range
    measured = len(timing.per_shape) - len(timing.shapes_without_interval)
    line = (
        f"speedup over {fmt.plural(measured, 'shape')} with an interval: min "
        f"{fmt.speedup(spread.get('min'))}, median {fmt.speedup(spread.get('median'))}, "
        f"max {fmt.speedup(spread.get('max'))}"
        if spread
        else "speedup range: none (no timed shape has an interval)"
    )
    return line + left_out_clause(timing)


def _per_shape_table(timing: Timing) -> Table:
    table = Table(show_header=True, header_style="bold")
    table.add_column("shape")
    for name in ("reference", "candidate", "speedup", "95% CI"):
        table.add_column(name, justify="right")
    for shape in timing.per_shape:
        low, high = shape.speedup_ci
        style = "green" if low > 1 else "red" if high < 1 else ""
        table.add_row(
            Text(
                fmt.knobs(shape.knobs)
                if shape.variant != "default"
                else f"default ({fmt.knobs(shape.knobs)})"
            ),
            fmt.seconds(shape.reference.median_s),
            fmt.seconds(shape.candidate.median_s),
            Text(fmt.speedup(shape.speedup), style=style),
            fmt.interval(shape.speedup_ci),
        )
    return table


def _baselines_line(timing: Timing) -> str:
    baselines = timing.baselines
    eager = fmt.speedup(baselines.eager) if baselines.eager is not None else "n/a"
    if baselines.torch_compile is not None:
        compiled = fmt.speedup(baselines.torch_compile)
    elif baselines.torch_compile_error:
        compiled = f"failed ({baselines.torch_compile_error})"
    else:
        compiled = "not run"
    return f"baselines: vs eager {eager}, vs torch.compile {compiled}"


def _render_roofline(report: Report, console: Console) -> None:
    roofline = report.roofline
    if roofline is None:
        return
    fraction = roofline.sol_fraction
    console.print(
        Text(
            f"speed of light: floor {fmt.seconds(roofline.floor_s)} ({roofline.bound}-bound); "
            f"reference at {fmt.percent(fraction.reference)}, candidate at "
            f"{fmt.percent(fraction.candidate)} (ceilings: {roofline.ceilings.source})"
        )
    )


def _render_e2e(report: Report, console: Console) -> None:
    from kernelproof.report.e2e_text import e2e_lines

    if report.e2e is not None:
        for line in e2e_lines(report.e2e):
            console.print(Text.assemble(("e2e ", "bold"), line), soft_wrap=True)


def _render_reproduce(report: Report, console: Console) -> None:
    if report.e2e is not None and report.e2e.command:
        console.print(Text.assemble(("reproduce: ", "bold"), report.e2e.command), soft_wrap=True)
        return
    command = verify_command(report)
    console.print(Text.assemble(("reproduce: ", "bold"), command.text), soft_wrap=True)
    if command.unexpressed:
        settings = ", ".join(f"{k}={v!r}" for k, v in command.unexpressed.items())
        console.print(
            Text(f"  (also set through the task's POLICY or the API: {settings})", style="dim")
        )
