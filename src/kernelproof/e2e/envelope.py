"""The envelope check: every host call signature the isolated matrix did not cover is verified
in isolation at that exact signature (shape, dtype, strides; the constructor arguments of the
instance that made the call).

A decode loop makes a new signature per step, so there can be hundreds. All of them are
verified, none only counted; the cost stays sane because
- many signatures share one verification (one shape group each, up to
  :data:`SIGNATURES_PER_VERIFICATION`): one worker pair, one build, one warm-up;
- the first :data:`FULL_SEED_CHECKS` (one per layout class first, then the largest: where a
  kernel breaks) get the run's seeds, the rest one seed each: a size-dependent bug shows on
  any input at that size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kernelproof.e2e.generated import CALL_BASE, HostFiles, signatures_task
from kernelproof.e2e.trace_record import TargetTrace
from kernelproof.schema import Finding, FindingCheck, Report, Severity, TestOutcome, Verdict
from kernelproof.schema.e2e import SignatureCoverage, Substitution
from kernelproof.schema.envelope import CallSignature, TensorSignature

#: Uncovered signatures verified with the run's seeds (at most 2); the rest get one seed.
#: One per layout class comes first, then the largest.
FULL_SEED_CHECKS = 32

#: Seeds of the first checks: the matrix's default is more, but the inputs here are fixed by
#: the host's signature, so more seeds only redraw values.
FULL_SEEDS = 2

#: Shape groups per verification: its generated task holds one input recipe per signature,
#: and a verification's cells stay together in the report; the index knob must stay below
#: twice ``CALL_BASE`` (above, the matrix treats a size as stress and skips the oracle).
SIGNATURES_PER_VERIFICATION = 128

#: Settings of these verifications: the declared SHAPES (one per signature) are what runs,
#: also under ``--fixed-shapes`` (which restricts the host's matrix, not these checks);
#: generated shapes and layouts would test other calls.
SETTINGS: dict[str, Any] = {
    "shape_variants": True,
    "generated_shapes": False,
    "layout_variants": False,
    "timing": False,
    "shrink": False,
    "seeds": FULL_SEEDS,
}

#: ``verify_at(file name, task text, overrides)``: the run's verification of the candidate
#: against a generated task of the module.
VerifyAt = Callable[[str, str, dict[str, Any]], Report]


def coverage_rows(substitution: Substitution, trace: TargetTrace) -> list[SignatureCoverage]:
    """Every host signature against the isolated envelope (uncovered ones ``not-checked``
    until verified)."""
    envelope = substitution.envelope
    rows = []
    for signature, calls, source in zip(
        trace.signatures, trace.signature_counts, trace.signature_sources
    ):
        covered = bool(envelope and envelope.contains(signature))
        rows.append(
            SignatureCoverage(
                signature=signature,
                calls=calls,
                first_seen=source,
                covered=covered,
                check="matrix" if covered else "not-checked",
            )
        )
    return rows


def plan_checks(rows: list[SignatureCoverage]) -> list[tuple[list[SignatureCoverage], int]]:
    """Batches of uncovered rows and their seeds: every row, in order of worth, the first
    :data:`FULL_SEED_CHECKS` with :data:`FULL_SEEDS` seeds, the rest with one."""
    ordered = worth_checking(rows)
    tiers = [(ordered[:FULL_SEED_CHECKS], FULL_SEEDS), (ordered[FULL_SEED_CHECKS:], 1)]
    return [
        (tier[start : start + SIGNATURES_PER_VERIFICATION], seeds)
        for tier, seeds in tiers
        for start in range(0, len(tier), SIGNATURES_PER_VERIFICATION)
    ]


def check_uncovered(
    target: str,
    host: HostFiles,
    trace: TargetTrace,
    rows: list[SignatureCoverage],
    verify_at: VerifyAt,
) -> list[Finding]:
    """Verify the module at every uncovered row's signature; fill each row's check, verdict
    and error ratio; return the findings (failures per verdict, what stopped a verification,
    and the count)."""
    uncovered = [r for r in rows if not r.covered]
    if not uncovered:
        return []
    inits = dict(zip(trace.signatures, trace.signature_init))
    findings: list[Finding] = []
    started = time.monotonic()
    batches = plan_checks(uncovered)
    failing: dict[Verdict, list[tuple[SignatureCoverage, Any]]] = {}
    for number, (batch, seeds) in enumerate(batches):
        text = signatures_task(
            host,
            trace,
            [(r.signature, inits.get(r.signature, trace.instances[0].init_repr)) for r in batch],
        )
        report = verify_at(f"signatures_{number}.py", text, {**SETTINGS, "seeds": seeds})
        for row, first in _apply_cells(batch, report, seeds):
            # _apply_cells gave every row it returns a verdict.
            failing.setdefault(row.verdict, []).append((row, first))  # type: ignore[arg-type]  # ^
        # What is not about one cell (integrity, a crash that stopped the run) is reported too.
        findings += [
            f.model_copy(
                update={
                    "message": f"at the host's signatures ({target}): {f.message}",
                    "variant": f"at the host's signatures ({target})",
                }
            )
            for f in report.findings
            if f.severity in (Severity.FAIL, Severity.SUSPECT)
            and f.check is not FindingCheck.CORRECTNESS
        ]
    for verdict, found in failing.items():
        row, first = found[0]
        findings.append(
            Finding(
                check=FindingCheck.E2E_ENVELOPE,
                severity=Severity.FAIL,
                forces=verdict,
                message=f"the host calls {target} at {len(found)} signature(s) outside the "
                f"isolated matrix where it is {verdict.value}; first "
                f"{row.signature.describe()} (first in {row.first_seen}): "
                f"{first.message[:300]}",
                evidence={
                    "signatures": [r.signature.describe() for r, _ in found][:20],
                    "first_seen": [r.first_seen for r, _ in found][:20],
                    "calls": sum(r.calls for r, _ in found),
                },
            )
        )
    findings.append(
        _count_finding(target, rows, uncovered, len(batches), time.monotonic() - started)
    )
    return findings


def _apply_cells(
    batch: list[SignatureCoverage], report: Report, seeds: int
) -> list[tuple[SignatureCoverage, Any]]:
    """Each row gets the verdict of its own cells; returns the failing rows with their first
    failing cell."""
    cells: dict[int, list[Any]] = {}
    for test in report.correctness.tests if report.correctness else []:
        index = test.variant.knobs.get("signature", CALL_BASE) - CALL_BASE
        cells.setdefault(index, []).append(test)
    failing = []
    for index, row in enumerate(batch):
        verdict = cells_verdict(cells.get(index, []))
        if verdict is None:
            continue  # not run: the verification stopped before it (its findings say why)
        ratios = [t.error_ratio for t in cells[index] if t.error_ratio is not None]
        row.check, row.verdict, row.seeds = "verified-here", verdict, seeds
        row.error_ratio = max(ratios) if ratios else None
        if verdict is not Verdict.VERIFIED:
            failing.append(
                (
                    row,
                    next(
                        t
                        for t in cells[index]
                        if t.outcome not in (TestOutcome.PASSED, TestOutcome.SKIPPED)
                    ),
                )
            )
    return failing


def _count_finding(
    target: str,
    rows: list[SignatureCoverage],
    uncovered: list[SignatureCoverage],
    verifications: int,
    seconds: float,
) -> Finding:
    checked = [r for r in uncovered if r.check == "verified-here"]
    skipped = [r for r in uncovered if r.check == "not-checked"]
    one_seed = [r for r in checked if r.seeds == 1]
    return Finding(
        check=FindingCheck.E2E_ENVELOPE,
        severity=Severity.WARN if skipped else Severity.INFO,
        message=f"the host calls {target} with {len(uncovered)} of {len(rows)} signature(s) "
        f"outside the isolated matrix; {len(checked)} verified in isolation at the "
        f"exact signature ({verifications} verification(s), {seconds:.1f} s"
        + (f"; {len(one_seed)} with one seed" if one_seed else "")
        + ")"
        + (
            f"; {len(skipped)} could not be run: the verification stopped before them "
            "(its findings say why)"
            if skipped
            else ""
        ),
        evidence={
            "uncovered": len(uncovered),
            "verified": len(checked),
            "one_seed": len(one_seed),
            "not_run": len(skipped),
            "verifications": verifications,
            "seconds": round(seconds, 2),
            "not_run_signatures": [r.signature.describe() for r in skipped][:20],
        },
    )


def worth_checking(rows: list[SignatureCoverage]) -> list[SignatureCoverage]:
    """All rows, one per layout class (dtype, rank, strides order, contiguity) first, then the
    largest: a kernel that breaks on a layout breaks on its first signature."""

    def layout(row: SignatureCoverage) -> tuple:
        return tuple(
            (
                a.dtype,
                len(a.shape),
                a.contiguous,
                tuple(sorted(range(len(a.strides)), key=lambda d: -a.strides[d])),
            )
            if isinstance(a, TensorSignature)
            else ("value", a.type)
            for a in row.signature.args
        )

    ordered = sorted(rows, key=lambda r: elements(r.signature), reverse=True)
    seen: set[tuple] = set()
    first = []
    for row in ordered:
        if layout(row) not in seen:
            seen.add(layout(row))
            first.append(row)
    chosen = {id(r) for r in first}
    return first + [r for r in ordered if id(r) not in chosen]


def elements(signature: CallSignature) -> int:
    """The elements of a call's tensor arguments, summed (its size, for ordering)."""
    total = 0
    for arg in signature.args:
        if isinstance(arg, TensorSignature):
            count = 1
            for size in arg.shape:
                count *= size
            total += count
    return total


def cells_verdict(tests: list[Any]) -> Verdict | None:
    """The verdict of one signature's cells: a crash or a raise (the host would crash there
    too) is ``broken``, a wrong answer ``incorrect``; None when none ran."""
    outcomes = {t.outcome for t in tests} - {TestOutcome.SKIPPED}
    if not outcomes:
        return None
    if outcomes & {TestOutcome.CRASHED, TestOutcome.RAISED}:
        return Verdict.BROKEN
    if TestOutcome.FAILED in outcomes:
        return Verdict.INCORRECT
    return Verdict.VERIFIED
