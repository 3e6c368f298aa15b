"""The summary paragraph: tested, held, failed, speed; and the banner's headline."""

from __future__ import annotations

from kernelproof.report.summary_text import headline, summary_paragraph


def test_verified_report_paragraph(verified_report):
    text = summary_paragraph(verified_report)
    assert text.startswith(
        "kernelproof checked examples/softmax/wrong_odd.py against "
        "examples/softmax/reference.py on cpu (x86_64) with 7 input variants"
    )
    assert "5 of 7 passed" in text and "1 variant raised a clear exception" in text
    assert "No integrity finding reached severity suspect." in text
    assert "faster than the reference: speedup 2x" in text
    assert "ranges from 0.8x to 2x (median 1x)" in text


def test_untimed_and_broken_paragraphs(untimed_report, broken):
    assert "It was not timed: timing was turned off" in summary_paragraph(untimed_report)
    text = summary_paragraph(broken)
    assert "but no correctness matrix ran: the worker exited with status 7." in text
    assert "verdict is broken" in text


def test_headline_drops_the_verdict_prefix_and_is_short(build_report):
    long = "Incorrect: " + "wrong " * 200
    text = headline(build_report(summary=long))
    assert not text.startswith("Incorrect")
    assert len(text) < 320 and text.endswith("...")


def test_fixed_tolerance_and_suspect_findings(build_report, full_report):
    from kernelproof.schema import Finding, Severity, Verdict

    correctness = full_report.correctness.model_copy(
        update={"tolerance": {"mode": "fixed", "atol": 0.01, "rtol": 0.01}}
    )
    passthrough = Finding(
        check="passthrough",
        severity=Severity.SUSPECT,
        message="it passes the reference's work through to PyTorch",
    )
    report = build_report(
        Verdict.INCORRECT, correctness=correctness, findings=[*full_report.findings, passthrough]
    )
    text = summary_paragraph(report)
    assert "compared with a fixed tolerance (atol=0.01, rtol=0.01)" in text
    assert "1 integrity finding at severity suspect (passthrough)." in text
