"""The soak: many steps of the host's loop, with and without the substitution, watched from
outside.

Both sides run in the ordinary workers (the candidate's sandboxed), one ``run`` request per
step of the generated soak task (:func:`kernelproof.e2e.generated.soak_task`). Per step the
controller reads each worker's resident memory from /proc (and, on CUDA, keeps the device
memory each worker reports: /proc does not show it), compares the candidate's outputs
with the float64 oracle of the same steps (the tolerance model, against the reference's own
error at that step), and keeps each side's step time. A fresh candidate model then repeats the
first steps to look for nondeterminism.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy

from kernelproof.checks.observations import findings_from_observations, merge_findings
from kernelproof.checks.tolerance import TolerancePolicy, compare_output
from kernelproof.config import Settings
from kernelproof.e2e.growth import growth_finding, judge_growth
from kernelproof.protocol.requests import RunRequest
from kernelproof.schema import Finding, FindingCheck, InputVariant, Severity, VariantKind, Verdict
from kernelproof.schema.e2e import LatencyCurve, Soak
from kernelproof.tasks.loaded import LoadedTask
from kernelproof.workers.pair import WorkerPair, prepare_request
from kernelproof.workers.process import WorkerProcess

#: Steps a fresh candidate model repeats to look for nondeterminism.
REPEATED_STEPS = 16


@dataclass
class SoakOutcome:
    """The soak section and the findings it supports."""

    soak: Soak | None
    findings: list[Finding] = field(default_factory=list)


def machine_memory_bytes() -> int:
    """Total memory of the machine (/proc/meminfo), what a leak runs out of."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def run_soak(
    loaded: LoadedTask,
    settings: Settings,
    steps: int,
    init_seed: int,
    *,
    has_loop: bool,
    repro: str,
    until_drift: bool = False,
) -> SoakOutcome:
    """Run ``steps`` steps on both sides and judge memory growth, drift, nondeterminism.
    With ``until_drift`` (a shrinking trial), stop at the first step beyond tolerance and
    repeat nothing."""
    policy = TolerancePolicy.from_settings(settings)
    soak = Soak(
        steps=0,
        loop="soak_steps" if has_loop else "fresh-inputs",
        rss_bytes={"candidate": [], "reference": []},
    )
    findings: list[Finding] = []
    times: dict[str, list[float]] = {"candidate": [], "reference": []}
    kept: list[list[Any]] = []
    with WorkerPair(
        task=loaded.task,
        candidate_path=loaded.candidate_path,
        settings=settings,
        readable_paths=loaded.readable_paths,
    ) as pair:
        pair.start_reference()
        built = pair.start_candidate()
        if not built.ok:
            return SoakOutcome(
                None, [_broken(f"the soak's candidate does not build: {built.failure}")]
            )
        handover = pair.prepare({}, init_seed)
        if handover.candidate is None:
            return SoakOutcome(
                None,
                [
                    Finding(
                        check=FindingCheck.TASK,
                        severity=Severity.FAIL,
                        forces=Verdict.ERROR,
                        message=f"the host's loop cannot be built: {handover.reference.failure}",
                    )
                ],
            )
        if not handover.candidate.ok:
            return SoakOutcome(None, [_broken(_UNBUILT + handover.candidate.failure)])
        names = list(handover.reference.data.state_names)
        weights = handover.reference.tensors
        for step in range(steps):
            variant = InputVariant(name=f"soak:{step}", kind=VariantKind.SEED, seed=step)
            ref = pair.ask_reference(
                RunRequest(variant=variant, oracle=True, oracle_fallback=True, record_ops=False)
            )
            if not ref.ok:
                findings.append(
                    Finding(
                        check=FindingCheck.TASK,
                        severity=Severity.FAIL,
                        forces=Verdict.ERROR,
                        message=f"the host's loop fails at step {step} without the substitution: "
                        f"{ref.failure}",
                    )
                )
                break
            cand = pair.ask_candidate(
                RunRequest(variant=variant, record_ops=False, stability_delay_s=0.0)
            )
            if cand.reply is not None:  # the probes run on every step, as in the matrix
                findings += findings_from_observations(
                    cand.reply.observations, variant=variant.name
                )
            if not cand.ok:
                findings.append(
                    _broken(
                        f"the host with the substitution fails at soak step {step}: {cand.failure}",
                        step=step,
                    )
                )
                break
            soak.steps = step + 1
            soak.rss_bytes["reference"].append(_resident_bytes(pair.reference))
            soak.rss_bytes["candidate"].append(_resident_bytes(pair.candidate))
            _record_cuda(soak, {"reference": ref, "candidate": cand})
            times["reference"].append(ref.data.call_s or 0.0)
            times["candidate"].append(cand.data.call_s or 0.0)
            soak.drift_ratios.append(_drift(ref, cand, policy, soak, step))
            if until_drift and soak.first_drift_step is not None:
                return SoakOutcome(soak, findings)
            if step < REPEATED_STEPS:
                kept.append([t.clone() for t in cand.tensors])
        if kept and _rebuild(pair, init_seed, names, weights, findings):
            soak.repeated_steps, soak.nondeterminism = _repeat(pair, kept)
    soak.latency = {side: _latency(samples) for side, samples in times.items()}
    findings = merge_findings(findings)
    findings += _memory_findings(soak)
    findings += drift_findings(soak, repro.format(steps=(soak.first_drift_step or 0) + 1))
    findings += _nondeterminism_findings(soak)
    return SoakOutcome(soak, findings)


def _resident_bytes(worker: WorkerProcess | None) -> int:
    """The resident memory of a worker that has just answered (its whole process tree)."""
    assert worker is not None and worker.tree is not None, "a worker that answered is running"
    return worker.tree.resident_bytes()


#: Why the soak could not go on, before the candidate's failure.
_UNBUILT = "the host with the substitution cannot be built for the soak: "


def _rebuild(
    pair: WorkerPair, init_seed: int, names: list[str], weights: list[Any], findings: list[Finding]
) -> bool:
    """The candidate built afresh with the reference's weights (for the repeated steps)."""
    response = pair.ask_candidate(prepare_request({}, init_seed, names), weights)
    if not response.ok:
        findings.append(_broken(_UNBUILT + response.failure))
    return response.ok


def _drift(ref: Any, cand: Any, policy: TolerancePolicy, soak: Soak, step: int) -> float | None:
    data = ref.data
    count = len([d for d in data.outputs if d.get("kind") == "tensor"])
    outputs, oracle = ref.tensors[:count], ref.tensors[count : count + data.oracle_count]
    if len(cand.tensors) != count or len(oracle) != count:
        if soak.first_drift_step is None:
            soak.first_drift_step = step
        return None
    ratios, passed = [], True
    for c, r, o in zip(cand.tensors, outputs, oracle):
        result = compare_output(c, r, o, policy=policy)
        passed = passed and result.passed
        if result.error_ratio is not None:
            ratios.append(result.error_ratio)
    worst = max(ratios) if ratios else None
    if worst is not None:
        soak.max_drift_ratio = max(soak.max_drift_ratio or 0.0, worst)
    if not passed and soak.first_drift_step is None:
        soak.first_drift_step = step
    return worst


def _repeat(pair: WorkerPair, kept: list[list[Any]]) -> tuple[int, float | None]:
    """Run the first steps again on the freshly prepared candidate; the largest difference."""
    import torch

    worst = 0.0
    for step, before in enumerate(kept):
        variant = InputVariant(name=f"soak-repeat:{step}", kind=VariantKind.SEED, seed=step)
        again = pair.ask_candidate(
            RunRequest(variant=variant, record_ops=False, stability_delay_s=0.0)
        )
        if not again.ok or len(again.tensors) != len(before):
            return step, None
        for a, b in zip(again.tensors, before):
            if a.shape != b.shape:
                return step + 1, float("inf")
            both_nan = torch.isnan(a) & torch.isnan(b)
            difference = (a.double() - b.double()).abs().masked_fill(both_nan, 0.0)
            if difference.numel():
                worst = max(worst, float(difference.nan_to_num(float("inf")).max()))
    return len(kept), worst


def _record_cuda(soak: Soak, replies: dict[str, Any]) -> None:
    """Each side's CUDA memory after the step, as its worker reported it (on CUDA only)."""
    for side, response in replies.items():
        figures = response.data.cuda_memory
        if not figures:
            if soak.cuda_memory == "measured":
                soak.cuda_memory = "not-reported"
            continue
        if soak.cuda_memory == "not-applicable":
            soak.cuda_memory = "measured"
        soak.cuda_allocated_bytes.setdefault(side, []).append(int(figures["allocated"]))
        soak.cuda_reserved_bytes.setdefault(side, []).append(int(figures["reserved"]))
        soak.cuda_memory_limit_bytes = max(
            soak.cuda_memory_limit_bytes, int(figures.get("total", 0))
        )


def _memory_findings(soak: Soak) -> list[Finding]:
    """Resident memory against the machine's, and on CUDA device memory against the
    device's: the same rule (:mod:`kernelproof.e2e.growth`)."""
    findings = []
    soak.memory_limit_bytes = machine_memory_bytes()
    rss = judge_growth(
        soak.rss_bytes["candidate"], soak.rss_bytes["reference"], soak.memory_limit_bytes
    )
    if rss is not None:
        soak.growth_bytes_per_step = dict(rss.slopes)
        soak.projected_failure_step = rss.projected_failure_step
        if finding := growth_finding(rss, "worker's resident memory", soak.steps):
            findings.append(finding)
    findings += cuda_findings(soak)
    return findings


def cuda_findings(soak: Soak) -> list[Finding]:
    """The growth rule on the workers' CUDA memory (allocated, then reserved: a pool that
    grows without live tensors is fragmentation, and runs out the same), against the device's
    total memory; fills the soak's CUDA slopes and projection."""
    if soak.cuda_memory == "not-applicable" or soak.cuda_memory_limit_bytes <= 0:
        return []
    judged = []
    for memory, figures in (
        ("CUDA allocated memory", soak.cuda_allocated_bytes),
        ("CUDA reserved memory", soak.cuda_reserved_bytes),
    ):
        growth = judge_growth(
            figures.get("candidate", []), figures.get("reference", []), soak.cuda_memory_limit_bytes
        )
        if growth is None:
            continue
        if memory == "CUDA allocated memory":
            soak.cuda_growth_bytes_per_step = dict(growth.slopes)
        judged.append((memory, growth))
    failing = [(m, g) for m, g in judged if g.projected_failure_step is not None]
    if not failing:
        return []
    memory, growth = min(failing, key=lambda item: item[1].projected_failure_step or 0)
    soak.cuda_projected_failure_step = growth.projected_failure_step
    finding = growth_finding(growth, memory, soak.steps)
    return [finding] if finding is not None else []


def drift_findings(soak: Soak, command: str) -> list[Finding]:
    """``soak-drift``: the first step beyond tolerance, and the ``command`` that shows it."""
    if soak.first_drift_step is None:
        return []
    step = soak.first_drift_step
    ratio = soak.drift_ratios[step] if step < len(soak.drift_ratios) else None
    shown = f"{ratio:.1f}x" if ratio is not None else "a different shape or count"
    first_ratio = next((r for r in soak.drift_ratios if r is not None), None)
    return [
        Finding(
            check=FindingCheck.SOAK_DRIFT,
            severity=Severity.FAIL,
            forces=Verdict.INCORRECT,
            message=f"the host's outputs drift beyond tolerance at soak step {step}: error ratio "
            f"{shown} against the float64 oracle of the same steps"
            + (f" (first measured: {first_ratio:.2f}x)" if first_ratio is not None else "")
            + f". Reproduce: {command}",
            evidence={
                "first_step": step,
                "ratio": ratio,
                "repro": command,
                "ratios_head": soak.drift_ratios[: step + 1][-8:],
            },
        )
    ]


def _nondeterminism_findings(soak: Soak) -> list[Finding]:
    if soak.nondeterminism is None or soak.nondeterminism == 0.0:
        return []
    return [
        Finding(
            check=FindingCheck.SOAK_NONDETERMINISM,
            severity=Severity.WARN,
            message=f"two runs of the first {soak.repeated_steps} soak steps differ by up to "
            f"{soak.nondeterminism:.3g}: the candidate is not deterministic in the host",
            evidence={"max_abs_difference": soak.nondeterminism, "steps": soak.repeated_steps},
        )
    ]


def _latency(samples: list[float]) -> LatencyCurve:
    if not samples:
        return LatencyCurve()
    values = numpy.array(samples)
    quarter = max(1, len(samples) // 4)
    return LatencyCurve(
        samples_s=samples,
        p50_s=float(numpy.percentile(values, 50)),
        p90_s=float(numpy.percentile(values, 90)),
        p99_s=float(numpy.percentile(values, 99)),
        first_quarter_p50_s=float(numpy.median(values[:quarter])),
        last_quarter_p50_s=float(numpy.median(values[-quarter:])),
    )


def _broken(message: str, step: int | None = None) -> Finding:
    return Finding(
        check=FindingCheck.CRASH,
        severity=Severity.FAIL,
        forces=Verdict.BROKEN,
        message=message,
        evidence={"step": step} if step is not None else {},
    )
