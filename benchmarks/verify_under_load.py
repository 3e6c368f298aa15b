"""Verdicts on a busy machine: honest candidates must stay honest, attacks must stay caught.

    python benchmarks/verify_under_load.py [--runs 3] [--loads 0,4,8] [--budget 3]

For each load, that many Python busy loops spin (one runnable process each, so the machine's
load average rises by about as much) while each candidate is verified ``--runs`` times with
timing on. The table shows, per load and candidate, the verdicts over the runs, how many runs
called the timing evidence inconclusive (the machine, not the candidate, decided it), and the
median speedup. Issue 25 class 6: under load a verdict may lose its speedup, never its honesty.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kernelproof.controller.verify import verify

ROOT = Path(__file__).resolve().parents[1]
ROWSUM = ROOT / "examples" / "scaled_rowsum"
ATTACKS = ROOT / "examples" / "hacks" / "verifier"

#: (label, reference, candidate, the verdicts it may get).
CASES = [
    ("mv * scale", ROWSUM / "reference.py", ROWSUM / "mv_scale.py", {"verified"}),
    ("three reads", ROWSUM / "reference.py", ROWSUM / "three_reads.py", {"verified"}),
    ("per-call pool", ROWSUM / "reference.py", ROWSUM / "thread_pool.py", {"verified"}),
    ("numba pool", ROWSUM / "reference.py", ROWSUM / "numba_pool.py", {"verified"}),
    ("float64 inside", ROWSUM / "reference.py", ROWSUM / "float64_inside.py", {"verified"}),
    (
        "attack 36b spinner",
        ROOT / "examples/softmax/reference.py",
        ATTACKS / "36b_spin_while_reference_timed.py",
        {"suspect"},
    ),
    (
        "attack 37 load-gated helper",
        ROOT / "examples/softmax/reference.py",
        ATTACKS / "37_helper_when_loaded.py",
        {"suspect", "incorrect"},
    ),
    (
        "attack 36c deferred subclass",
        ROOT / "examples/softmax/reference.py",
        ATTACKS / "36c_deferred_subclass.py",
        {"suspect"},
    ),
]

#: The verification's settings: timing on, a short budget, what the attack tests use.
SETTINGS = dict(
    seeds=2, timing=True, compile_baseline=False, timing_shapes=False, native_audit=False
)


def _spin() -> None:
    os.nice(0)
    while True:
        pass


@dataclass
class Row:
    load: int
    label: str
    allowed: set[str]
    verdicts: Counter = field(default_factory=Counter)
    inconclusive: int = 0
    speedups: list[float] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)


def _load_average() -> float:
    return os.getloadavg()[0]


def run(
    loads: list[int], runs: int, budget_s: float, only: list[str], native_audit: bool = False
) -> list[Row]:
    rows = []
    context = multiprocessing.get_context("fork")
    for load in loads:
        spinners = [context.Process(target=_spin, daemon=True) for _ in range(load)]
        for spinner in spinners:
            spinner.start()
        try:
            if load:
                time.sleep(5)  # let the load average rise toward the spinners' count
            for label, reference, candidate, allowed in CASES:
                if only and not any(o in label for o in only):
                    continue
                row = Row(load, label, allowed)
                for _ in range(runs):
                    report = verify(
                        reference,
                        candidate,
                        budget_s=budget_s,
                        **{**SETTINGS, "native_audit": native_audit},
                    )
                    row.verdicts[report.verdict.value] += 1
                    checks = {f.check for f in report.findings}
                    row.inconclusive += "timing-inconclusive" in checks
                    for finding in report.findings:
                        if finding.severity.value in ("suspect", "fail"):
                            row.reasons[finding.check] += 1
                    if report.timing is not None:
                        row.speedups.append(report.timing.speedup)
                print(_line(row, _load_average()), flush=True)
                rows.append(row)
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.join()
    return rows


def _line(row: Row, load_average: float) -> str:
    verdicts = ", ".join(f"{v} {n}" for v, n in sorted(row.verdicts.items()))
    speedup = f"{statistics.median(row.speedups):.2f}x" if row.speedups else "-"
    ok = "ok" if set(row.verdicts) <= row.allowed else "WRONG"
    reasons = ", ".join(f"{c} {n}" for c, n in row.reasons.most_common(3))
    return (
        f"load {row.load} (avg {load_average:4.1f})  {row.label:28s} {verdicts:28s} "
        f"inconclusive {row.inconclusive}  speedup {speedup:7s} {ok}  {reasons}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--loads", default="0,4,8", help="busy loops per step, comma-separated")
    parser.add_argument("--budget", type=float, default=3.0, help="timing budget per run (s)")
    parser.add_argument("--only", default="", help="labels to run (substrings, comma-separated)")
    parser.add_argument(
        "--native-audit",
        action="store_true",
        help="sample native stacks from outside, as the CLI does by default",
    )
    args = parser.parse_args()
    loads = [int(x) for x in args.loads.split(",") if x.strip()]
    only = [x for x in args.only.split(",") if x]
    print(f"{os.cpu_count()} CPUs; load average before: {_load_average():.1f}")
    rows = run(loads, args.runs, args.budget, only, args.native_audit)
    wrong = [r for r in rows if not set(r.verdicts) <= r.allowed]
    print(f"{len(rows) - len(wrong)} of {len(rows)} rows as expected")


if __name__ == "__main__":
    main()
