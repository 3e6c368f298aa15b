"""The batch scorer, the reward shaping and the TRL and veRL adapters, called exactly as each
trainer calls them, on a stand-in Session (no workers: the verdicts are canned)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.conftest import EXAMPLES
from tests.rl.canned import REFERENCE, FakeSession, by_marker, completion, report

from kernelproof.rl.scorer import BatchScorer
from kernelproof.rl.shaping import RewardShaping
from kernelproof.rl.tasks import TaskBook, UnknownTask
from kernelproof.schema import Verdict


def scorer(session: FakeSession, **options: Any) -> BatchScorer:
    return BatchScorer(session=session, jobs=2, **options)


# -- shaping -----------------------------------------------------------------------------------


def test_shaping_pays_only_verified_and_then_the_lower_bound():
    shaping = RewardShaping()
    assert shaping.reward(report(Verdict.VERIFIED, (1.5, 2.5)), extracted=True) == 1.5
    for verdict in (Verdict.INCORRECT, Verdict.SUSPECT, Verdict.BROKEN):
        assert shaping.reward(report(verdict), extracted=True) == 0.0
    assert shaping.reward(None, extracted=False) == 0.0
    assert (
        RewardShaping(mode="correctness").reward(
            report(Verdict.VERIFIED, (0.2, 0.3)), extracted=True
        )
        == 1.0
    )
    assert (
        RewardShaping(cap=1.8).reward(report(Verdict.VERIFIED, (1.9, 2.5)), extracted=True) == 1.8
    )


def test_the_format_component_is_opt_in_and_never_pays_a_hack():
    shaping = RewardShaping(format_weight=0.1)
    assert shaping.reward(report(Verdict.INCORRECT), extracted=True) == pytest.approx(0.1)
    assert shaping.reward(report(Verdict.SUSPECT), extracted=True) == 0.0
    assert shaping.reward(None, extracted=False) == 0.0
    assert RewardShaping().reward(report(Verdict.BROKEN), extracted=True) == 0.0
    assert RewardShaping(mode="correctness").settings() == {"timing": False}


# -- the scorer --------------------------------------------------------------------------------


def test_rewards_come_back_in_input_order_with_their_reasons():
    session = FakeSession(by_marker)
    items = [
        (REFERENCE, completion("# fast")),
        (REFERENCE, "no code at all"),
        (REFERENCE, completion("# verdict: incorrect")),
        (REFERENCE, completion("# verdict: suspect")),
        (REFERENCE, completion()),
    ]
    with scorer(session) as batch:
        scored = batch.score(items)
    assert [s.reward for s in scored] == [1.5, 0.0, 0.0, 0.0, 0.0]  # the last: speed unmeasured
    assert [s.verdict for s in scored] == ["verified", None, "incorrect", "suspect", "verified"]
    assert scored[1].reason.startswith("no candidate: no fenced code block")
    assert scored[2].decided_by == "matrix" and scored[2].report is not None
    assert all(call["profile"] == "rl" and call["deadline_s"] > 0 for call in session.calls)


def test_identical_candidates_are_verified_once_and_scored_for_each():
    session = FakeSession(by_marker)
    with scorer(session) as batch:
        scored = batch.score(
            [(REFERENCE, completion("# fast"))] * 4
            + [(REFERENCE, "```python\n" + completion("# fast").split("```python\n")[1])]
        )
    assert [s.reward for s in scored] == [1.5] * 5
    assert len(session.calls) == 1


def test_a_batch_is_scored_concurrently():
    session = FakeSession(by_marker, delay_s=0.3)
    with scorer(session) as batch:
        started = time.monotonic()
        batch.score([(REFERENCE, completion(f"# n{i}")) for i in range(4)])
    assert session.most_active == 2
    assert time.monotonic() - started < 1.0  # 4 x 0.3 s on 2 jobs, not 1.2 s


def test_the_batch_never_blocks_past_its_deadline():
    session = FakeSession(by_marker, delay_s=30.0)
    with scorer(session) as batch:
        started = time.monotonic()
        scored = batch.score([(REFERENCE, completion(f"# n{i}")) for i in range(3)], deadline_s=0.5)
        took = time.monotonic() - started
    assert took < 0.5 + 2.0 + 0.5  # the deadline and the grace for reports, not 30 s
    assert [s.reward for s in scored] == [0.0, 0.0, 0.0]
    # Those that ran were cut at the deadline (the stand-in returns when cut, like verify);
    # the one still queued at the deadline was never started.
    assert {s.reason for s in scored if s.verdict is None} <= {
        "deadline: not scored within the batch's 0.5 s"
    }
    assert all(call["deadline_s"] <= 0.5 for call in session.calls)


def test_an_unknown_task_costs_its_pair_only():
    session = FakeSession(by_marker)
    with scorer(session, tasks=TaskBook(allow_paths=False)) as batch:
        scored = batch.score([("level9/nope", completion()), (REFERENCE, completion("# fast"))])
    assert scored[0].reward == 0.0 and "no task 'level9/nope'" in scored[0].reason
    assert scored[1].reward == 1.5


def test_correctness_mode_asks_for_no_timing():
    session = FakeSession(by_marker)
    with scorer(session, shaping=RewardShaping(mode="correctness")) as batch:
        assert batch.rewards([(REFERENCE, completion())]) == [1.0]
    assert session.calls[0]["timing"] is False


def test_bad_settings_fail_when_the_scorer_is_made_not_per_batch():
    with pytest.raises(Exception, match="unknown profile"):
        BatchScorer(session=FakeSession(by_marker), profile="nonsense")


# -- tasks -------------------------------------------------------------------------------------


def test_a_server_book_takes_suite_keys_only():
    book = TaskBook(EXAMPLES.parent / "tasks", allow_source=False, allow_paths=False)
    ref = book.resolve("level1/10_Softmax")
    assert ref.source is not None and ref.entry_point == "ModelNew"
    with pytest.raises(UnknownTask, match="task names, not reference source"):
        book.resolve(REFERENCE)
    with pytest.raises(UnknownTask, match="a key of the suite 'tasks'") as refused:
        book.resolve(str(EXAMPLES / "softmax" / "reference.py"))
    assert str(EXAMPLES.parent / "tasks") not in str(refused.value)  # the server keeps its paths


def test_a_gpumode_task_asks_for_its_own_entry_point():
    ref = TaskBook().resolve(str(EXAMPLES / "gpumode" / "vectorsum"))
    assert ref.entry_point == "custom_kernel" and ref.source is None
