"""The finding for a module that passes in isolation but breaks its host, in words that match
the evidence.

The host's verification can be ``incorrect`` with no wrong cell in its matrix (a non-finite
output, nondeterminism, a wrong timed output), and the soak can show drift that no single call
does. A message built for the first case read "wrong on 0 variant(s), first ?" in the second:
here each case says what did fail, and a clause whose number is unknown is left out rather
than filled with a placeholder.
"""

from __future__ import annotations

from kernelproof.report.sentences import headline
from kernelproof.schema import Finding, FindingCheck, Report, Severity, TestOutcome, Verdict
from kernelproof.schema.e2e import Attribution

#: Characters of each cause's own message quoted in the finding.
CAUSE_CHARS = 160


def host_failure_finding(
    targets: list[str], host_report: Report, attribution: Attribution, later_findings: list[Finding]
) -> Finding | None:
    """The ``e2e-correctness`` finding when the replaced modules passed alone but the host's
    verification is ``incorrect``, naming what failed: its wrong variants, else its decisive
    findings and any drift the soak (``later_findings``) showed; else None."""
    failed = [
        t
        for t in (host_report.correctness.tests if host_report.correctness else [])
        if t.outcome is TestOutcome.FAILED
    ]
    drift = [f for f in later_findings if f.check is FindingCheck.SOAK_DRIFT]
    if host_report.verdict is not Verdict.INCORRECT:
        return None
    names = ", ".join(targets)
    repro = host_report.repros[0].command if host_report.repros else None
    if failed:
        what = (
            f"the host's outputs are wrong on {len(failed)} variant(s), first "
            f"{failed[0].variant.name}"
        )
    else:
        causes = [
            f
            for f in host_report.findings
            if f.forces is Verdict.INCORRECT and f.check is not FindingCheck.E2E_CORRECTNESS
        ]
        causes += drift
        if not causes:
            return None  # nothing says what failed: the host's own findings carry the verdict
        what = (
            "the host fails: "
            + "; ".join(_cause(f) for f in causes[:2])
            + (f"; and {len(causes) - 2} more" if len(causes) > 2 else "")
        )
        repro = repro or next(
            (str(f.evidence.get("repro")) for f in drift if f.evidence.get("repro")), None
        )
    ratios = _ratios(attribution)
    return Finding(
        check=FindingCheck.E2E_CORRECTNESS,
        severity=Severity.FAIL,
        forces=Verdict.INCORRECT,
        message=f"{names} passes in isolation but {what}"
        + (f"; {ratios}" if ratios else "")
        + (f". Reproduce: {repro}" if repro else ""),
        evidence={
            "failed_variants": [t.variant.name for t in failed][:10],
            "causes": [f.check.value for f in host_report.findings if f.forces is Verdict.INCORRECT]
            + [f.check.value for f in drift],
            "max_local_error_ratio": attribution.max_local_error_ratio,
            "host_error_ratio": attribution.host_error_ratio,
            "repro": repro,
        },
    )


def _cause(finding: Finding) -> str:
    if finding.check is FindingCheck.SOAK_DRIFT:
        return f"drift in the soak ({headline(finding.message, CAUSE_CHARS)})"
    return f"{finding.check.value} ({headline(finding.message, CAUSE_CHARS)})"


def _ratios(attribution: Attribution) -> str:
    """The attribution's error ratios that were measured, in words; empty when none was."""
    parts = []
    if attribution.max_local_error_ratio is not None:
        parts.append(
            f"the worst local error ratio at the replaced calls is "
            f"{attribution.max_local_error_ratio:.2f}x"
        )
    if attribution.host_error_ratio is not None:
        parts.append(f"at the host's outputs {attribution.host_error_ratio:.2f}x")
    return ", ".join(parts)
