"""The change report of ``kernelproof recheck`` in the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelproof.report.colours import verdict_markup
from kernelproof.report.store_tables import speedup_markup
from kernelproof.schema.recheck import (
    RecheckItem,
    RecheckReport,
    RecheckStatus,
    VerdictChange,
    VerdictSnapshot,
)

#: Invalidating changes named per row; the JSON and HTML reports hold all of them.
CHANGES_PER_ROW = 2

#: Status colours: a lost verdict red, a failed recheck magenta, the rest plain.
STATUS_STYLE = {RecheckStatus.FAILED: "magenta", RecheckStatus.PENDING: "yellow"}


def render_recheck(report: RecheckReport, console: Console) -> None:
    """One row per verdict (the re-proved and failed first), then the counts and the exit."""
    rows = sorted(report.items, key=lambda i: i.status is RecheckStatus.STILL_VALID)
    table = Table(
        title=f"recheck of {escape(report.source)}" + (" (dry run)" if report.dry_run else "")
    )
    for header in ("verdict", "before", "after", "status", "why"):
        table.add_column(header, overflow="fold")
    for item in rows:
        table.add_row(
            escape(item.key),
            _side(item.before),
            _side(item.after) if item.after else "-",
            _status(item),
            escape(_why(item)),
        )
    console.print(table)
    for note in report.skipped:
        console.print(f"[yellow]skipped:[/yellow] {escape(note)}")
    console.print(summary_line(report))


def summary_line(report: RecheckReport) -> str:
    """The counts and what the exit code says, as one line of markup."""
    counts = report.counts
    parts = [
        f"{len(report.items)} verdict(s)",
        f"{counts.get('still-valid', 0)} still valid",
        f"{counts.get('reverified', 0)} re-proved now",
        f"{counts.get('reverified-earlier', 0)} re-proved earlier",
    ]
    if counts.get("pending"):
        parts.append(f"{counts['pending']} pending")
    if counts.get("failed"):
        parts.append(f"[magenta]{counts['failed']} could not be re-proved[/magenta]")
    lost = len(report.lost_verified)
    parts.append(f"[red]{lost} lost verified[/red]" if lost else "none lost verified")
    return "; ".join(parts) + f" (exit {int(report.exit_code)})"


def _side(snapshot: VerdictSnapshot) -> str:
    verdict = snapshot.verdict
    return verdict_markup(verdict) + " " + speedup_markup(snapshot.speedup, ci=snapshot.speedup_ci)


def _status(item: RecheckItem) -> str:
    text = item.status.value
    if item.verdict_change is VerdictChange.LOST_VERIFIED:
        return f"[red]{text}: lost verified[/red]"
    if item.verdict_change not in (None, VerdictChange.UNCHANGED):
        text += f": {item.verdict_change.value}"
    if item.speed_change is not None and item.speed_change.value in ("faster", "slower"):
        text += f", {item.speed_change.value}"
    style = STATUS_STYLE.get(item.status)
    return f"[{style}]{text}[/{style}]" if style else text


def _why(item: RecheckItem) -> str:
    if not item.diff.proved_recorded:
        missing = [c.component for c in item.diff.invalidating if c.proved is None]
        text = (
            "the report predates environment fingerprints (an older kernelproof); not "
            f"recorded: {', '.join(missing)}"
        )
        return f"{text}; {item.message}" if item.message else text
    changes = item.diff.invalidating or item.diff.annotations
    text = "; ".join(c.describe() for c in changes[:CHANGES_PER_ROW])
    if len(changes) > CHANGES_PER_ROW:
        text += f"; +{len(changes) - CHANGES_PER_ROW} more"
    if item.message:
        text = f"{text}; {item.message}" if text else item.message
    return text or "same environment"
