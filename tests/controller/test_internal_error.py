"""A failure of kernelproof's own code mid-pipeline: a clear ``error`` verdict that says so,
and the results gathered before it kept in the report (no traceback, nothing lost)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.controller import verify as verify_module
from kernelproof.schema import FindingCheck, TestOutcome, Verdict

pytestmark = pytest.mark.slow

SOFTMAX = Path(__file__).resolve().parents[2] / "examples" / "softmax"


def test_a_bug_after_the_matrix_keeps_the_matrix_and_says_it_is_ours(monkeypatch):
    def broken(self, result):
        raise ZeroDivisionError("a bug in a later step")

    monkeypatch.setattr(verify_module._Run, "_op_audit", broken)
    report = verify_module.verify(
        SOFTMAX / "reference.py",
        SOFTMAX / "correct.py",
        seeds=1,
        timing=False,
        value_variants=False,
        layout_variants=False,
        native_audit=False,
    )
    assert report.verdict is Verdict.ERROR
    found = [f for f in report.findings if f.check is FindingCheck.INTERNAL_ERROR]
    assert len(found) == 1, report.findings
    assert "ZeroDivisionError: a bug in a later step" in found[0].message
    assert "not a finding about the candidate" in found[0].message
    assert found[0].evidence["at"].startswith("test_internal_error.py:")
    # The matrix ran before the bug: its cells are in the report.
    assert report.correctness is not None
    assert report.correctness.tests and all(
        t.outcome in (TestOutcome.PASSED, TestOutcome.SKIPPED) for t in report.correctness.tests
    )
