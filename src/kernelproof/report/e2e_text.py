"""The lines every view shows for an ``e2e`` section: isolated against end-to-end verdicts,
envelope coverage, error attribution, the soak's key numbers, the Amdahl sentence."""

from __future__ import annotations

from kernelproof.report import formatting as fmt
from kernelproof.schema.e2e import E2E, Soak


def e2e_lines(section: E2E) -> list[str]:
    """Plain-text lines summarising ``section`` (the terminal prints them; HTML shows more)."""
    lines = []
    host = section.host_verdict.value if section.host_verdict else "not run"
    for sub in section.substitutions:
        uncovered = [c for c in sub.coverage if not c.covered]
        checked = [c for c in uncovered if c.check == "verified-here"]
        failed = [c for c in checked if c.verdict is not None and c.verdict.value != "verified"]
        lines.append(
            f"{sub.target} ({sub.class_name}, {len(sub.paths)} instance(s)): "
            f"{sub.isolated_verdict.value} in isolation, host run {host}; host signatures "
            f"{len(sub.coverage)}, outside the isolated envelope {len(uncovered)}, verified "
            f"there {len(checked)} ({len(failed)} failing)"
        )
    attribution = section.attribution
    if attribution is not None and attribution.max_local_error is not None:
        lines.append(
            f"attribution: worst local error {attribution.max_local_error:.3g} "
            f"(ratio {_x(attribution.max_local_error_ratio)}) over {len(attribution.calls)} "
            f"replayed call(s)"
            + (
                f", {_g(attribution.max_stream_error)} (ratio "
                f"{_x(attribution.max_stream_error_ratio)}) over {len(attribution.stream_calls)} "
                f"call(s) of the substituted stream"
                if attribution.stream_calls
                else ""
            )
            + (f" (stream stopped: {attribution.stream_note})" if attribution.stream_note else "")
            + f"; host outputs {_g(attribution.host_error)} (ratio "
            f"{_x(attribution.host_error_ratio)}); amplification {_x(attribution.amplification)}"
        )
    soak = section.soak
    if soak is not None:
        growth = soak.growth_bytes_per_step.get("excess")
        latency = soak.latency.get("candidate")
        lines.append(
            f"soak: {soak.steps} steps ({soak.loop}); memory beyond the reference "
            f"{'?' if growth is None else f'{growth / 1024:+.0f} KiB/step'}"
            + (
                f", exhausts memory at step {soak.projected_failure_step:,}"
                if soak.projected_failure_step
                else ""
            )
            + f"; drift max {_x(soak.max_drift_ratio)}"
            + (
                f", first beyond tolerance at step {soak.first_drift_step}"
                if soak.first_drift_step is not None
                else ""
            )
            + f"; nondeterminism {_g(soak.nondeterminism)}"
            + (
                f"; candidate step p50 {fmt.seconds(latency.first_quarter_p50_s)} first quarter, "
                f"{fmt.seconds(latency.last_quarter_p50_s)} last quarter"
                if latency and latency.first_quarter_p50_s is not None
                else ""
            )
            + f"; {_cuda(soak)}"
        )
        if soak.drift_repro is not None:
            lines.append(
                f"soak drift, shrunk to {soak.drift_repro.steps} step(s): "
                f"{soak.drift_repro.command}"
            )
    if section.speed is not None and section.speed.explanation:
        lines.append(f"speed: {section.speed.explanation}")
    return lines


def _x(value: float | None) -> str:
    return "?" if value is None else f"{value:.3g}x"


def _g(value: float | None) -> str:
    return "?" if value is None else f"{value:.3g}"


def _cuda(soak: Soak) -> str:
    if soak.cuda_memory != "measured":
        return f"CUDA memory {soak.cuda_memory}"
    growth = soak.cuda_growth_bytes_per_step.get("excess")
    return (
        "CUDA allocated beyond the reference "
        + ("?" if growth is None else f"{growth / 1024:+.0f} KiB/step")
        + (
            f", exhausts the device at step {soak.cuda_projected_failure_step:,}"
            if soak.cuda_projected_failure_step
            else ""
        )
    )
