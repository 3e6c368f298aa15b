"""Findings from the freezer's ledger: whether the candidate ran while it was not being asked.

Between its requests the candidate's whole process tree is stopped (see
:mod:`kernelproof.workers.freezer`); /proc's CPU accounting of the frozen intervals is a fact
the candidate cannot shape. CPU time accrued while frozen is ``suspect``: something in its
tree kept running (a helper finishing outputs after the call returned, a spinner slowing the
reference while it is timed, a child that escaped). Load cannot produce it: a process that
waits for a CPU accrues no CPU time.
"""

from __future__ import annotations

from kernelproof.schema import Finding, FindingCheck, Severity
from kernelproof.workers.freezer import FROZEN_CPU_FLOOR_S, FROZEN_CPU_SHARE, FreezeLedger


def frozen_findings(ledgers: list[FreezeLedger]) -> list[Finding]:
    """A ``suspect`` finding when any candidate worker ran while frozen, a ``warn`` when the
    freeze could not be applied (the controller's signals were refused), and an ``info`` when
    a stack sampler could not be kept stopped through a fetch."""
    findings: list[Finding] = []
    ran = [interval for ledger in ledgers for interval in ledger.ran]
    if ran:
        leaked = sum(ledger.leaked_cpu_s for ledger in ledgers)
        intervals = sum(ledger.intervals for ledger in ledgers)
        worst = max(ran, key=lambda interval: interval.cpu_s)
        findings.append(
            Finding(
                check=FindingCheck.RAN_WHILE_FROZEN,
                severity=Severity.SUSPECT,
                message=f"the candidate's processes used {leaked * 1e3:.1f} ms of CPU time while "
                f"they were frozen between requests ({len(ran)} of {intervals} frozen "
                f"intervals; the worst {worst.cpu_s * 1e3:.1f} ms in "
                f"{worst.seconds * 1e3:.0f} ms), read from /proc: it kept working while it "
                "was not being asked (outputs finished after a call returned, or load put "
                "on the reference while it was timed)",
                evidence={
                    "leaked_cpu_s": leaked,
                    "intervals_ran": len(ran),
                    "intervals": intervals,
                    "worst": {
                        "cpu_s": worst.cpu_s,
                        "frozen_s": worst.seconds,
                        "unstopped_threads": worst.unstopped,
                        "busiest": worst.busiest,
                    },
                    "allowed": {"floor_s": FROZEN_CPU_FLOOR_S, "share": FROZEN_CPU_SHARE},
                },
            )
        )
    holds = sum(ledger.holds for ledger in ledgers)
    unheld = sum(ledger.hold_failures for ledger in ledgers)
    if unheld:
        findings.append(
            Finding(
                check=FindingCheck.NATIVE_STACKS,
                severity=Severity.INFO,
                message=f"the stack sampler could not be kept stopped for {unheld} of {holds} "
                "fetches of the candidate's outputs (it still held the worker's threads): "
                "the CPU time of those fetches includes the sampler's pauses",
                evidence={"fetches": holds, "sampler_not_held": unheld},
            )
        )
    failures = [failure for ledger in ledgers for failure in ledger.failures]
    if failures:
        findings.append(
            Finding(
                check=FindingCheck.RAN_WHILE_FROZEN,
                severity=Severity.WARN,
                message="the candidate's processes could not all be frozen between requests: "
                + failures[0],
                evidence={"failures": failures[:5]},
            )
        )
    return findings
