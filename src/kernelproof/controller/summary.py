"""Findings derived from the correctness matrix, and the report's one-sentence summary."""

from __future__ import annotations

from kernelproof.report.sentences import headline, shorten
from kernelproof.schema import (
    Correctness,
    CorrectnessTest,
    Finding,
    FindingCheck,
    Severity,
    TestOutcome,
    Verdict,
)

#: Variants named in a finding's message; the rest are in its evidence.
NAMED_IN_MESSAGE = 4


#: How each bad outcome of a matrix cell becomes a finding: (check, severity, forced verdict,
#: message before the listing of variants).
_OUTCOME_FINDINGS = (
    (
        TestOutcome.FAILED,
        FindingCheck.CORRECTNESS,
        Severity.FAIL,
        Verdict.INCORRECT,
        "silently wrong on {n} of {total} variants",
    ),
    (
        TestOutcome.CRASHED,
        FindingCheck.CRASH,
        Severity.FAIL,
        Verdict.BROKEN,
        "the candidate's worker died or hung on {n} variant(s)",
    ),
    (
        TestOutcome.RAISED,
        FindingCheck.LIMITATION,
        Severity.WARN,
        None,
        "raises a clear error on {n} variant(s) the reference handles (a stated limitation)",
    ),
)


def correctness_findings(tests: list[CorrectnessTest]) -> list[Finding]:
    """One finding per kind of outcome that needs a reviewer's attention."""
    found: list[Finding] = []
    for outcome, check, severity, forces, template in _OUTCOME_FINDINGS:
        cells = [t for t in tests if t.outcome is outcome]
        if cells:
            found.append(
                Finding(
                    check=check,
                    severity=severity,
                    forces=forces,
                    message=template.format(n=len(cells), total=len(tests))
                    + ": "
                    + _listing(cells),
                    evidence={"variants": {t.variant.name: t.message for t in cells}},
                    variant=cells[0].variant.name,
                )
            )
    skipped = [t for t in tests if t.outcome is TestOutcome.SKIPPED]
    if skipped:
        found.append(
            Finding(
                check=FindingCheck.SKIPPED,
                severity=Severity.INFO,
                message=f"{len(skipped)} variant(s) skipped: the reference rejects them or they "
                "exceed this machine's budget",
                evidence={"variants": {t.variant.name: t.message for t in skipped}},
            )
        )
    return found


def combine_noise_findings(findings: list[Finding]) -> list[Finding]:
    """The per-shape ``timing-noise`` notes as one finding with a table (shape, side, note),
    in place of the first of them: twenty notes drown the findings that matter."""
    notes = [f for f in findings if f.check == FindingCheck.TIMING_NOISE]
    if len(notes) < 2:
        return findings
    table = [{"shape": (n.variant or "").removeprefix("timing:"), "note": n.message} for n in notes]
    shapes = sorted({row["shape"] for row in table})
    combined = Finding(
        check=FindingCheck.TIMING_NOISE,
        severity=Severity.INFO,
        message=f"timing was noisy at {len(shapes)} shape(s) ({', '.join(shapes[:6])}"
        + (", ..." if len(shapes) > 6 else "")
        + "): outliers or a wide spread, so "
        "times and speedups there are less precise; the evidence lists each note",
        evidence={"notes": table},
    )
    first = findings.index(notes[0])
    kept = [f for f in findings if f.check != FindingCheck.TIMING_NOISE]
    kept.insert(min(first, len(kept)), combined)
    return kept


def _listing(tests: list[CorrectnessTest]) -> str:
    named = []
    for test in tests[:NAMED_IN_MESSAGE]:
        detail = shorten(test.message.split(";")[0], 160)
        named.append(f"{test.variant.name} ({detail})" if detail else test.variant.name)
    more = len(tests) - NAMED_IN_MESSAGE
    return ", ".join(named) + (f", and {more} more" if more > 0 else "")


#: A summary longer than this is shortened (:func:`~kernelproof.report.sentences.headline`);
#: the findings hold the rest.
SUMMARY_CHARS = 200


def summarize(verdict: Verdict, findings: list[Finding], correctness: Correctness | None) -> str:
    """One plain sentence saying why the verdict is what it is."""
    tested = (
        [t for t in correctness.tests if t.outcome is not TestOutcome.SKIPPED]
        if (correctness is not None)
        else []
    )
    passed = sum(t.outcome is TestOutcome.PASSED for t in tested)
    if verdict is Verdict.VERIFIED:
        ratios = [t.error_ratio for t in tested if t.error_ratio is not None]
        worst = f"; worst error {max(ratios):.2g}x the reference's own" if ratios else ""
        return f"Correct on all {passed} tested variants with no integrity finding{worst}."
    decisive = next(
        (
            f
            for f in findings
            if f.forces is verdict
            or (f.forces is None and verdict is Verdict.SUSPECT and f.severity is Severity.SUSPECT)
            or (f.forces is None and verdict is Verdict.INCORRECT and f.severity is Severity.FAIL)
        ),
        findings[0] if findings else None,
    )
    reason = (
        headline(decisive.message, SUMMARY_CHARS) if decisive is not None else "see the findings"
    )
    prefix = {
        Verdict.INCORRECT: "Incorrect",
        Verdict.SUSPECT: "Suspect",
        Verdict.BROKEN: "Broken",
        Verdict.ERROR: "Error",
    }[verdict]
    return f"{prefix}: {reason}"
