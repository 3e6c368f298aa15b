"""End-to-end speed: the Amdahl table from the trace's shares and the isolated speedups, the
candidate timed at the host's own dominant signature, and the host's measured speedup.

The shares come from the trusted tracer (the profiler's figure, the forward hooks' as a
cross-check). The speedup at the host's signature is one more ``verify`` of the module at that
exact signature, timed as ``verify`` times (interleaved, fresh inputs, its CI): when the host
hands the kernel a layout or shape where it is slow, that is the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernelproof.e2e.amdahl import judge
from kernelproof.e2e.envelope import elements
from kernelproof.e2e.trace_record import TargetTrace, TraceResult
from kernelproof.schema import Finding, FindingCheck, Report, Severity
from kernelproof.schema.e2e import AmdahlRow, Speed, Substitution
from kernelproof.schema.envelope import CallSignature

#: The timing budget of the check at the host's signature, as a share of the run's budget
#: (the host's own timing is what the report is about; this one only needs the sign of a
#: large gap), and its floor in seconds.
HOST_SIGNATURE_BUDGET_SHARE = 0.5
HOST_SIGNATURE_MIN_BUDGET_S = 2.0


def dominant_signature(trace: TargetTrace) -> tuple[int, CallSignature] | None:
    """The index and signature of the host's call signature with the most work: calls times
    the elements of its tensor arguments (what the host spends its time in the module on)."""
    if not trace.signatures:
        return None

    def weight(index: int) -> int:
        return trace.signature_counts[index] * max(elements(trace.signatures[index]), 1)

    index = max(range(len(trace.signatures)), key=weight)
    return index, trace.signatures[index]


def host_signature_budget(budget_s: float) -> float:
    """Seconds of timing for the check at the host's signature."""
    return max(HOST_SIGNATURE_MIN_BUDGET_S, HOST_SIGNATURE_BUDGET_SHARE * budget_s)


def amdahl_row(
    substitution: Substitution,
    traced: TraceResult,
    position: int,
    trace: TargetTrace,
    at_host: Report | None,
    dominant: tuple[int, CallSignature] | None,
) -> AmdahlRow:
    """One target's row: shares (profiler and hooks), isolated speedup, and the speedup at
    the host's dominant signature from ``at_host`` (its report), when it was timed."""
    hooks = _get(traced.target_hook_share, position)
    profiler = _get(traced.target_profiler_share, position)
    row = AmdahlRow(
        target=substitution.target,
        share=profiler if profiler is not None else (hooks or 0.0),
        share_source="profiler" if profiler is not None else "hooks",
        share_hooks=hooks,
        share_profiler=profiler,
        isolated_speedup=substitution.isolated_speedup,
    )
    if at_host is not None and at_host.timing is not None and dominant is not None:
        index, signature = dominant
        row.host_signature = signature.describe()
        row.host_signature_calls = trace.signature_counts[index]
        row.host_signature_speedup = at_host.timing.speedup
        row.host_signature_speedup_ci = at_host.timing.speedup_ci
    return row


def build_speed(traced: TraceResult, rows: list[AmdahlRow], host_report: Report) -> Speed:
    """The speed section: the rows, the host's measured speedup, predictions and cause."""
    speed = Speed(host_call_s=traced.host_call_s, rows=rows, profiler_error=traced.profiler_error)
    if host_report.timing is not None:
        speed.measured_speedup = host_report.timing.speedup
        speed.measured_speedup_ci = host_report.timing.speedup_ci
    return judge(speed)


def speed_finding(speed: Speed) -> Finding | None:
    """The ``e2e-speed`` finding: information, never a verdict (speed is not correctness)."""
    if (
        speed.predicted_speedup is None
        and speed.measured_speedup is None
        and not speed.shares_disagree
    ):
        return None
    return Finding(
        check=FindingCheck.E2E_SPEED,
        severity=Severity.WARN if speed.shortfall else Severity.INFO,
        message=speed.explanation,
        evidence=speed.model_dump(mode="json", exclude={"explanation"}),
    )


def _get(values: Sequence[float | None], position: int) -> float | None:
    return values[position] if position < len(values) else None
