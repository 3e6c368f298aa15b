"""The results store in the terminal: ``kernelproof history`` and ``kernelproof compare``.

The rows come from :mod:`kernelproof.store.results`; this module only needs their fields, which
:class:`StoredVerification` and :class:`StoredRun` name, so the report layer never imports the
store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelproof.report import formatting as fmt
from kernelproof.report.colours import verdict_markup
from kernelproof.schema.comparison import ChangeKind, MachineComparison, RunComparison


class StoredVerification(Protocol):
    """The fields of one stored verification that the history table shows."""

    created_at: datetime
    run_id: int
    task_key: str
    sample: int
    candidate_sha256: str | None
    verdict: str
    speedup: float | None
    floor_clamped: bool
    fingerprint: str
    device: str


class StoredRun(Protocol):
    """The fields of one stored run that the tables show."""

    id: int
    label: str | None
    fingerprint: str


#: Changes shown in green in the compare table (regressions are red, the rest plain).
IMPROVEMENTS = (ChangeKind.GAINED_VERIFIED, ChangeKind.FASTER)


def render_history(
    rows: Sequence[StoredVerification],
    runs: Mapping[int, StoredRun],
    store_url: str,
    console: Console,
) -> None:
    """Stored verifications, one per line, in the order given (newest first from the store)."""
    table = Table(title=f"{len(rows)} verification(s) in {escape(store_url)}")
    for header in ("time (UTC)", "run", "task", "candidate", "verdict", "speedup", "machine"):
        # Only the free-text columns may wrap; the rest stay whole on a narrow terminal.
        table.add_column(header, no_wrap=header not in ("run", "task", "machine"), overflow="fold")
    for row in rows:
        run = runs.get(row.run_id)
        table.add_row(
            f"{row.created_at:%m-%d %H:%M}",
            escape(f"{row.run_id}" + (f" {run.label}" if run and run.label else "")),
            escape(f"{row.task_key}" + (f" #{row.sample}" if row.sample else "")),
            (row.candidate_sha256 or "?")[:10],
            verdict_markup(row.verdict),
            speedup_markup(row.speedup, row.floor_clamped),
            escape(f"{row.fingerprint[:8]} {row.device}".strip()),
        )
    console.print(table)


def render_comparison(
    result: RunComparison, first: StoredRun, second: StoredRun, console: Console
) -> None:
    """Run ``second`` against ``first`` task by task, then the counts a CI gate reads."""
    table = Table(title=f"run {second.id} against run {first.id}")
    table.add_column("task", overflow="fold")
    for header in (f"run {first.id}", f"run {second.id}"):
        table.add_column(header, overflow="fold")
    table.add_column("change", no_wrap=True)
    table.add_column("status", no_wrap=True)
    for change in result.changes:
        style = (
            "red" if change.kind.is_regression else ("green" if change.kind in IMPROVEMENTS else "")
        )
        table.add_row(
            escape(change.task_key),
            verdict_markup(change.verdict_a)
            + " "
            + speedup_markup(change.speedup_a, ci=change.ci_a),
            verdict_markup(change.verdict_b)
            + " "
            + speedup_markup(change.speedup_b, ci=change.ci_b),
            "" if change.ratio is None else f"x{change.ratio:.2f}",
            f"[{style}]{change.kind.value}[/{style}]" if style else change.kind.value,
        )
    console.print(table)
    if first.fingerprint != second.fingerprint:
        console.print(
            f"[yellow]note:[/yellow] the runs are from different machines "
            f"({escape(first.fingerprint or '?')} and "
            f"{escape(second.fingerprint or '?')}): speedups may not be comparable"
        )
    counts = result.counts
    geomeans = " -> ".join(
        "-" if g is None else f"{g:.2f}x" for g in (result.geomean_a, result.geomean_b)
    )
    console.print(
        f"{len(result.changes)} tasks: {len(result.regressions)} regression(s) "
        f"({counts['lost-verified']} lost verified, {counts['slower']} slower), "
        f"{counts['gained-verified'] + counts['faster']} improvement(s), "
        f"{counts['unchanged']} unchanged, {counts['only-a']} only in run {first.id}, "
        f"{counts['only-b']} only in run {second.id}; geomean speedup {geomeans}"
    )


def speedup_markup(
    speedup: float | None, floor_clamped: bool = False, ci: tuple[float, float] | None = None
) -> str:
    """``1.23x [1.10, 1.31]`` (escaped markup), ``(floor)`` when raised to the physical floor."""
    if speedup is None:
        return "-"
    text = f"{speedup:.2f}x"
    if ci is not None:
        text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return escape(text + (" (floor)" if floor_clamped else ""))


def render_machine_comparison(result: MachineComparison, console: Console) -> None:
    """Per candidate: one row per machine, the components that differ, and the flags."""
    for group in result.groups:
        table = Table(
            title=f"{escape(group.candidate)} against {escape(group.task)} on "
            f"{len(group.rows)} machines"
        )
        for header in ("machine", "verdict", "speedup [95% CI]", "%SOL", "report"):
            table.add_column(header, overflow="fold")
        for row in group.rows:
            table.add_row(
                escape(row.machine),
                verdict_markup(row.verdict),
                speedup_markup(row.speedup, ci=row.speedup_ci),
                fmt.percent(row.sol_fraction) if row.sol_fraction is not None else "-",
                escape(row.where),
            )
        console.print(table)
        if group.components:
            differs = Table(title="what differs between them")
            differs.add_column("component")
            for index in range(len(group.rows)):
                differs.add_column(f"#{index + 1}", overflow="fold")
            differs.add_column("effect")
            for name, values in group.components.items():
                effect = group.effects.get(name, "annotates")
                differs.add_row(
                    escape(name),
                    *[escape(_cell(v)) for v in values],
                    f"[red]{effect}[/red]" if effect == "invalidates" else effect,
                )
            console.print(differs)
        for flag in group.flags:
            console.print(f"[red]flag:[/red] {escape(flag)}")
    for where in result.alone:
        console.print(
            f"[yellow]note:[/yellow] {escape(where)} has no other report of its "
            "candidate to compare with"
        )


def _cell(value: str | None, limit: int = 40) -> str:
    if value is None:
        return "(not recorded)"
    return value if len(value) <= limit else value[: limit - 3] + "..."
