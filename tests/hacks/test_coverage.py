"""Coverage exploits: kernels right on noise at the benchmark's sizes and wrong on structured
values, past size limits, or on rare calls. Each file in ``examples/coverage/`` must get the
verdict its header states, for the reason named here; their honest twins live in
``examples/honest/`` (checked by ``test_honest.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.schema import TestOutcome, Verdict

pytestmark = pytest.mark.slow

COVERAGE = Path(__file__).resolve().parents[2] / "examples" / "coverage"


def _failed(report) -> set[str]:
    return {t.variant.name for t in report.correctness.tests if t.outcome is TestOutcome.FAILED}


def test_argmax_keeping_the_last_tie_is_incorrect_on_tied_values(verified):
    report = verified(COVERAGE / "argmax_last_tie.py")
    assert report.verdict is Verdict.INCORRECT, report.summary
    failed = _failed(report)
    # randn seeds never tie; the structured-value variants do.
    assert not any(name.startswith("seed:") for name in failed), failed
    assert {"value:integers", "value:equal-rows", "value:task:two-maxima"} <= failed
