"""End-to-end verdicts on the bundled examples (each verification runs once per session)."""

import pytest

from kernelproof.schema import Severity, TestOutcome, Verdict

pytestmark = pytest.mark.slow

TASKS = ["softmax", "linear_relu", "rmsnorm"]


@pytest.mark.parametrize("task", TASKS)
def test_correct_candidate_is_verified(verified, examples, task):
    report = verified(examples / task / "correct.py")
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert not [f for f in report.findings if f.severity in (Severity.FAIL, Severity.SUSPECT)]
    outcomes = {t.outcome for t in report.correctness.tests}
    assert TestOutcome.FAILED not in outcomes
    kinds = {
        t.variant.kind.value for t in report.correctness.tests if t.outcome is TestOutcome.PASSED
    }
    assert kinds == {"seed", "repeat", "shape", "value", "layout"}


@pytest.mark.parametrize("task", TASKS)
def test_wrong_at_odd_sizes_is_incorrect_and_only_odd_shapes_fail(verified, examples, task):
    report = verified(examples / task / "wrong_odd.py")
    assert report.verdict is Verdict.INCORRECT
    assert report.verdict.exit_code == 1
    failed = [t for t in report.correctness.tests if t.outcome is TestOutcome.FAILED]
    assert failed and all(t.variant.kind.value == "shape" for t in failed)
    assert all(any(v % 2 for v in t.variant.knobs.values()) for t in failed)
    assert all(
        t.outcome is TestOutcome.PASSED
        for t in report.correctness.tests
        if t.variant.kind.value == "seed"
    )


@pytest.mark.parametrize("task", TASKS)
def test_shape_hardcoded_is_incorrect_yet_passes_the_default_shape(verified, examples, task):
    report = verified(examples / task / "hardcoded.py")
    assert report.verdict is Verdict.INCORRECT
    seeds = [t for t in report.correctness.tests if t.variant.kind.value == "seed"]
    assert seeds and all(t.outcome is TestOutcome.PASSED for t in seeds)
    correctness = next(f for f in report.findings if f.check == "correctness")
    assert "shape:" in correctness.message


@pytest.mark.parametrize(
    "name, reason",
    [
        ("exits.py", "exited with status 7"),
        ("hangs.py", "timed out"),
        ("segfaults.py", "SIGSEGV"),
        ("import_error.py", "kernel_that_was_never_written"),
        ("no_modelnew.py", "does not define `ModelNew`"),
        ("wrong_signature.py", "constructed"),
    ],
)
def test_misbehaving_candidates_are_broken_with_their_reason(verified, examples, name, reason):
    # A candidate's first call gets the build timeout (it may compile lazily): 20 s, not
    # the default 600, is how long the hang takes to be called one.
    report = verified(examples / "broken" / name, call_timeout_s=5.0, build_timeout_s=20.0)
    assert report.verdict is Verdict.BROKEN, report.summary
    assert report.verdict.exit_code == 3
    assert any(reason in f.message for f in report.findings), [f.message for f in report.findings]


def test_a_candidate_over_the_memory_limit_is_broken_out_of_memory(verified, examples):
    report = verified(
        examples / "broken" / "memory_hog.py", memory_limit_gib=1.0, call_timeout_s=30.0
    )
    assert report.verdict is Verdict.BROKEN, report.summary
    messages = [f.message for f in report.findings]
    assert any("out of memory" in m and "over the limit of 1.0 GiB" in m for m in messages), (
        messages
    )


def test_wrong_output_shape_is_incorrect_with_both_shapes_named(verified, examples):
    report = verified(examples / "broken" / "wrong_shape.py")
    assert report.verdict is Verdict.INCORRECT
    assert (
        "wrong output shape: candidate (64,), reference (64, 4096)"
        in report.correctness.tests[0].message
    )


def test_the_controller_survives_and_keeps_working_after_crashes(verified, examples):
    verified(examples / "broken" / "segfaults.py", call_timeout_s=5.0)
    report = verified(examples / "softmax" / "correct.py", seeds=2)
    assert report.verdict is Verdict.VERIFIED


def test_seed_reproduces_the_draws(verified, examples):
    first = verified(
        examples / "softmax" / "correct.py", base_seed=99, seeds=2, shape_variants=False
    )
    again = verified(
        examples / "softmax" / "correct.py",
        base_seed=99,
        seeds=2,
        shape_variants=False,
        value_variants=False,
    )
    assert first.correctness.seeds == again.correctness.seeds
    other = verified(
        examples / "softmax" / "correct.py", base_seed=100, seeds=2, shape_variants=False
    )
    assert other.correctness.seeds != first.correctness.seeds


def test_missing_reference_is_an_error_verdict(verified, examples, tmp_path):
    report = verified(examples / "softmax" / "correct.py", reference=tmp_path / "missing.py")
    assert report.verdict is Verdict.ERROR
    assert "does not exist" in report.findings[0].message
