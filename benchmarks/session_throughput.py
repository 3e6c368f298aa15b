"""Candidates per minute on one suite task: a Session against one process per candidate.

    python benchmarks/session_throughput.py [--task tasks/level1/10_Softmax.py] [--count 12]
                                            [--modes correctness,quick]

Twelve softmax candidates (the softmax example's own and the hacks written for it: honest,
wrong, hostile) are verified against one suite task three ways, side by side in one run, with
one base seed:

- ``cli``: one ``kernelproof verify`` process per candidate (Python, torch and the forkserver
  started each time: what an agent calling the CLI after every edit pays);
- ``verify``: separate ``kernelproof.verify`` calls in this process (warm forkserver, no memo);
- ``session``: ``Session.evaluate_many`` (warm reference worker, the task's work replayed).

Each mode runs correctness only (``--no-timing``) and with the quick profile's timing. The
verdicts must be identical in every way; the table says whether they are.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]

#: The candidates, in order: the softmax example's own, then hacks aimed at softmax.
CANDIDATES = [
    "examples/softmax/correct.py",
    "examples/softmax/wrong_odd.py",
    "examples/softmax/hardcoded.py",
    "examples/hacks/01_passthrough.py",
    "examples/hacks/04_uninitialised_output.py",
    "examples/hacks/05_input_mutation.py",
    "examples/hacks/09_output_cache.py",
    "examples/hacks/10_evaluator_mode.py",
    "examples/hacks/07_lazy_output.py",
    "examples/hacks/08_timer_patch.py",
    "examples/hacks/18_unsafe_softmax.py",
    "examples/hacks/22b_exits_mid_run.py",
    "examples/hacks/verifier/27_signal_reference.py",
]

#: Settings of each mode: correctness only, or the quick profile with its timing.
MODES = {
    "correctness": {"profile": "default", "timing": False, "shrink": False, "seeds": 2},
    "quick": {"profile": "quick", "shrink": False},
}


def cli(
    reference: Path, candidates: list[Path], options: dict, seed: int, scratch: Path
) -> list[str]:
    verdicts = []
    for index, candidate in enumerate(candidates):
        out = scratch / f"cli-{index}.json"
        command = [
            sys.executable,
            "-m",
            "kernelproof.cli",
            "verify",
            str(reference),
            str(candidate),
            "--seed",
            str(seed),
            "--json",
            str(out),
            "--no-shrink",
            "--profile",
            options["profile"],
            "--no-warm",
        ]
        if options.get("timing") is False:
            command.append("--no-timing")
        if "seeds" in options:
            command += ["--seeds", str(options["seeds"])]
        subprocess.run(command, capture_output=True, check=False)
        verdicts.append(json.loads(out.read_text())["verdict"] if out.is_file() else "none")
    return verdicts


def separate(reference: Path, candidates: list[Path], options: dict, seed: int) -> list[str]:
    from kernelproof.controller.verify import verify

    settings = {k: v for k, v in options.items() if k != "profile"}
    return [
        verify(reference, c, profile=options["profile"], base_seed=seed, **settings).verdict.value
        for c in candidates
    ]


def session(reference: Path, candidates: list[Path], options: dict, seed: int) -> list[str]:
    import kernelproof

    with kernelproof.Session() as warm:
        reports = warm.evaluate_many(
            reference.read_text(), [c.read_text() for c in candidates], base_seed=seed, **options
        )
    return [r.verdict.value for r in reports]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", type=Path, default=ROOT / "tasks/level1/10_Softmax.py")
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--modes", default="correctness,quick")
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    candidates = [ROOT / c for c in CANDIDATES if (ROOT / c).is_file()][: args.count]
    table = Table(title=f"{len(candidates)} candidates of {args.task.relative_to(ROOT)}")
    for column in ("settings", "way", "wall s", "candidates / minute", "vs cli", "verdicts"):
        table.add_column(column)
    with tempfile.TemporaryDirectory() as scratch:
        for mode in args.modes.split(","):
            options = MODES[mode]
            rows = []
            for way in ("cli", "verify", "session"):
                started = time.monotonic()
                if way == "cli":
                    verdicts = cli(args.task, candidates, options, args.seed, Path(scratch))
                elif way == "verify":
                    verdicts = separate(args.task, candidates, options, args.seed)
                else:
                    verdicts = session(args.task, candidates, options, args.seed)
                rows.append((way, time.monotonic() - started, verdicts))
            cli_rate = len(candidates) / rows[0][1]
            same = all(r[2] == rows[0][2] for r in rows)
            for way, wall, verdicts in rows:
                rate = len(candidates) / wall
                table.add_row(
                    mode,
                    way,
                    f"{wall:.1f}",
                    f"{rate * 60:.1f}",
                    f"{rate / cli_rate:.2f}x",
                    ("identical" if same else "DIFFER: ") + ("" if same else ",".join(verdicts)),
                )
            print(mode, {way: verdicts for way, _, verdicts in rows}, flush=True)
    Console().print(table)


if __name__ == "__main__":
    main()
