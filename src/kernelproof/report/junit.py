"""JUnit XML for CI systems: one test case per check.

- ``kernelproof.correctness``: one case per matrix cell. A silently wrong answer is a
  ``<failure>``, a crash an ``<error>``, a variant the reference rejected ``<skipped>``; a clear
  exception (a stated limitation) passes, with its message in ``<system-out>``.
- ``kernelproof.findings``: one case per finding, failing when its severity is ``fail`` or
  ``suspect`` (the severities that decide a verdict).
- ``kernelproof.verdict``: one case that fails unless the verdict is ``verified``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from kernelproof.report import formatting as fmt
from kernelproof.report.ci_text import xml_safe
from kernelproof.schema import CorrectnessTest, Finding, Report, Severity, TestOutcome, Verdict

#: Finding severities that fail their test case.
FAILING_SEVERITIES = (Severity.FAIL, Severity.SUSPECT)


def junit_xml(report: Report) -> str:
    """The report as a JUnit XML document (the common Jenkins/GitLab/GitHub dialect)."""
    root = ET.Element("testsuites", name=_subject(report))
    suites = [_correctness_suite(report), _findings_suite(report), _verdict_suite(report)]
    for suite in suites:
        root.append(suite)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
    root.set("time", f"{report.duration_s:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(report), encoding="utf-8")
    return path


def _subject(report: Report) -> str:
    candidate = report.candidate.path if report.candidate else "candidate"
    reference = report.reference.path if report.reference else "reference"
    return xml_safe(f"kernelproof: {candidate} vs {reference}")


def _suite(name: str) -> ET.Element:
    return ET.Element("testsuite", name=name, tests="0", failures="0", errors="0", skipped="0")


def _count(suite: ET.Element, case: ET.Element) -> None:
    suite.append(case)
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))
    for child, key in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        if case.find(child) is not None:
            suite.set(key, str(int(suite.get(key, "0")) + 1))


def _correctness_suite(report: Report) -> ET.Element:
    suite = _suite("kernelproof.correctness")
    correctness = report.correctness
    if correctness is None:
        return suite
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("base_seed", correctness.base_seed),
        ("default_knobs", fmt.knobs(correctness.default_knobs)),
        ("tolerance", correctness.tolerance.get("mode", "")),
    ):
        ET.SubElement(properties, "property", name=name, value=xml_safe(str(value)))
    for test in correctness.tests:
        _count(suite, _correctness_case(test))
    return suite


def _correctness_case(test: CorrectnessTest) -> ET.Element:
    case = ET.Element(
        "testcase",
        classname=f"kernelproof.correctness.{test.variant.kind.value}",
        name=xml_safe(f"{test.variant.name} [seed {test.seed}]"),
    )
    if test.candidate_s is not None:
        case.set("time", f"{test.candidate_s:.6f}")
    detail = xml_safe(_cell_detail(test))
    if test.outcome is TestOutcome.FAILED:
        failure = ET.SubElement(
            case,
            "failure",
            type="wrong-answer",
            message=xml_safe(test.message or "silently wrong answer"),
        )
        failure.text = detail
    elif test.outcome is TestOutcome.CRASHED:
        error = ET.SubElement(
            case,
            "error",
            type="crashed",
            message=xml_safe(test.message or "the candidate's worker died"),
        )
        error.text = detail
    elif test.outcome is TestOutcome.SKIPPED:
        ET.SubElement(case, "skipped", message=xml_safe(test.message or "skipped"))
    elif test.outcome is TestOutcome.RAISED:
        ET.SubElement(case, "system-out").text = xml_safe(
            f"the candidate raised a clear exception (a stated limitation): {test.message}"
        )
    elif test.error_ratio is not None:
        ET.SubElement(case, "system-out").text = f"error ratio {fmt.ratio(test.error_ratio)}"
    return case


def _cell_detail(test: CorrectnessTest) -> str:
    lines = [f"variant {test.variant.name}, seed {test.seed}: {test.outcome.value}"]
    if test.error_ratio is not None:
        lines.append(f"worst error ratio {fmt.ratio(test.error_ratio)}")
    for output in test.outputs:
        lines.append(
            f"output {output.index}: error ratio {fmt.ratio(output.error_ratio)}"
            f"{'' if output.passed else ' (fails)'} {output.detail}".rstrip()
        )
    if test.message:
        lines.append(test.message)
    return "\n".join(lines)


def _findings_suite(report: Report) -> ET.Element:
    suite = _suite("kernelproof.findings")
    seen: Counter[str] = Counter()
    for finding in report.findings:
        name = finding.check + (f" [{finding.variant}]" if finding.variant else "")
        seen[name] += 1
        if seen[name] > 1:
            name += f" #{seen[name]}"
        _count(suite, _finding_case(finding, name))
    return suite


def _finding_case(finding: Finding, name: str) -> ET.Element:
    case = ET.Element(
        "testcase", classname=f"kernelproof.findings.{finding.severity.value}", name=xml_safe(name)
    )
    text = finding.message
    if finding.location is not None:
        text += f"\nat {finding.location.path}:{finding.location.line}"
    if finding.evidence:
        text += "\nevidence: " + json.dumps(finding.evidence, default=str)
    if finding.severity in FAILING_SEVERITIES:
        failure = ET.SubElement(
            case, "failure", type=finding.severity.value, message=xml_safe(finding.message)
        )
        failure.text = xml_safe(text)
    else:
        ET.SubElement(case, "system-out").text = xml_safe(f"[{finding.severity.value}] {text}")
    return case


def _verdict_suite(report: Report) -> ET.Element:
    suite = _suite("kernelproof.verdict")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="verdict", value=report.verdict.value)
    if report.timing is not None:
        ET.SubElement(properties, "property", name="speedup", value=f"{report.timing.speedup:.4g}")
    case = ET.Element("testcase", classname="kernelproof.verdict", name=_subject(report))
    case.set("time", f"{report.duration_s:.3f}")
    if report.verdict is not Verdict.VERIFIED:
        failure = ET.SubElement(
            case,
            "failure",
            type=report.verdict.value,
            message=xml_safe(report.summary or report.verdict.value),
        )
        failure.text = xml_safe(report.summary)
    else:
        ET.SubElement(case, "system-out").text = xml_safe(report.summary)
    _count(suite, case)
    return suite
