"""Which stage decided a verdict (report.pipeline.decided_by), on canned stage records."""

from __future__ import annotations

from kernelproof.controller.stage_clock import StageClock
from kernelproof.schema import Stage, StageRecord, Verdict, decisive_stage

V, I, S, B = Verdict.VERIFIED, Verdict.INCORRECT, Verdict.SUSPECT, Verdict.BROKEN


def records(*pairs: tuple[Stage, Verdict]) -> list[StageRecord]:
    return [StageRecord(stage=stage, verdict=verdict) for stage, verdict in pairs]


def test_a_verified_report_is_decided_by_its_last_stage():
    ran = records((Stage.LOAD, V), (Stage.BUILD, V), (Stage.MATRIX, V), (Stage.TIMING, V))
    assert decisive_stage(ran, V) is Stage.TIMING


def test_the_first_stage_that_implied_the_final_verdict_for_good_decides():
    ran = records((Stage.BUILD, V), (Stage.FIRST_INPUT, I), (Stage.MATRIX, I))
    assert decisive_stage(ran, I) is Stage.FIRST_INPUT


def test_a_verdict_that_changed_later_is_decided_by_the_stage_that_changed_it():
    # Suspect at build (a patched timer at import), then a wrong answer in the matrix.
    ran = records((Stage.BUILD, S), (Stage.FIRST_INPUT, S), (Stage.MATRIX, I))
    assert decisive_stage(ran, I) is Stage.MATRIX
    # Broken evidence on a late shape that a later stage did not outrank.
    ran = records((Stage.BUILD, V), (Stage.MATRIX, B), (Stage.OP_AUDIT, B))
    assert decisive_stage(ran, B) is Stage.MATRIX


def test_nothing_ran_nothing_decided():
    assert decisive_stage([], B) is None


def test_the_clock_records_stages_in_order_with_their_verdicts():
    clock = StageClock()
    clock.ran(Stage.LOAD, 0.01, V)
    clock.enter(Stage.BUILD, V)
    clock.enter(Stage.FIRST_INPUT, V)
    clock.relabel(Stage.BUILD)  # the constructor failed while preparing the first input
    clock.end(B)
    assert [(r.stage, r.verdict) for r in clock.records] == [
        (Stage.LOAD, V),
        (Stage.BUILD, V),
        (Stage.BUILD, B),
    ]
    assert all(r.duration_s >= 0 for r in clock.records)
    assert clock.current is None and clock.last_stage_value() == "build"
