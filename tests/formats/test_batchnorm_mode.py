"""KernelBench semantics: modules keep their own (training) mode unless the task's POLICY
says ``eval``, so a published BatchNorm task normalises with batch statistics."""

import pytest

from kernelproof.schema import TestOutcome, Verdict

pytestmark = pytest.mark.slow


def test_batch_statistics_candidate_is_verified_in_training_mode(verified, examples):
    report = verified(examples / "formats" / "batchnorm" / "batch_stats.py")
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert report.correctness.module_mode == "train"
    assert report.settings["mode"] == "as-built"
    # The running statistics change on every training-mode call; the repeated calls and the
    # oracle must still agree with each other.
    kinds = {
        t.variant.kind.value for t in report.correctness.tests if t.outcome is TestOutcome.PASSED
    }
    assert {"seed", "repeat", "value"} <= kinds


def test_running_statistics_candidate_is_incorrect_in_training_mode(verified, examples):
    report = verified(examples / "formats" / "batchnorm" / "running_stats.py")
    assert report.verdict is Verdict.INCORRECT, report.summary


def test_policy_eval_mode_uses_running_statistics(verified, examples):
    folder = examples / "formats" / "batchnorm"
    report = verified(folder / "running_stats.py", reference=folder / "reference_eval.py")
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert report.correctness.module_mode == "eval"
    assert report.settings["mode"] == "eval"
    wrong = verified(folder / "batch_stats.py", reference=folder / "reference_eval.py")
    assert wrong.verdict is Verdict.INCORRECT, wrong.summary
