"""Fixed cost of one verification, and what the integrity probes add to it.

    python benchmarks/verification_overhead.py [--repeats 5] [--candidate PATH]

Fixed cost = wall time of a verification minus the time spent inside reference and candidate
calls (as each worker measured them). The first verification in a process also pays for the
forkserver start (importing torch once); later ones are "warm". The probe cost compares the
same verification with and without the candidate worker's integrity probes (per-call probes,
audit hooks, op audit). Timing is off: this measures the verification machinery.

The "session" rows verify through one :class:`kernelproof.Session` with a fixed seed, as a
reward loop does: the reference's calls are replayed from its memo, so only the candidate's
calls count as inside calls there (the reference's run once, in the first verification).

The last table times ``kernelproof verify --no-timing`` as a command, whole (Python's start
included), with a warm verifier running (``kernelproof warm``, in a cache folder of its own):
with one fixed ``--seed`` (the memo replays the reference) and with a new seed each call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof import Session
from kernelproof.controller.verify import verify

ROOT = Path(__file__).resolve().parents[1]


def inside_calls(report) -> float:
    return sum((t.candidate_s or 0.0) + (t.reference_s or 0.0) for t in report.correctness.tests)


def measure(
    reference: Path, candidate: Path, probes: bool, seed: int, session: Session | None = None
) -> tuple[float, float, int]:
    started = time.monotonic()
    if session is None:
        report = verify(reference, candidate, timing=False, base_seed=seed, integrity_probes=probes)
    else:
        report = session.verify(
            reference, candidate, timing=False, base_seed=seed, integrity_probes=probes
        )
    wall = time.monotonic() - started
    assert report.correctness is not None, report.summary
    inside = (
        inside_calls(report)
        if session is None
        else sum(t.candidate_s or 0.0 for t in report.correctness.tests)
    )
    return wall, inside, len(report.correctness.tests)


def cli_walls(reference: Path, candidate: Path, repeats: int) -> dict[str, list[float]]:
    """Wall seconds of whole ``kernelproof verify`` commands served by a warm verifier."""
    with tempfile.TemporaryDirectory(prefix="kp-warm-bench-") as cache:
        env = {**os.environ, "KERNELPROOF_CACHE_DIR": cache}
        cli = [sys.executable, "-m", "kernelproof.cli"]
        subprocess.run([*cli, "warm"], env=env, check=True, capture_output=True)
        try:

            def run(*extra: str) -> float:
                started = time.monotonic()
                done = subprocess.run(
                    [*cli, "verify", str(reference), str(candidate), "--no-timing", *extra],
                    env=env,
                    capture_output=True,
                    text=True,
                )
                wall = time.monotonic() - started
                if "warm verifier" not in done.stdout + done.stderr:
                    raise SystemExit(f"the warm verifier did not answer: {done.stderr[-500:]}")
                return wall

            run("--seed", "0")  # the task's first verification fills the memo
            walls: dict[str, list[float]] = {"fixed seed": [], "new seed": []}
            for _ in range(repeats):
                walls["fixed seed"].append(run("--seed", "0"))
                walls["new seed"].append(run())
            return walls
        finally:
            subprocess.run([*cli, "warm", "--stop"], env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--candidate", type=Path, default=ROOT / "examples/softmax/correct.py")
    args = parser.parse_args()
    reference = args.candidate.parent / "reference.py"
    cold_wall, cold_calls, cells = measure(reference, args.candidate, True, 0)
    rows: dict[tuple[bool, bool], list[tuple[float, float]]] = {
        (probes, warm): [] for probes in (True, False) for warm in (False, True)
    }
    with Session() as session:
        for probes in (True, False):  # the session's first verification fills its memo
            measure(reference, args.candidate, probes, 0, session)
        for repeat in range(args.repeats):
            for probes in (True, False):  # interleaved, so drift hits every row alike
                for warm in (False, True):
                    wall, calls, _ = measure(
                        reference,
                        args.candidate,
                        probes,
                        repeat + 1 if not warm else 0,
                        session if warm else None,
                    )
                    rows[(probes, warm)].append((wall, calls))
    table = Table(
        title=f"verification overhead: {args.candidate.relative_to(ROOT)} ({cells} cells)"
    )
    for column in ("run", "wall s (median)", "inside calls s", "fixed cost s", "per cell ms"):
        table.add_column(column)
    table.add_row(
        "first (forkserver start)",
        f"{cold_wall:.2f}",
        f"{cold_calls:.3f}",
        f"{cold_wall - cold_calls:.2f}",
        f"{(cold_wall - cold_calls) / cells * 1e3:.0f}",
    )
    fixed = {}
    for (probes, warm), label in (
        ((True, False), "warm, probes on"),
        ((False, False), "warm, probes off"),
        ((True, True), "session, probes on"),
        ((False, True), "session, probes off"),
    ):
        walls = [w for w, _ in rows[(probes, warm)]]
        costs = [w - c for w, c in rows[(probes, warm)]]
        fixed[(probes, warm)] = statistics.median(costs)
        table.add_row(
            label,
            f"{statistics.median(walls):.2f}",
            f"{statistics.median(c for _, c in rows[(probes, warm)]):.3f}",
            f"{fixed[(probes, warm)]:.2f}",
            f"{fixed[(probes, warm)] / cells * 1e3:.0f}",
        )
    Console().print(table)
    for warm, label in ((False, "separate verify calls"), (True, "one Session")):
        on, off = fixed[(True, warm)], fixed[(False, warm)]
        print(
            f"fixed cost per verification, {label}: {on:.2f} s with probes; "
            f"probes add {on - off:.2f} s ({(on - off) / cells * 1e3:.0f} ms per cell)"
        )
    walls = cli_walls(reference, args.candidate, args.repeats)
    cli_table = Table(title="kernelproof verify --no-timing with a warm verifier (whole command)")
    for column in ("seed", "wall s (median)", "min", "max"):
        cli_table.add_column(column)
    for label, values in walls.items():
        cli_table.add_row(
            label, f"{statistics.median(values):.2f}", f"{min(values):.2f}", f"{max(values):.2f}"
        )
    Console().print(cli_table)


if __name__ == "__main__":
    main()
