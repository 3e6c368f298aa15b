"""Turning what workers report into findings, with severities decided by the controller.

The candidate worker is untrusted: it may send any check name and any text. Only known checks
become findings, their severity comes from this table (never from the worker), and messages
are truncated.
"""

from __future__ import annotations

from typing import Any

from kernelproof.schema import Finding, Severity

#: Severity of each observation a worker may report. Unknown names are dropped.
OBSERVATION_SEVERITY: dict[str, Severity] = {
    "input-mutation": Severity.SUSPECT,
    "output-type": Severity.SUSPECT,
    "output-aliases-input": Severity.SUSPECT,
    "output-aliases-earlier-output": Severity.SUSPECT,
    "output-unstable": Severity.SUSPECT,
    # A live thread alone harms nothing we can see; the unstable-output probe catches threads
    # that finish the work late. Thread pools are common in honest code (inductor, executors).
    "new-threads": Severity.WARN,
    "tampering": Severity.SUSPECT,
    "audit-file-access": Severity.SUSPECT,
    "audit-network": Severity.SUSPECT,
    "audit-subprocess": Severity.SUSPECT,
    "audit-introspection": Severity.SUSPECT,
}

#: A worker message longer than this is cut: the report must stay readable.
MAX_MESSAGE_CHARS = 600


def findings_from_observations(
    observations: list[dict[str, Any]], *, variant: str | None = None
) -> list[Finding]:
    found = []
    for item in observations:
        if not isinstance(item, dict):
            continue
        check = item.get("check")
        severity = OBSERVATION_SEVERITY.get(check) if isinstance(check, str) else None
        if severity is None:
            continue
        evidence = item.get("evidence") if isinstance(item.get("evidence"), dict) else {}
        found.append(Finding(
            check=check,
            severity=severity,
            message=str(item.get("message", check))[:MAX_MESSAGE_CHARS],
            evidence=evidence,
            variant=variant,
        ))
    return found


def merge_findings(findings: list[Finding]) -> list[Finding]:
    """One finding per (check, message) pair, with the variants it was seen on collected."""
    merged: dict[tuple[str, str], Finding] = {}
    variants: dict[tuple[str, str], list[str]] = {}
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
            finding = finding.model_copy(update={
                "evidence": {**finding.evidence, "variants": seen_on},
                "variant": seen_on[0],
            })
        result.append(finding)
    order = {Severity.FAIL: 0, Severity.SUSPECT: 1, Severity.WARN: 2, Severity.INFO: 3}
    return sorted(result, key=lambda f: order[f.severity])
