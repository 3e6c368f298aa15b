"""What the candidate sandbox and the out-of-process op audit cost.

    python benchmarks/sandbox_cost.py [--starts 10] [--repeats 3] [--candidate PATH]

Prints two tables:

* **worker start**: the time from starting a candidate worker to its first answer (a ``build``
  of a trivial candidate), with the sandbox on and off. The sandboxed start includes unsharing
  the namespaces, masking /tmp and /run, the pid-namespace forks, Landlock, seccomp and the
  controller's /proc check of the walls.
* **fixed cost per verification** (timing off, warm forkserver): the same verification with
  the sandbox off, with it on, and with the native op audit (py-spy from outside) on as well;
  interleaved so drift hits every mode alike.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.config import resolve_settings
from kernelproof.controller.verify import verify
from kernelproof.tasks.source import parse_task
from kernelproof.workers.pair import WorkerPair

ROOT = Path(__file__).resolve().parents[1]

#: The modes compared for the fixed cost: (label, settings).
MODES = [
    (
        "sandbox off, native audit off",
        {"sandbox": False, "insecure_sandbox": True, "native_audit": False},
    ),
    ("sandbox on, native audit off", {"sandbox": True, "native_audit": False}),
    ("sandbox on, native audit on (default)", {"sandbox": True, "native_audit": True}),
]


def worker_start_s(reference: Path, candidate: Path, sandbox: bool) -> float:
    settings = resolve_settings(overrides={"sandbox": sandbox, "insecure_sandbox": not sandbox})
    task = parse_task(reference.read_text(), reference)
    with WorkerPair(task=task, candidate_path=candidate, settings=settings) as pair:
        started = time.monotonic()
        response = pair.start_candidate()
        elapsed = time.monotonic() - started
        assert response.ok, response.failure
    return elapsed


def fixed_cost_s(reference: Path, candidate: Path, settings: dict, seed: int) -> float:
    started = time.monotonic()
    report = verify(reference, candidate, timing=False, base_seed=seed, seeds=2, **settings)
    wall = time.monotonic() - started
    assert report.correctness is not None, report.summary
    inside = sum((t.candidate_s or 0.0) + (t.reference_s or 0.0) for t in report.correctness.tests)
    return wall - inside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--candidate", type=Path, default=ROOT / "examples/softmax/correct.py")
    args = parser.parse_args()
    reference = args.candidate.parent / "reference.py"
    console = Console(width=120)
    with tempfile.TemporaryDirectory() as scratch:
        trivial = Path(scratch) / "trivial.py"
        trivial.write_text(
            "import torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
            "    def forward(self, x):\n        return x\n"
        )
        worker_start_s(reference, trivial, True)  # warm the forkserver
        starts: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.starts):
            for sandbox in (False, True):
                starts[sandbox].append(worker_start_s(reference, trivial, sandbox))
    table = Table(title="candidate worker start (to its first answer)")
    for column in ("sandbox", "median ms", "min ms", "max ms", "starts"):
        table.add_column(column)
    for sandbox in (False, True):
        values = starts[sandbox]
        table.add_row(
            "on" if sandbox else "off",
            f"{statistics.median(values) * 1e3:.1f}",
            f"{min(values) * 1e3:.1f}",
            f"{max(values) * 1e3:.1f}",
            str(len(values)),
        )
    console.print(table)

    costs: dict[str, list[float]] = {label: [] for label, _ in MODES}
    for repeat in range(args.repeats):
        for label, settings in MODES:
            costs[label].append(fixed_cost_s(reference, args.candidate, settings, repeat + 1))
    table = Table(
        title=f"fixed cost per verification: {args.candidate.relative_to(ROOT)} "
        "(timing off, 2 seeds, warm)"
    )
    for column in ("mode", "median s", "min s", "max s", "runs"):
        table.add_column(column)
    for label, _ in MODES:
        values = costs[label]
        table.add_row(
            label,
            f"{statistics.median(values):.2f}",
            f"{min(values):.2f}",
            f"{max(values):.2f}",
            str(len(values)),
        )
    console.print(table)


if __name__ == "__main__":
    main()
