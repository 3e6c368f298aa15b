"""A serving loop behind the guard: the worked example of docs/shipping.md.

    kernelproof verify examples/guard/reference.py examples/guard/time_bomb.py \\
        --json report.json --no-timing
    python examples/guard/serving/serve.py report.json [--incidents DIR]

Serves 3000 requests of mixed batch sizes with the time bomb (wrong from its 1000th call),
checking 5% of the calls against the reference, and prints what the guard saw.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

import kernelproof
from kernelproof.tasks.module import import_file

HERE = Path(__file__).resolve().parents[1]  # examples/guard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the JSON report verify wrote")
    parser.add_argument("--incidents", type=Path, default=Path("incidents"))
    args = parser.parse_args()
    torch.set_num_threads(1)  # many small calls: see docs/shipping.md, "Cost"

    candidate = import_file(str(HERE / "time_bomb.py"), "serving_candidate").ModelNew()
    candidate.goes_wrong_after = 1000
    reference = import_file(str(HERE / "reference.py"), "serving_reference").Model()
    guarded = kernelproof.guard(
        candidate, reference, args.report, shadow_rate=0.05, seed=0,
        incident_dir=args.incidents,
        on_incident=lambda incident: print(f"incident: {incident.describe()[:150]}"),
    )
    print(f"envelope: {guarded.report.envelope.describe()}")

    generator = torch.Generator().manual_seed(0)
    batches = [64, 64, 100, 32, 7, 64, 128]  # 7 is outside the envelope
    for step in range(3000):
        batch = batches[step % len(batches)]
        x = torch.randn(batch, 256, generator=generator)
        y = guarded(x)
        assert torch.allclose(y, torch.softmax(x, -1), atol=1e-6) or step >= 1000
    print(f"stats: {guarded.stats}")


if __name__ == "__main__":
    main()
