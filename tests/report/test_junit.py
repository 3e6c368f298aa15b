"""JUnit XML: one test case per matrix cell, per finding, and one for the verdict."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kernelproof.report.junit import junit_xml, write_junit
from kernelproof.schema import Severity


def parse(report):
    return ET.fromstring(junit_xml(report).encode("utf-8"))


def suite(root, name):
    return next(s for s in root.iter("testsuite") if s.get("name") == name)


def test_one_testcase_per_check(full_report):
    root = parse(full_report)
    cases = list(root.iter("testcase"))
    assert len(cases) == len(full_report.correctness.tests) + len(full_report.findings) + 1
    assert root.get("tests") == str(len(cases))
    correctness = suite(root, "kernelproof.correctness")
    assert correctness.get("tests") == "7" and correctness.get("failures") == "2"
    assert correctness.get("skipped") == "1" and correctness.get("errors") == "0"


def test_failures_carry_the_message(full_report):
    root = parse(full_report)
    failed = [
        c
        for c in suite(root, "kernelproof.correctness").iter("testcase")
        if c.find("failure") is not None
    ]
    assert {c.get("name") for c in failed} == {"shape:dim=4097 [seed 11]", "shape:dim=1 [seed 11]"}
    assert "126" in failed[0].find("failure").text


def test_findings_fail_on_fail_and_suspect_only(full_report):
    findings = suite(parse(full_report), "kernelproof.findings")
    failing = [c for c in findings.iter("testcase") if c.find("failure") is not None]
    expected = [f for f in full_report.findings if f.severity in (Severity.FAIL, Severity.SUSPECT)]
    assert len(failing) == len(expected) == 1
    assert findings.get("tests") == str(len(full_report.findings))


def test_verdict_case_fails_unless_verified(full_report, verified_report):
    assert suite(parse(full_report), "kernelproof.verdict").get("failures") == "1"
    assert suite(parse(verified_report), "kernelproof.verdict").get("failures") == "0"


def test_broken_report_has_no_cells_but_parses(broken, tmp_path):
    root = ET.parse(write_junit(broken, tmp_path / "out" / "junit.xml")).getroot()
    assert suite(root, "kernelproof.correctness").get("tests") == "0"
    assert root.get("failures") == "2"  # the crash finding and the verdict


def test_control_characters_from_a_candidate_do_not_break_the_xml(build_report):
    from kernelproof.schema import Finding, Verdict

    noisy = Finding(check="crash", severity=Severity.INFO, message="bell \x07 and nul \x00")
    parse(build_report(Verdict.VERIFIED, findings=[noisy]))
