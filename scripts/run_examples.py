"""The main job on the bundled examples: verify every example candidate, write reports, and
print a table of verdicts next to what each example is expected to get.

Each candidate names its reference (``# kernelproof-reference: PATH``, default: the
``reference.py`` beside it) and its expected verdict (``# kernelproof-expect: VERDICT``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.controller.verify import verify
from kernelproof.report.files import write_html, write_json

ROOT = Path(__file__).resolve().parents[1]


def header(path: Path, key: str) -> str | None:
    for line in path.read_text().splitlines()[:6]:
        if line.startswith(f"# kernelproof-{key}:"):
            return line.split(":", 1)[1].strip()
    return None


def example_pairs(examples: Path) -> list[tuple[Path, Path, str | None]]:
    pairs = []
    for candidate in sorted(examples.rglob("*.py")):
        if candidate.name == "reference.py":
            continue
        named = header(candidate, "reference")
        reference = (
            (candidate.parent / named).resolve() if named else candidate.parent / "reference.py"
        )
        if reference.exists():
            pairs.append((candidate, reference, header(candidate, "expect")))
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=Path, default=ROOT / "examples")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "examples")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--match", default="", help="only candidates whose path contains this")
    args = parser.parse_args()
    console = Console()
    table = Table(title="kernelproof on the bundled examples")
    for column in ("candidate", "expected", "verdict", "why", "s"):
        table.add_column(column)
    mismatches = 0
    for candidate, reference, expected in example_pairs(args.examples):
        if args.match not in str(candidate):
            continue
        started = time.monotonic()
        report = verify(
            reference,
            candidate,
            seeds=args.seeds,
            timing=False if args.no_timing else None,
            call_timeout_s=20.0,
        )
        name = str(candidate.relative_to(args.examples)).removesuffix(".py").replace("/", "__")
        write_json(report, args.out / f"{name}.json")
        write_html(report, args.out / f"{name}.html")
        ok = expected is None or expected == report.verdict.value
        mismatches += not ok
        style = "green" if ok else "bold red"
        table.add_row(
            str(candidate.relative_to(ROOT)),
            expected or "?",
            f"[{style}]{report.verdict.value}[/{style}]",
            report.summary[:90],
            f"{time.monotonic() - started:.1f}",
        )
    console.print(table)
    console.print(f"reports written to {args.out}")
    if mismatches:
        console.print(f"[bold red]{mismatches} example(s) did not get their expected verdict[/]")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
