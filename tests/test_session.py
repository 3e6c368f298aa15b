"""A Session shares the task-only work across candidates and changes no verdict.

One session-scoped batch serves most tests: the softmax task's candidates, honest and hostile
(one signals every process it can see, one kills its own worker), verified once separately
and once through ``Session.evaluate_many`` with the same seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import EXAMPLES, TEST_SETTINGS

SOFTMAX = EXAMPLES / "softmax"

#: Honest, wrong, hostile to its siblings, dying mid-run, honest again: the hostile ones sit
#: between honest ones, so a warm reference they had reached would show in the next report.
CANDIDATES = [
    SOFTMAX / "correct.py",
    SOFTMAX / "wrong_odd.py",
    EXAMPLES / "hacks" / "verifier" / "27_signal_reference.py",
    EXAMPLES / "hacks" / "22b_exits_mid_run.py",
    SOFTMAX / "correct.py",
]

OPTIONS: dict[str, Any] = {**TEST_SETTINGS, "seeds": 2, "shrink": False}


def _outcomes(report: Any) -> list[tuple[str, str, float | None]]:
    tests = report.correctness.tests if report.correctness else []
    return [(t.variant.name, t.outcome.value, t.error_ratio) for t in tests]


def _findings(report: Any) -> list[tuple[str, str]]:
    return sorted((str(f.check), f.severity.value) for f in report.findings)


@pytest.fixture(scope="module")
def batch() -> dict[str, Any]:
    import kernelproof
    from kernelproof.controller.verify import verify

    separate = [verify(SOFTMAX / "reference.py", c, **OPTIONS) for c in CANDIDATES]
    with kernelproof.Session() as session:
        many = session.evaluate_many(
            (SOFTMAX / "reference.py").read_text(), [c.read_text() for c in CANDIDATES], **OPTIONS
        )
        stats = session.stats()
    return {"separate": separate, "many": many, "stats": stats}


@pytest.mark.slow
def test_evaluate_many_gives_the_reports_of_separate_verifications(batch):
    verdicts = [r.verdict.value for r in batch["separate"]]
    assert verdicts == ["verified", "incorrect", "verified", "broken", "verified"]
    for alone, shared in zip(batch["separate"], batch["many"]):
        assert shared.verdict == alone.verdict
        assert _outcomes(shared) == _outcomes(alone)
        assert _findings(shared) == _findings(alone)


@pytest.mark.slow
def test_the_reference_work_is_done_once_and_its_worker_kept(batch):
    stats = batch["stats"]
    # Every request of the first candidate's verification missed; the later ones replayed
    # them (the crashing candidate stops early, so it asks for less).
    assert stats["hits"] >= 2 * stats["misses"] > 0
    assert stats["tasks"] == 1
    assert stats["idle_references"] == 1
    # The task's adequacy audit (mutants of the reference's outputs) ran once for the batch;
    # the reports' findings are those of separate verifications (the test above).
    assert stats["derived"] == 1


@pytest.mark.slow
def test_nothing_is_remembered_from_a_verification_outside_the_sandbox():
    import kernelproof

    reference = (SOFTMAX / "reference.py").read_text()
    candidate = (SOFTMAX / "correct.py").read_text()
    with kernelproof.Session(**OPTIONS, sandbox=False, insecure_sandbox=True) as session:
        first = session.evaluate(reference, candidate)
        session.evaluate(reference, candidate)
        stats = session.stats()
    assert first.correctness is not None and first.correctness.tests
    assert stats["hits"] == 0 and stats["idle_references"] == 0


def test_the_task_key_changes_with_task_settings_torch_and_machine_not_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    import torch

    from kernelproof.config import resolve_settings
    from kernelproof.roofline import fingerprint
    from kernelproof.tasks.source import read_task
    from kernelproof.workers.reference_memo import task_key

    path = tmp_path / "reference.py"
    path.write_text((SOFTMAX / "reference.py").read_text())
    task = read_task(path)
    settings = resolve_settings(overrides={"seeds": 2})
    key = task_key(task, [], settings)
    assert task_key(task, [], resolve_settings(overrides={"seeds": 2, "base_seed": 5})) == key
    assert task_key(task, [], resolve_settings(overrides={"seeds": 3})) != key
    assert task_key(task, [], resolve_settings(overrides={"seeds": 2, "dtype": "float16"})) != key
    with monkeypatch.context() as patch:
        patch.setattr(torch, "__version__", "0.0.0")
        assert task_key(task, [], settings) != key
    with monkeypatch.context() as patch:
        patch.setattr(fingerprint, "machine_fingerprint", lambda device: "another-machine")
        assert task_key(task, [], settings) != key
    path.write_text(path.read_text() + "\n# changed\n")
    assert task_key(read_task(path), [], settings) != key


def test_a_closed_session_refuses_work():
    import kernelproof

    session = kernelproof.Session()
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.evaluate("x = 1\n", "y = 2\n")


@pytest.mark.slow
def test_a_results_store_keeps_the_reference_work_for_the_next_session(tmp_path: Path):
    import kernelproof
    from kernelproof.store.answer_archive import AnswerArchive

    url = f"sqlite:///{tmp_path / 'results.db'}"
    reference = (SOFTMAX / "reference.py").read_text()
    candidate = (SOFTMAX / "correct.py").read_text()
    options = {**OPTIONS, "base_seed": 11}
    with kernelproof.Session(store=url) as first:
        alone = first.evaluate(reference, candidate, **options)
        fresh = first.stats()
        assert fresh["misses"] > 0
    with kernelproof.Session(store=url) as second:  # a new process would see the same rows
        again = second.evaluate(reference, candidate, **options)
        stats = second.stats()
    # The reference computed nothing it could keep: only the stress shapes' answers, too
    # large to store (MAX_ANSWER_BYTES), are computed again, and counted as such.
    assert stats["misses"] == 0 and stats["hits"] > 0, stats
    assert alone.verdict.value == "verified"  # the task file, under the cache folder, is read
    assert again.verdict == alone.verdict
    assert _outcomes(again) == _outcomes(alone)
    assert _findings(again) == _findings(alone)
    # The native audit still has the reference's profile, sampled in the first session.
    assert (again.op_audit.native or {}).get("reference") == (alone.op_audit.native or {}).get(
        "reference"
    )
    # Another seed, or another task text, finds nothing of it.
    archive = AnswerArchive(url)
    with kernelproof.Session(store=archive.store) as third:
        third.evaluate(reference + "\n# another task\n", candidate, **options)
        # Only what a verification repeats within itself (the sizing's plans) hits, as in
        # the first session, which started from an empty store.
        other = third.stats()
        assert (other["hits"], other["misses"]) == (fresh["hits"], fresh["misses"]), other
    archive.close()


def test_a_store_that_cannot_be_opened_costs_only_the_reuse(tmp_path: Path):
    from kernelproof.store.answer_archive import AnswerArchive

    archive = AnswerArchive(f"sqlite:///{tmp_path / 'missing-folder' / 'x' / 'results.db'}")
    stored = archive.load("any-task")
    assert stored.answers == {} and stored.values == {}


def test_a_row_stored_twice_is_kept_once_and_the_store_stays_in_use(tmp_path: Path):
    # Two sessions (or processes) store the same answer: the unique key keeps the first row,
    # and the second writer goes on using the store.
    from kernelproof.store.answer_archive import AnswerArchive

    url = f"sqlite:///{tmp_path / 'results.db'}"
    first, second = AnswerArchive(url), AnswerArchive(url)
    first.save_value("task", "profile", '{"samples": 1}')
    second.save_value("task", "profile", '{"samples": 2}')
    second.save_value("task", "other", '{"samples": 3}')
    reader = AnswerArchive(url)
    assert reader.load("task").values == {"profile": '{"samples": 1}', "other": '{"samples": 3}'}
    for archive in (first, second, reader):
        archive.close()


def test_an_answer_too_large_to_keep_is_computed_again_and_counted_as_such(tmp_path: Path):
    import torch

    from kernelproof.protocol.messages import WorkerReply
    from kernelproof.store.answer_archive import MAX_ANSWER_BYTES, AnswerArchive
    from kernelproof.workers.process import Response
    from kernelproof.workers.reference_memo import TaskMemo

    archive = AnswerArchive(f"sqlite:///{tmp_path / 'results.db'}")
    reply = WorkerReply(ok=True, phase="call")
    large = torch.zeros(MAX_ANSWER_BYTES // 4 + 1)
    small = torch.zeros(16)
    first = TaskMemo("task", root=tmp_path / "one", archive=archive)
    first.put("stress", Response(reply=reply, tensors=[large]))
    first.put("seed", Response(reply=reply, tensors=[small]))
    assert first.get("stress") is None and first.get("seed") is not None
    assert (first.misses, first.too_large, first.hits) == (0, 1, 1)
    # The next session (the same store) knows which answer was too large: not a miss.
    second = TaskMemo("task", root=tmp_path / "two", archive=archive)
    second.restore()
    assert second.get("stress") is None and second.get("seed") is not None
    assert (second.misses, second.too_large, second.hits) == (0, 1, 1)
    assert second.get("never-seen") is None and second.misses == 1
    archive.close()


def test_a_session_keeps_at_most_its_byte_budget_of_answers_over_all_tasks(tmp_path: Path):
    """A suite's tasks each fill a memo: past the session's budget, the least recently used
    tasks' memos go (a 49-task bench once held 5.5 GiB and was killed by the OOM killer)."""
    import torch

    from kernelproof.config import resolve_settings
    from kernelproof.protocol.messages import WorkerReply
    from kernelproof.tasks.source import parse_task
    from kernelproof.workers.process import Response
    from kernelproof.workers.reference_memo import TaskMemos

    memos = TaskMemos(max_bytes=3 << 20)
    settings = resolve_settings()
    reply = WorkerReply(ok=True, phase="call")
    held = []
    for index in range(3):
        path = tmp_path / f"task{index}.py"
        path.write_text((SOFTMAX / "reference.py").read_text() + f"\n# task {index}\n")
        memo = memos.memo_for(parse_task(path.read_text(), path), [], settings)
        memo.put("seed", Response(reply=reply, tensors=[torch.zeros((2 << 20) // 4)]))
        held.append(memo)
    # The third memo's start dropped the first (4 MiB held over a 3 MiB budget), not itself.
    assert held[0].closed and not held[1].closed and not held[2].closed
    assert memos.counts()["tasks"] == 2
    memos.close()
