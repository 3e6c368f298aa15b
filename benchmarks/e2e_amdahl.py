"""End to end against isolation: verdicts, the Amdahl table, soak numbers and durations.

    python benchmarks/e2e_amdahl.py [--budget SECONDS] [--soak STEPS] [--seeds N]

Runs ``kernelproof e2e`` on every example in ``examples/e2e`` (timing on for the examples
about speed, soak on the decoder) and a plain ``verify`` of the GELU candidate against its
own task, then prints, per example, the isolated verdict next to the e2e verdict; the Amdahl
table (share of host time by the profiler and by the hooks, isolated speedup, speedup at the
host's dominant signature, predicted and measured host speedup, the cause of a gap); the
soak's key numbers (with the drift's shrunk repro); and how long each run took. Timings on a
shared machine are noisy: read the intervals, not the medians.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kernelproof.controller.verify import verify
from kernelproof.e2e.run import e2e

ROOT = Path(__file__).resolve().parents[1]
DECODER = ROOT / "examples" / "e2e" / "decoder"
CONVBLOCK = ROOT / "examples" / "e2e" / "convblock"
GATED_MLP = ROOT / "examples" / "e2e" / "gated_mlp"

#: (host, replacement, soak?, timed?) per example.
EXAMPLES = [
    (DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_honest.py'}", True, False),
    (DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_fixed_point.py'}", True, False),
    (DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_leaky.py'}", True, False),
    (CONVBLOCK / "host.py", f"ChannelNorm={CONVBLOCK / 'channelnorm_honest.py'}", False, False),
    (CONVBLOCK / "host.py", f"norm={CONVBLOCK / 'channelnorm_transposed_only.py'}", False, False),
    (
        CONVBLOCK / "host.py",
        f"act={CONVBLOCK / 'gelu_fused.py'}:{CONVBLOCK / 'gelu_task.py'}",
        False,
        True,
    ),
    (GATED_MLP / "host.py", f"act={CONVBLOCK / 'gelu_fused.py'}", False, True),
    (GATED_MLP / "host.py", f"act={GATED_MLP / 'gelu_flat.py'}", False, True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=6.0)
    parser.add_argument("--soak", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    console = Console()
    verdicts = Table("host", "replacement", "isolated", "e2e", "first e2e finding", "e2e s")
    amdahl = Table(
        "host",
        "replacement",
        "share (profiler / hooks)",
        "isolated",
        "at host signature",
        "predicted",
        "measured (95% CI)",
        "cause",
    )
    soaks = Table(
        "replacement",
        "steps",
        "excess KiB/step",
        "fails at step",
        "max drift",
        "first drift step",
        "drift repro (knobs, steps)",
        "nondeterminism",
        "cand p50 first/last quarter",
        "CUDA memory",
    )
    for host, replacement, soak, timed in EXAMPLES:
        started = time.monotonic()
        report = e2e(
            host,
            [replacement],
            soak=args.soak if soak else 0,
            seeds=args.seeds,
            base_seed=1234,
            timing=timed,
            budget_s=args.budget,
            compile_baseline=False,
            native_audit=False,
        )
        took = time.monotonic() - started
        section = report.e2e
        first = next((f.message for f in report.findings if f.severity.value == "fail"), "")
        name = replacement.split("=")[1].split(":")[0].rsplit("/", 1)[-1]
        verdicts.add_row(
            host.parent.name,
            name,
            ", ".join(s.isolated_verdict.value for s in section.substitutions),
            report.verdict.value,
            first[:90],
            f"{took:.1f}",
        )
        if timed and section.speed:
            speed = section.speed
            ci = speed.measured_speedup_ci
            amdahl.add_row(
                host.parent.name,
                name,
                ", ".join(
                    f"{r.share:.1%} ({_pct(r.share_profiler)} / {_pct(r.share_hooks)})"
                    for r in speed.rows
                ),
                ", ".join(
                    f"{r.isolated_speedup:.2f}x" if r.isolated_speedup else "-" for r in speed.rows
                ),
                ", ".join(
                    f"{r.host_signature_speedup:.2f}x" if r.host_signature_speedup else "-"
                    for r in speed.rows
                ),
                f"{speed.predicted_speedup:.2f}x" if speed.predicted_speedup else "-",
                f"{speed.measured_speedup:.2f}x ({ci[0]:.2f}-{ci[1]:.2f})"
                if speed.measured_speedup and ci
                else "-",
                speed.cause or "-",
            )
            console.print(f"  {speed.explanation}")
        if section.soak:
            s = section.soak
            latency = s.latency.get("candidate")
            soaks.add_row(
                name,
                str(s.steps),
                f"{s.growth_bytes_per_step.get('excess', 0) / 1024:.0f}",
                f"{s.projected_failure_step:,}" if s.projected_failure_step else "-",
                f"{s.max_drift_ratio:.2f}x" if s.max_drift_ratio else "-",
                str(s.first_drift_step) if s.first_drift_step is not None else "-",
                f"{s.drift_repro.knobs}, {s.drift_repro.steps}" if s.drift_repro else "-",
                f"{s.nondeterminism:.3g}" if s.nondeterminism is not None else "-",
                f"{latency.first_quarter_p50_s * 1e3:.2f} / "
                f"{latency.last_quarter_p50_s * 1e3:.2f} ms"
                if latency and latency.p50_s
                else "-",
                s.cuda_memory,
            )
    started = time.monotonic()
    plain = verify(
        CONVBLOCK / "gelu_task.py",
        CONVBLOCK / "gelu_fused.py",
        seeds=args.seeds,
        base_seed=1234,
        timing=False,
        native_audit=False,
    )
    plain_s = time.monotonic() - started
    console.print(verdicts)
    console.print(amdahl)
    console.print(soaks)
    console.print(
        f"plain verify of gelu_fused.py against gelu_task.py (no timing): "
        f"{plain.verdict.value} in {plain_s:.1f} s"
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


if __name__ == "__main__":
    main()
