"""Turning what workers report into findings, with severities decided by the controller.

The candidate worker is untrusted: it may send any check name and any text. Only known checks
become findings, their severity comes from this table (never from the worker), and messages
are truncated.
"""

from __future__ import annotations

from typing import Any

from kernelproof.schema import Finding, FindingCheck, Severity

#: Severity of each observation a worker may report. Unknown names are dropped.
OBSERVATION_SEVERITY: dict[FindingCheck, Severity] = {
    FindingCheck.INPUT_MUTATION: Severity.SUSPECT,
    FindingCheck.OUTPUT_TYPE: Severity.SUSPECT,
    FindingCheck.OUTPUT_ALIASES_INPUT: Severity.SUSPECT,
    FindingCheck.OUTPUT_ALIASES_EARLIER_OUTPUT: Severity.SUSPECT,
    FindingCheck.OUTPUT_UNSTABLE: Severity.SUSPECT,
    # A live thread alone harms nothing we can see; the unstable-output probe catches threads
    # that finish the work late. Thread pools are common in honest code (inductor, executors).
    FindingCheck.NEW_THREADS: Severity.WARN,
    FindingCheck.TAMPERING: Severity.SUSPECT,
    FindingCheck.AUDIT_FILE_ACCESS: Severity.SUSPECT,
    FindingCheck.AUDIT_NETWORK: Severity.SUSPECT,
    FindingCheck.AUDIT_SUBPROCESS: Severity.SUSPECT,
    FindingCheck.AUDIT_INTROSPECTION: Severity.SUSPECT,
}

#: The ids a worker may report, as the plain strings that arrive on the wire.
_OBSERVABLE = frozenset(check.value for check in OBSERVATION_SEVERITY)

#: A worker message longer than this is cut: the report must stay readable.
MAX_MESSAGE_CHARS = 600


def findings_from_observations(
    observations: list[dict[str, Any]], *, variant: str | None = None
) -> list[Finding]:
    """Findings for the known observations of a worker's reply; anything else is dropped."""
    found = []
    for item in observations:
        if not isinstance(item, dict):
            continue
        name = item.get("check")
        if not isinstance(name, str) or name not in _OBSERVABLE:
            continue
        check = FindingCheck(name)
        severity = OBSERVATION_SEVERITY[check]
        reported = item.get("evidence")
        evidence: dict[str, Any] = reported if isinstance(reported, dict) else {}
        found.append(
            Finding(
                check=check,
                severity=severity,
                message=str(item.get("message", name))[:MAX_MESSAGE_CHARS],
                evidence=evidence,
                # Probes deferred past their reply name the call they checked.
                variant=item["variant"] if isinstance(item.get("variant"), str) else variant,
            )
        )
    return found


def merge_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per (check, message) pair, with the variants it was seen on collected."""
    merged: dict[tuple[FindingCheck, str], Finding] = {}
    variants: dict[tuple[FindingCheck, str], list[str]] = {}
    for finding in findings:
        key = (finding.check, finding.message)
        if key not in merged:
            merged[key] = finding
            variants[key] = []
        if finding.variant and finding.variant not in variants[key]:
            variants[key].append(finding.variant)
    result = []
    for key, finding in merged.items():
        seen_on = variants[key]
        if len(seen_on) > 1:
            finding = finding.model_copy(
                update={
                    "evidence": {**finding.evidence, "variants": seen_on},
                    "variant": seen_on[0],
                }
            )
        result.append(finding)
    order = {Severity.FAIL: 0, Severity.SUSPECT: 1, Severity.WARN: 2, Severity.INFO: 3}
    return sorted(result, key=lambda f: order[f.severity])
