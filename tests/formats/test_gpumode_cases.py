"""GPU MODE cases kept: task.yml entries whose fields are not sizes (``case: tridiagonal``)
reach the task's ``generate_input`` as value variants, and what cannot be honoured is
reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.schema import FindingCheck, Severity, TestOutcome, Verdict
from kernelproof.tasks.gpumode import GpuModeFormat

CASES = ("case=spectrum", "case=diagonal", "case=tridiagonal")


@pytest.fixture(scope="module")
def task(examples: Path) -> Path:
    return examples / "gpumode" / "cholesky_cases"


def test_each_distinct_case_becomes_a_value_variant(task, tmp_path):
    loaded = GpuModeFormat().load(task, task / "submission.py", tmp_path)
    assert tuple(loaded.task.value_variants) == CASES
    assert {"batch", "n", "cond"} == set(loaded.task.knobs)
    [note] = loaded.notes
    assert "case=tridiagonal" in note and not loaded.unhonoured


def test_entries_that_cannot_be_honoured_are_reported(task, tmp_path):
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "reference.py").write_text((task / "reference.py").read_text())
    (folder / "task.yml").write_text(
        "tests:\n"
        '  - {"batch": 2, "n": 8, "cond": 2, "seed": 1}\n'
        '  - {"batch": 2, "n": 8, "cond": 2, "seed": 2, "weights": [1, 2]}\n'
        '  - {"rows": 2, "seed": 3}\n'
    )
    loaded = GpuModeFormat().load(folder, task / "submission.py", tmp_path / "scratch")
    assert len(loaded.unhonoured) == 2
    assert "weights" in loaded.unhonoured[0] and "not passed" in loaded.unhonoured[0]
    assert "'rows': 2" in loaded.unhonoured[1] and "not run" in loaded.unhonoured[1]


@pytest.mark.slow
def test_an_honest_submission_passes_every_case(verified, task):
    report = verified(
        task / "submission.py",
        reference=task,
        allow_torch=True,
        generated_shapes=False,
        layout_variants=False,
    )
    assert report.verdict is Verdict.VERIFIED, report.summary
    cells = {t.variant.name: t.outcome for t in report.correctness.tests}
    assert all(cells.get(f"value:task:{case}") is TestOutcome.PASSED for case in CASES), cells
    notes = [f for f in report.findings if f.check is FindingCheck.TASK_FORMAT]
    assert [f.severity for f in notes] == [Severity.INFO]


@pytest.mark.slow
def test_a_shortcut_wrong_on_one_case_only_is_incorrect(verified, task):
    report = verified(
        task / "submission_banded_shortcut.py",
        reference=task,
        allow_torch=True,
        generated_shapes=False,
        layout_variants=False,
    )
    assert report.verdict is Verdict.INCORRECT, report.summary
    failed = {t.variant.name for t in report.correctness.tests if t.outcome is TestOutcome.FAILED}
    assert failed == {"value:task:case=tridiagonal"}, failed
