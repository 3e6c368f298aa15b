"""A report as a coding agent reads it: short, actionable text, not a wall of JSON.

What a model needs to fix its kernel comes first: the verdict and the stage that decided
it, the smallest failing input (shrunk knobs, seed, value and layout transform, and the
command that reproduces it), the assumption inferred from the failing cells, and the
integrity findings with their evidence in one line each. The speed follows when measured.
"""

from __future__ import annotations

from kernelproof.report.sentences import shorten
from kernelproof.report.summary_text import speed_sentence, summary_paragraph
from kernelproof.schema import Report, Severity, TestOutcome, Verdict

#: Findings listed by :func:`brief`; :func:`explain` lists them all.
BRIEF_FINDINGS = 4

#: Failing cells :func:`explain` lists before it counts the rest.
EXPLAIN_CELLS = 8

#: Characters of one finding's message in a listing.
MESSAGE_CHARS = 400

#: What a model should do next, per verdict.
NEXT_STEP = {
    Verdict.VERIFIED: "The kernel is verified. Make it faster, or call bench for its speedup.",
    Verdict.INCORRECT: "Fix the wrong answer: reproduce the smallest failing input below, then "
    "verify again.",
    Verdict.SUSPECT: "Remove what the integrity findings name: they mean the kernel does not "
    "do the work itself, or tampers with what measures it. A suspect kernel "
    "earns nothing, however fast.",
    Verdict.BROKEN: "Make it build and run: the error is below.",
    Verdict.ERROR: "The task or the request is at fault, not your kernel: read the message.",
}


def brief(report: Report, report_id: str | None = None) -> str:
    """A few lines: verdict, why, the smallest failing input, what to do next."""
    lines = [_verdict_line(report, report_id)]
    lines += _failing_input(report)
    lines += [f"- assumption: {a.statement}" for a in report.assumptions[:2]]
    lines += [_finding_line(f) for f in _important(report)[:BRIEF_FINDINGS]]
    if report.timing is not None:
        lines.append(f"- speed: {speed_sentence(report)}")
    lines.append(f"next: {NEXT_STEP[report.verdict]}")
    if report_id is not None and report.verdict is not Verdict.VERIFIED:
        lines.append(f"(explain with report_id={report_id} for every finding and cell)")
    return "\n".join(lines)


def explain(report: Report) -> str:
    """The review packet as text: summary, every finding by severity, assumptions with their
    counter-examples, shrunk repros with commands, the failing cells, the op audit."""
    lines = [_verdict_line(report, None), "", summary_paragraph(report), ""]
    for severity in (Severity.FAIL, Severity.SUSPECT, Severity.WARN, Severity.INFO):
        found = [f for f in report.findings if f.severity is severity]
        if found:
            lines.append(f"{severity.value} findings:")
            lines += [_finding_line(f) for f in found]
    if report.assumptions:
        lines.append("assumptions inferred from the matrix:")
        for assumption in report.assumptions:
            counter = "; ".join(assumption.counter_examples[:3])
            lines.append(f"- {assumption.statement}" + (f" (e.g. {counter})" if counter else ""))
    if report.repros:
        lines.append("smallest failing inputs:")
        for repro in report.repros:
            lines.append(f"- {_repro_line(repro)}")
    cells = _failed_cells(report)
    if cells:
        lines.append("failing cells:")
        lines += cells
    audit = report.op_audit
    if audit is not None and audit.calls:
        ops = ", ".join(
            f"{name} x{count}"
            for name, count in sorted(audit.candidate_ops.items(), key=lambda kv: -kv[1])[:8]
        )
        kernels = ", ".join(audit.custom_kernels) or "none"
        lines.append(
            f"op audit: {audit.calls} calls; custom kernels that ran: {kernels}; "
            f"torch ops: {ops or 'none'}"
        )
    if report.timing is not None:
        lines.append(f"speed: {speed_sentence(report)}")
    lines.append(f"next: {NEXT_STEP[report.verdict]}")
    return "\n".join(line for line in lines).strip() + "\n"


def _verdict_line(report: Report, report_id: str | None) -> str:
    decided = (
        report.pipeline.decided_by.value if report.pipeline and report.pipeline.decided_by else None
    )
    where = f" (decided by the {decided} stage)" if decided else ""
    cells = report.correctness.tests if report.correctness else []
    passed = sum(t.outcome is TestOutcome.PASSED for t in cells)
    tested = f"; {passed} of {len(cells)} cells passed" if cells else ""
    named = f" [report {report_id}]" if report_id else ""
    return f"verdict: {report.verdict.value}{where}{tested}{named}"


def _important(report: Report) -> list:
    ranked = sorted(
        (
            f
            for f in report.findings
            if f.severity in (Severity.FAIL, Severity.SUSPECT, Severity.WARN)
        ),
        key=lambda f: -f.severity.rank,
    )
    return ranked


def _finding_line(finding) -> str:
    message = " ".join(finding.message.split())
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 3] + "..."
    where = f" [{finding.variant}]" if finding.variant else ""
    return f"- {finding.severity.value} {finding.check}{where}: {message}"


def _failing_input(report: Report) -> list[str]:
    if report.repros:
        return [f"- smallest failing input: {_repro_line(report.repros[0])}"]
    failed = [
        t
        for t in (report.correctness.tests if report.correctness else [])
        if t.outcome is TestOutcome.FAILED
    ]
    if not failed:
        return []
    first = min(failed, key=lambda t: (len(t.variant.name), t.variant.name))
    detail = shorten(" ".join((first.message or "").split()), MESSAGE_CHARS)
    return [f"- first failing input: {first.variant.name} (seed {first.seed}): {detail}"]


def _repro_line(repro) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in repro.knobs.items())
    extra = "".join(
        f", {name} {value}"
        for name, value in (("value", repro.value), ("layout", repro.layout))
        if value
    )
    failure = shorten(" ".join(repro.failure.split()), 300)
    return f"{knobs} (seed {repro.seed}{extra}): {failure}; reproduce with: {repro.command}"


def _failed_cells(report: Report) -> list[str]:
    bad = [
        t
        for t in (report.correctness.tests if report.correctness else [])
        if t.outcome in (TestOutcome.FAILED, TestOutcome.CRASHED, TestOutcome.RAISED)
    ]
    lines = [
        f"- {t.variant.name}: {t.outcome.value}"
        + (f", error ratio {t.error_ratio:.3g}" if t.error_ratio is not None else "")
        + (f": {shorten(' '.join((t.message or '').split()), 200)}" if t.message else "")
        for t in bad[:EXPLAIN_CELLS]
    ]
    if len(bad) > EXPLAIN_CELLS:
        lines.append(f"- ... and {len(bad) - EXPLAIN_CELLS} more")
    return lines
