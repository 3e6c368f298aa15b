"""The terminal listing of a guard's incidents (``kernelproof incidents DIR``)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.schema.incident import Incident


def render_incidents(found: list[tuple[Path, Incident]], directory: Path, console: Console) -> None:
    """One row per incident, oldest first, numbered as ``--replay`` accepts them."""
    if not found:
        console.print(f"no incidents in {directory}")
        return
    table = Table(title=f"{len(found)} incident(s) in {directory}")
    for column in ("#", "id", "call", "what", "signature", "error ratio", "detail"):
        table.add_column(column, overflow="fold")
    for number, (_, incident) in enumerate(found, start=1):
        ratio = f"{incident.error_ratio:.3g}" if incident.error_ratio is not None else "-"
        table.add_row(
            str(number),
            incident.id,
            "start-up" if incident.call_index is None else str(incident.call_index),
            "+".join(k.value for k in incident.kinds),
            incident.signature.describe() if incident.signature else "-",
            ratio,
            incident.detail[:160],
        )
    console.print(table)
    console.print(
        "replay one through verify: kernelproof incidents DIR --replay N (or its id, or 'latest')"
    )
