"""A cheap adequacy check inside ``verify``: is the task able to tell right from wrong at all?

``kernelproof audit-task`` runs the full task-adequacy audit. ``verify`` runs a cheap part of it
on the default shape's outputs it already has (no extra worker calls):

* the reference's output does not depend on its inputs: every seed gave the same oracle
  output (one published problem takes a softmax over a dimension of size 1, so every output
  is 1.0 and any candidate returning ones passes);
* a mutant that must be rejected (zeros, a constant, a 1% perturbation, a bf16 round trip)
  passes the comparator on the first seeds.

Either is a ``warn`` naming the task as degenerate: the verdict stands, but it proves little.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from kernelproof.checks.adequacy import audit_output, find_problems
from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.schema import Finding, Severity
from kernelproof.schema.checks import FindingCheck

#: Seeds whose outputs go through the mutants: one shows a degenerate comparator; a second
#: keeps a fluke of one draw (an output tiny by chance) from standing alone. More costs time.
MUTANT_SEEDS = 2


@dataclass(frozen=True)
class DefaultCall:
    """The reference's outputs on one seed of the default shape."""

    seed: int
    outputs: Sequence[torch.Tensor]
    oracle: Sequence[torch.Tensor]


def degenerate_findings(
    calls: Sequence[DefaultCall], policy: TolerancePolicy, task: str
) -> list[Finding]:
    """``warn`` findings for a task whose checks prove little (none for a sound task)."""
    findings: list[Finding] = []
    # One call per seed: the matrix repeats a seed's inputs (a second run, one thread), and
    # the same inputs giving the same outputs says nothing about the task (``--seeds 1``).
    first: dict[int, DefaultCall] = {}
    for call in calls:
        first.setdefault(call.seed, call)
    calls = list(first.values())
    if _ignores_inputs(calls):
        findings.append(
            Finding(
                check=FindingCheck.DEGENERATE_TASK,
                severity=Severity.WARN,
                message=f"degenerate task {task}: the reference's output is the same on all "
                f"{len(calls)} seeds, so it does not depend on its inputs (or they do not "
                "vary) and a candidate returning that constant passes; check the task's "
                "shapes (a reduction over a dimension of size 1?) and its get_inputs()",
                evidence={"seeds": [c.seed for c in calls]},
            )
        )
    audits = [
        audit_output(out, oracle, policy=policy, seed=call.seed, index=index)
        for call in calls[:MUTANT_SEEDS]
        for index, (out, oracle) in enumerate(zip(call.outputs, call.oracle))
    ]
    if any(audit.wrongly_accepted for audit in audits):
        # Rejected controls (a comparator too tight) are audit-task's to report.
        problems = [p for p in find_problems(audits, policy) if "accepted" in p]
        findings.append(
            Finding(
                check=FindingCheck.DEGENERATE_TASK,
                severity=Severity.WARN,
                message=f"degenerate task {task}: a wrong answer passes its comparator: "
                f"{problems[0] if problems else 'a must-reject mutant is accepted'}. "
                f"Run `kernelproof audit-task {task}` for the full audit",
                evidence={"problems": problems},
            )
        )
    return findings


def _ignores_inputs(calls: Sequence[DefaultCall]) -> bool:
    """Every seed's outputs equal the first seed's (at least two seeds, non-empty outputs)."""
    if len(calls) < 2 or not calls[0].oracle:
        return False
    first = calls[0].oracle
    if all(o.numel() == 0 for o in first):
        return False
    return all(
        len(c.oracle) == len(first)
        and all(a.shape == b.shape and torch.equal(a, b) for a, b in zip(c.oracle, first))
        for c in calls[1:]
    )
