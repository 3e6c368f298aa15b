"""The controller's judgement of a candidate worker's sandbox.

The worker says which mechanisms it entered (before any candidate code ran); /proc says which
namespaces, seccomp mode and capabilities its serving process really has. Both go into the
report. A gap in either is ``suspect``: a candidate that can reach the controller's siblings,
cache or network could have forged anything else. ``--insecure-sandbox`` turns that into a
``warn`` for machines that lack the kernel features.
"""

from __future__ import annotations

from dataclasses import asdict

from kernelproof.config import Settings
from kernelproof.schema import Finding, FindingCheck, Sandbox, Severity
from kernelproof.workers.process import WorkerProcess

#: Mechanisms without which the candidate could reach what it must not (see
#: docs/security.md): the namespaces and the filesystem wall. seccomp, the capability drop and
#: the limits are depth behind them; their absence is reported too, at the same severity.
REQUIRED = (
    "user-namespace",
    "pid-namespace",
    "net-namespace",
    "ipc-namespace",
    "mnt-namespace",
    "private-proc",
    "private-tmp-and-shm",
    "landlock",
    "seccomp",
    "no-capabilities",
    "resource-limits",
)


def sandbox_section(
    worker: WorkerProcess | None, settings: Settings
) -> tuple[Sandbox | None, list[Finding]]:
    """The report's sandbox section and the findings its gaps raise."""
    if worker is None:
        return None, []
    if not settings.sandbox:
        return Sandbox(enabled=False), [
            _gap(settings, "the candidate ran without the OS sandbox (sandbox=False)", {})
        ]
    said = worker.sandbox
    if said is None:  # it died before saying hello: the build failure says why
        return Sandbox(missing={"hello": "the worker never reported its sandbox"}), []
    outside = worker.confinement
    section = Sandbox(
        enforced=list(said["enforced"]),
        missing=dict(said["missing"]),
        outside=asdict(outside) if outside is not None else {},
        insecure_accepted=settings.insecure_sandbox,
    )
    entered = set(section.enforced)
    if any(m.startswith("landlock-abi-") for m in entered):
        entered.add("landlock")
    gaps = {m: section.missing.get(m, "not entered") for m in REQUIRED if m not in entered}
    seen_outside = outside.missing() if outside is not None else ["the /proc view"]
    findings = []
    if gaps or seen_outside:
        parts = [f"{m} ({why})" for m, why in gaps.items()]
        parts += [f"{m} (not seen from outside)" for m in seen_outside if m not in gaps]
        findings.append(
            _gap(
                settings,
                "the candidate worker's sandbox is incomplete: " + "; ".join(parts),
                {"missing": gaps, "outside": seen_outside},
            )
        )
    return section, findings


def _gap(settings: Settings, message: str, evidence: dict) -> Finding:
    if settings.insecure_sandbox:
        return Finding(
            check=FindingCheck.SANDBOX,
            severity=Severity.WARN,
            message=message + " (accepted: --insecure-sandbox)",
            evidence=evidence,
        )
    return Finding(
        check=FindingCheck.SANDBOX,
        severity=Severity.SUSPECT,
        message=message + ". A candidate outside the sandbox can reach the "
        "reference, the cache and the network, so nothing it did can be trusted; "
        "rerun on a kernel with user namespaces and Landlock, or accept the risk "
        "with --insecure-sandbox",
        evidence=evidence,
    )
