"""The Python API for reward loops: a bad candidate gets a verdict, and only verified pays."""

import pytest

from kernelproof.api import evaluate, reward
from kernelproof.schema import (
    Correctness,
    CorrectnessTest,
    Environment,
    Finding,
    FindingCheck,
    InputVariant,
    Report,
    Severity,
    TestOutcome,
    Timing,
    TimingStats,
    VariantKind,
    Verdict,
)

REFERENCE = """import torch
import torch.nn as nn

dim = 64


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(dim)]


def get_init_inputs():
    return []
"""

#: A finding that forces each verdict other than ``verified``.
FORCING = {
    Verdict.INCORRECT: Finding(
        check=FindingCheck.CORRECTNESS, severity=Severity.FAIL, message="wrong"
    ),
    Verdict.SUSPECT: Finding(
        check=FindingCheck.PASSTHROUGH, severity=Severity.SUSPECT, message="the reference's own ops"
    ),
    Verdict.BROKEN: Finding(
        check=FindingCheck.CRASH, severity=Severity.FAIL, forces=Verdict.BROKEN, message="died"
    ),
    Verdict.ERROR: Finding(
        check=FindingCheck.TASK, severity=Severity.FAIL, forces=Verdict.ERROR, message="bad task"
    ),
}


def fast_timing() -> Timing:
    stats = TimingStats(median_s=1e-3, iqr_s=1e-5, samples=[1e-3] * 5)
    return Timing(reference=stats, candidate=stats, speedup=10.0, speedup_ci=(9.0, 11.0))


def test_a_candidate_that_does_not_parse_gets_a_verdict_not_an_exception():
    report = evaluate(REFERENCE, "class ModelNew(:\n", timing=False)
    assert report.verdict is Verdict.BROKEN
    assert [f.check for f in report.findings] == [FindingCheck.CANDIDATE_FILE]
    assert reward(report) == 0.0


def test_a_bad_task_gets_the_error_verdict():
    report = evaluate("x = 1\n", "class ModelNew: pass\n", timing=False)
    assert report.verdict is Verdict.ERROR
    assert reward(report) == 0.0


@pytest.mark.parametrize("verdict", sorted(FORCING, key=lambda v: v.value))
def test_reward_of_anything_not_verified_is_zero_even_with_a_fast_time(verdict):
    report = Report(
        verdict=verdict,
        findings=[FORCING[verdict]],
        timing=fast_timing(),
        environment=Environment(device="cpu"),
        candidate=None,
        reference=None,
    )
    assert reward(report) == 0.0


def test_reward_of_a_verified_candidate_is_its_speedups_lower_bound():
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    correctness = Correctness(
        seeds=[1],
        base_seed=0,
        default_knobs={},
        task_knobs={},
        tolerance={},
        tests=[CorrectnessTest(variant=variant, seed=1, outcome=TestOutcome.PASSED)],
    )
    report = Report(
        verdict=Verdict.VERIFIED,
        correctness=correctness,
        timing=fast_timing(),
        environment=Environment(device="cpu"),
        candidate=None,
        reference=None,
    )
    assert reward(report) == 9.0
