"""One candidate verified on several machines: per machine the verdict, the speedup with its
interval and the fraction of the speed of light, and the flags a reviewer must see (verified
on one machine and not on another; faster than the reference on one, slower on another).

What differs between the machines is shown component by component with the effect the one
invalidation rule gives it (:mod:`kernelproof.schema.environment_rule`): the reason a verdict
on one machine says nothing about another.
"""

from __future__ import annotations

from collections import defaultdict

from kernelproof.proof.verdicts import verdict_snapshot
from kernelproof.schema.binding import report_fingerprint
from kernelproof.schema.comparison import CandidateAcrossMachines, MachineComparison, MachineRow
from kernelproof.schema.environment_rule import Effect, diff_fingerprints
from kernelproof.schema.report import Report
from kernelproof.schema.verdict import Verdict

__all__ = ["compare_machines", "machine_label"]


def compare_machines(reports: list[tuple[str, Report]]) -> MachineComparison:
    """Group the reports (each with where it came from) by candidate and task, and lay each
    group's proofs side by side."""
    groups: dict[tuple[str, str], list[tuple[str, Report]]] = defaultdict(list)
    for where, report in reports:
        key = (
            report.candidate.sha256 if report.candidate else f"(unreadable) {where}",
            report.reference.sha256 if report.reference else "",
        )
        groups[key].append((where, report))
    compared, alone = [], []
    for (sha, _), members in groups.items():
        if len(members) < 2:
            alone.append(members[0][0])
            continue
        compared.append(_group(sha, members))
    return MachineComparison(groups=compared, alone=alone)


def machine_label(report: Report) -> str:
    """The hardware a report was proved on, in words."""
    environment = report.environment
    if environment.gpu is not None and environment.gpu.name:
        return f"{environment.gpu.name} (sm {environment.gpu.capability})"
    model = environment.cpu_model or environment.device_name or environment.device
    arch = f", {environment.arch}" if environment.arch else ""
    return f"{model}{arch}, {environment.matrix_threads or '?'} threads"


def _group(sha: str, members: list[tuple[str, Report]]) -> CandidateAcrossMachines:
    rows = []
    fingerprints = [report_fingerprint(report) for _, report in members]
    for (where, report), _fingerprint in zip(members, fingerprints):
        snapshot = verdict_snapshot(report, where)
        rows.append(
            MachineRow(
                where=where,
                machine=machine_label(report),
                environment=snapshot.environment,
                verdict=report.verdict,
                speedup=snapshot.speedup,
                speedup_ci=snapshot.speedup_ci,
                sol_fraction=snapshot.sol_fraction,
            )
        )
    names = sorted(
        {
            name
            for f in fingerprints
            for name in f.components
            if len({g.components.get(name) for g in fingerprints}) > 1
        }
    )
    effects: dict[str, str] = {}
    for other in fingerprints[1:]:
        for change in diff_fingerprints(fingerprints[0], other).changes:
            if change.effect is Effect.INVALIDATES or change.component not in effects:
                effects[change.component] = change.effect.value
    first = members[0][1]
    return CandidateAcrossMachines(
        candidate=first.candidate.path if first.candidate else "(unreadable)",
        candidate_sha256=sha,
        task=first.reference.path if first.reference else "(unreadable)",
        rows=rows,
        components={n: [f.components.get(n) for f in fingerprints] for n in names},
        effects=effects,
        flags=_flags(rows),
    )


def _flags(rows: list[MachineRow]) -> list[str]:
    flags = []
    verified = [r for r in rows if r.verdict is Verdict.VERIFIED]
    others = [r for r in rows if r.verdict is not Verdict.VERIFIED]
    if verified and others:
        flags.append(
            f"verified on {verified[0].machine} ({verified[0].where}), "
            f"{others[0].verdict.value} on {others[0].machine} ({others[0].where})"
        )
    fast = [r for r in verified if r.speedup_ci and r.speedup_ci[0] > 1]
    slow = [r for r in verified if r.speedup_ci and r.speedup_ci[1] < 1]
    if fast and slow:
        flags.append(
            f"faster than the reference on {fast[0].machine} "
            f"({fast[0].speedup:.2f}x), slower on {slow[0].machine} "
            f"({slow[0].speedup:.2f}x), beyond both intervals"
        )
    return flags
