"""The cheap adequacy check inside verify: a task whose output ignores its inputs is named as
degenerate; a sound task is not."""

import pytest
import torch

from kernelproof.checks.degenerate import DefaultCall, degenerate_findings
from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import resolve_settings
from kernelproof.schema import Severity, Verdict

pytestmark = pytest.mark.slow


def _degenerate(report):
    return [f for f in report.findings if f.check == "degenerate-task"]


def test_softmax_over_a_size_one_dimension_is_named_degenerate(verified, examples):
    report = verified(examples / "formats" / "degenerate" / "ones.py")
    assert report.verdict is Verdict.VERIFIED, report.summary
    found = _degenerate(report)
    assert found and all(f.severity is Severity.WARN for f in found)
    assert any("does not depend on its inputs" in f.message for f in found)
    assert all("degenerate task" in f.message and "reference.py" in f.message for f in found)


def test_a_sound_task_is_not_named_degenerate(verified, examples):
    report = verified(examples / "softmax" / "correct.py")
    assert report.verdict is Verdict.VERIFIED
    assert not _degenerate(report)


def _call(seed: int, value: torch.Tensor) -> DefaultCall:
    return DefaultCall(seed=seed, outputs=[value.float()], oracle=[value.double()])


def test_a_fixed_tolerance_that_accepts_zeros_is_named_degenerate():
    policy = TolerancePolicy.from_settings(resolve_settings(overrides={"atol": 1e-2, "rtol": 1e-2}))
    tiny = [
        _call(s, torch.randn(64, generator=torch.Generator().manual_seed(s)) * 1e-4) for s in (1, 2)
    ]
    found = degenerate_findings(tiny, policy, "tiny.py")
    assert len(found) == 1 and "zeros are accepted" in found[0].message
    assert "does not depend" not in found[0].message


def test_outputs_that_vary_with_the_seed_under_the_oracle_tolerance_pass():
    policy = TolerancePolicy.from_settings(resolve_settings())
    calls = [
        _call(s, torch.randn(64, generator=torch.Generator().manual_seed(s))) for s in (1, 2, 3)
    ]
    assert degenerate_findings(calls, policy, "sound.py") == []


def test_one_seed_run_twice_is_not_a_constant_output():
    """``--seeds 1``: the matrix runs the first seed's inputs again (another thread count);
    the same inputs giving the same outputs says nothing about the task."""
    policy = TolerancePolicy.from_settings(resolve_settings())
    value = torch.randn(64, generator=torch.Generator().manual_seed(1))
    assert degenerate_findings([_call(7, value), _call(7, value)], policy, "t.py") == []
    found = degenerate_findings([_call(7, value), _call(8, value)], policy, "t.py")
    assert any("does not depend on its inputs" in f.message for f in found)
