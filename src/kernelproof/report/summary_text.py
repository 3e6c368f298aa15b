"""The packet's summary paragraph: what was tested, what held, what failed, and the speed.

Written for a reviewer who reads one paragraph and nothing else. Every sentence is derived from
the report's data, so the terminal and the HTML packet say the same thing.
"""

from __future__ import annotations

from collections import Counter

from kernelproof.report import formatting as fmt
from kernelproof.report import sentences
from kernelproof.schema import Correctness, Report, Severity, TestOutcome, Timing, Verdict

#: Failing cells named in the summary before the rest are counted ("and 4 more").
NAMED_FAILURES = 3

#: Characters of the recorded summary quoted as the verdict's reason; the findings hold the rest.
REASON_CHARS = 240

#: Characters of the recorded summary the verdict banner shows.
HEADLINE_CHARS = 300

#: Variant kinds in the order the summary lists them, with the noun for their count.
_KIND_NOUNS = (
    ("seed", "seed"),
    ("shape", "shape"),
    ("value", "value transform"),
    ("layout", "layout"),
    ("repeat", "repeat"),
)


def headline(report: Report) -> str:
    """The recorded one-line summary without its verdict prefix (the banner shows the verdict),
    cut to :data:`HEADLINE_CHARS`."""
    return (
        sentences.headline(_without_verdict(report.summary), HEADLINE_CHARS)
        or "No reason was recorded."
    )


def summary_paragraph(report: Report) -> str:
    """One paragraph in plain words: what was tested, what held, what failed, and the speed."""
    sentences = [_tested(report)]
    if report.correctness is not None and report.correctness.tests:
        sentences += _held_and_failed(report.correctness)
    sentences += _integrity(report)
    if report.assumptions:
        sentences.append("It assumes: " + "; ".join(a.statement for a in report.assumptions) + ".")
    sentences.append(speed_sentence(report))
    return " ".join(s for s in sentences if s)


def _tested(report: Report) -> str:
    candidate = report.candidate.path if report.candidate else "the candidate"
    reference = report.reference.path if report.reference else "the reference"
    where = report.environment.device
    if report.environment.device_name:
        where += f" ({report.environment.device_name})"
    correctness = report.correctness
    if correctness is None or not correctness.tests:
        why = _first_sentence(report.summary)
        return (
            f"kernelproof checked {candidate} against {reference} on {where}, but no "
            f"correctness matrix ran: {why}"
        )
    kinds = Counter(t.variant.kind.value for t in correctness.tests)
    parts = [fmt.plural(kinds[k], noun) for k, noun in _KIND_NOUNS if kinds[k]]
    return (
        f"kernelproof checked {candidate} against {reference} on {where} with "
        f"{fmt.plural(len(correctness.tests), 'input variant')} ({', '.join(parts)}; default "
        f"shape {fmt.knobs(correctness.default_knobs)}), {_tolerance(correctness)}."
    )


def _tolerance(correctness: Correctness) -> str:
    tolerance = correctness.tolerance
    if tolerance.get("mode") == "fixed":
        return (
            f"compared with a fixed tolerance (atol={tolerance.get('atol')}, "
            f"rtol={tolerance.get('rtol')})"
        )
    factor = tolerance.get("factor")
    within = (
        f" within {factor:g}x the reference's own error" if isinstance(factor, (int, float)) else ""
    )
    return f"each compared with a float64 oracle{within}"


def _held_and_failed(correctness: Correctness) -> list[str]:
    tests = correctness.tests
    counts = Counter(t.outcome for t in tests)
    passed = [
        t.error_ratio
        for t in tests
        if t.outcome is TestOutcome.PASSED and t.error_ratio is not None
    ]
    worst = f"; the worst error was {fmt.ratio(max(passed))}x the reference's own" if passed else ""
    if counts[TestOutcome.PASSED] == len(tests):
        held = f"All {len(tests)} passed{worst}."
    else:
        held = f"{counts[TestOutcome.PASSED]} of {len(tests)} passed{worst}."
    sentences = [held]
    failed = [t for t in tests if t.outcome is TestOutcome.FAILED]
    if failed:
        names = ", ".join(t.variant.name for t in failed[:NAMED_FAILURES])
        more = f" and {len(failed) - NAMED_FAILURES} more" if len(failed) > NAMED_FAILURES else ""
        sentences.append(
            f"{fmt.plural(len(failed), 'variant')} gave a silently wrong answer ({names}{more})."
        )
    if counts[TestOutcome.RAISED]:
        sentences.append(
            f"{fmt.plural(counts[TestOutcome.RAISED], 'variant')} raised a clear "
            "exception (a stated limitation)."
        )
    if counts[TestOutcome.CRASHED]:
        sentences.append(
            f"{fmt.plural(counts[TestOutcome.CRASHED], 'variant')} crashed the candidate's worker."
        )
    if counts[TestOutcome.SKIPPED]:
        sentences.append(
            f"{fmt.plural(counts[TestOutcome.SKIPPED], 'variant')} "
            f"{'was' if counts[TestOutcome.SKIPPED] == 1 else 'were'} skipped."
        )
    return sentences


def _integrity(report: Report) -> list[str]:
    """The verdict and the integrity evidence, unless an earlier sentence already gave the
    reason (a failed matrix cell, or no matrix at all)."""
    if report.verdict is Verdict.VERIFIED:
        return ["No integrity finding reached severity suspect."]
    correctness = report.correctness
    explained = (
        correctness is None
        or not correctness.tests
        or (report.verdict is Verdict.INCORRECT and bool(correctness.failures))
    )
    reason = "" if explained else f": {_first_sentence(report.summary)}"
    sentences = [f"Verdict {report.verdict.value}{reason or '.'}"]
    serious = [f for f in report.findings if f.severity is Severity.SUSPECT]
    if serious:
        checks = sorted({f.check for f in serious})
        sentences.append(
            f"{fmt.plural(len(serious), 'integrity finding')} at severity suspect "
            f"({', '.join(checks)})."
        )
    return sentences


def speed_sentence(report: Report) -> str:
    """How fast the candidate is, or why it was not timed."""
    timing = report.timing
    if timing is None:
        return f"It was not timed: {not_timed_reason(report)}."
    return " ".join(
        s
        for s in (
            _default_speed(timing),
            _shape_speed(timing),
            _baseline_speed(timing),
            _sol(report),
        )
        if s
    )


def not_timed_reason(report: Report) -> str:
    """Why a report has no timing section, as a clause: "timing was turned off (...)"."""
    if report.settings.get("timing") is False:
        return "timing was turned off (--no-timing or timing=False)"
    if report.verdict in (Verdict.VERIFIED, Verdict.SUSPECT):
        return "the default shape could not be timed"
    return (
        f"timing runs only on a candidate that computes the right answers, and the verdict "
        f"is {report.verdict.value}"
    )


def _default_speed(timing: Timing) -> str:
    direction = (
        "faster than"
        if timing.speedup_ci[0] > 1
        else ("slower than" if timing.speedup_ci[1] < 1 else "indistinguishable from")
    )
    return (
        f"At the default shape the candidate is {direction} the reference: speedup "
        f"{fmt.speedup(timing.speedup)} (95% CI {fmt.interval(timing.speedup_ci)}; "
        f"{fmt.seconds(timing.candidate.median_s)} against "
        f"{fmt.seconds(timing.reference.median_s)} per call)."
    )


def _shape_speed(timing: Timing) -> str:
    if len(timing.per_shape) < 2:
        return ""
    range_text = shape_range(timing)
    return (range_text[0].upper() + range_text[1:] + ".") if range_text else ""


def shape_range(timing: Timing) -> str:
    """The speedup's range over the timed shapes that have an interval, saying how many were
    left out for having none; empty for a single timed shape."""
    if len(timing.per_shape) < 2:
        return ""
    spread = timing.speedup_range
    measured = len(timing.per_shape) - len(timing.shapes_without_interval)
    text = ""
    if spread and measured > 1:
        text = (
            f"over {fmt.plural(measured, 'timed shape')} with an interval the speedup "
            f"ranges from {fmt.speedup(spread.get('min'))} to "
            f"{fmt.speedup(spread.get('max'))} (median {fmt.speedup(spread.get('median'))})"
        )
    elif spread:
        text = f"only 1 timed shape has an interval (speedup {fmt.speedup(spread.get('median'))})"
    else:
        text = "no timed shape has an interval, so no speedup range is given"
    return text + left_out_clause(timing)


def left_out_clause(timing: Timing) -> str:
    """``; 2 shapes left out ...`` naming the timed shapes without an interval, or empty."""
    left_out = timing.shapes_without_interval
    if not left_out:
        return ""
    named = ", ".join(left_out[:4]) + (", ..." if len(left_out) > 4 else "")
    return (
        f"; {fmt.plural(len(left_out), 'shape')} left out with too few rounds for an "
        f"interval ({named})"
    )


def _baseline_speed(timing: Timing) -> str:
    baselines = timing.baselines
    if baselines.torch_compile is not None:
        return f"Against torch.compile of the reference: {fmt.speedup(baselines.torch_compile)}."
    if baselines.torch_compile_error:
        return "The torch.compile baseline failed to run."
    return ""


def _sol(report: Report) -> str:
    roofline = report.roofline
    if roofline is None or roofline.sol_fraction.candidate is None:
        return ""
    return (
        f"The candidate reaches {fmt.percent(roofline.sol_fraction.candidate)} of the speed "
        f"of light for this {roofline.bound}-bound work."
    )


def _first_sentence(text: str) -> str:
    """The summary's first sentence, without its verdict prefix, cut to a readable length."""
    text = _without_verdict(text).split(". ")[0].rstrip(".")
    text = _shorten(text, REASON_CHARS)
    return (text + ".") if text else "no reason was recorded."


def _without_verdict(text: str) -> str:
    text = text.strip()
    head, sep, rest = text.partition(": ")
    return rest if sep and head.lower() in {v.value for v in Verdict} else text


def _shorten(text: str, limit: int) -> str:
    return sentences.shorten(text, limit)
