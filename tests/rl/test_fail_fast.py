"""Fail-fast scoring: the first decisive failure ends the verification early, with the
verdict of a full verification and the stage that decided it; a deadline stops it in time."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.conftest import EXAMPLES, TEST_SETTINGS

pytestmark = pytest.mark.slow

SOFTMAX = EXAMPLES / "softmax"
OPTIONS: dict[str, Any] = {**TEST_SETTINGS, "seeds": 2, "shrink": False, "generated_shapes": False}


@pytest.fixture(scope="module")
def session() -> Any:
    import kernelproof

    with kernelproof.Session(**OPTIONS) as shared:
        yield shared


@pytest.mark.parametrize(
    "candidate, verdict, decided_by",
    [
        (SOFTMAX / "wrong_odd.py", "incorrect", "matrix"),
        (EXAMPLES / "broken" / "wrong_shape.py", "incorrect", "first-input"),
        (EXAMPLES / "broken" / "import_error.py", "broken", "build"),
        (EXAMPLES / "broken" / "no_modelnew.py", "broken", "load"),
    ],
)
def test_fail_fast_gives_the_full_verdict_sooner(session, candidate, verdict, decided_by):
    reference = (SOFTMAX / "reference.py").read_text()
    source = candidate.read_text()
    full = session.evaluate(reference, source, base_seed=7)
    fast = session.evaluate(reference, source, base_seed=7, fail_fast=True)
    assert fast.verdict.value == full.verdict.value == verdict
    assert fast.pipeline.decided_by.value == full.pipeline.decided_by.value == decided_by
    if verdict == "incorrect":
        assert fast.pipeline.stopped == "fail-fast" and full.pipeline.stopped is None
        assert len(fast.correctness.tests) < len(full.correctness.tests)
        assert any(f.check == "stopped-early" for f in fast.findings)


def test_an_honest_candidate_runs_every_stage_under_fail_fast(session):
    report = session.evaluate(
        (SOFTMAX / "reference.py").read_text(), (SOFTMAX / "correct.py").read_text(), fail_fast=True
    )
    assert report.verdict.value == "verified"
    assert report.pipeline.stopped is None
    stages = [r.stage.value for r in report.pipeline.stages]
    assert stages == ["load", "static-scan", "build", "first-input", "matrix", "op-audit"]


def test_a_deadline_stops_the_verification_and_blames_the_deadline(session):
    started = time.monotonic()
    report = session.evaluate(
        (SOFTMAX / "reference.py").read_text(),
        (EXAMPLES / "broken" / "hangs.py").read_text(),
        deadline_s=1.5,
    )
    assert time.monotonic() - started < 8  # the worker's kill and the report, not the hang
    assert report.verdict.value == "error"
    assert report.pipeline.stopped == "deadline"
    assert any(f.check == "deadline" and f.severity.value == "fail" for f in report.findings)


@pytest.mark.parametrize("hack", ["01_passthrough.py", "08_timer_patch.py"])
def test_a_suspect_candidate_is_not_timed_under_fail_fast(session, hack):
    """Timing only adds findings, so it cannot clear a suspect candidate: fail-fast skips it
    (it was most of a suspect candidate's time in an RL batch) and says so."""
    reference = (SOFTMAX / "reference.py").read_text()
    source = (EXAMPLES / "hacks" / hack).read_text()
    timed = {"timing": True, "budget_s": 0.5, "base_seed": 7}
    full = session.evaluate(reference, source, **timed)
    fast = session.evaluate(reference, source, fail_fast=True, **timed)
    assert fast.verdict.value == full.verdict.value == "suspect"
    assert "timing" in [r.stage.value for r in full.pipeline.stages]
    assert "timing" not in [r.stage.value for r in fast.pipeline.stages]
    assert fast.timing is None
    assert fast.pipeline.stopped == "fail-fast" and full.pipeline.stopped is None
    skipped = [f for f in fast.findings if f.check == "stopped-early"]
    assert len(skipped) == 1 and "timing did not run" in skipped[0].message
