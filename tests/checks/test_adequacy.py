"""The task-adequacy audit on hand-made outputs: pure, no workers."""

import subprocess
import sys

import pytest
import torch
from pydantic import ValidationError

from kernelproof.checks.adequacy import adequacy_report, audit_notes, audit_output
from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.schema import AdequacyReport, AuditExitCode, MutantResult, OutputAudit

ORACLE = TolerancePolicy()
KERNELBENCH = TolerancePolicy(mode="fixed", atol=1e-2, rtol=1e-2)


def softmax_case(dtype=torch.float32, scale=1.0, seed=0):
    """A softmax task's reference output, its float64 oracle and its input."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 1024, generator=g, dtype=torch.float64).to(dtype)
    oracle = torch.softmax(x.double(), -1) * scale
    reference = torch.softmax(x, -1) * scale
    return reference, oracle, [x]


def report_of(*audits, policy=ORACLE):
    return adequacy_report(list(audits), policy=policy, task="task.py")


def by_name(audit: OutputAudit) -> dict[str, MutantResult]:
    return {m.name: m for m in audit.mutants}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_normal_output_rejects_every_mutant_and_accepts_rounding_noise(dtype):
    reference, oracle, inputs = softmax_case(dtype)
    audit = audit_output(reference, oracle, inputs, policy=ORACLE)
    mutants = by_name(audit)
    assert set(mutants) == {
        "zeros",
        "constant",
        "input-passthrough",
        "bf16-round-trip",
        "perturbation",
        "rounding-noise",
    }
    for mutant in audit.mutants:
        if mutant.skipped:
            continue
        assert mutant.accepted == (mutant.must == "accept"), mutant
    assert mutants["rounding-noise"].must == "accept" and mutants["rounding-noise"].accepted
    assert mutants["bf16-round-trip"].skipped == (dtype != torch.float32)
    report = report_of(audit)
    assert report.adequate and not report.problems
    assert report.verdict_line == "adequate" and report.exit_code is AuditExitCode.ADEQUATE


def test_tiny_outputs_under_a_fixed_atol_accept_zeros_and_are_degenerate():
    reference, oracle, inputs = softmax_case(scale=1e-12)
    audit = audit_output(reference, oracle, inputs, policy=KERNELBENCH)
    assert by_name(audit)["zeros"].accepted
    report = report_of(audit, policy=KERNELBENCH)
    assert report.degenerate and not report.too_tight
    assert report.exit_code is AuditExitCode.INADEQUATE
    assert report.problems[0].startswith("zeros are accepted: the outputs are too small")
    assert f"(rms {audit.rms:.3g})" in report.problems[0] and audit.rms < 1e-14
    assert report.verdict_line.startswith("degenerate: zeros are accepted")


def test_the_oracle_tolerance_rejects_zeros_at_the_same_tiny_scale():
    reference, oracle, inputs = softmax_case(scale=1e-12)
    assert report_of(audit_output(reference, oracle, inputs, policy=ORACLE)).adequate


def test_an_identity_task_accepts_the_input_passed_through():
    x = torch.randn(8, 100, dtype=torch.float64).float()
    audit = audit_output(x.clone(), x.double(), [x], policy=ORACLE)
    passthrough = by_name(audit)["input-passthrough"]
    assert passthrough.accepted and not passthrough.skipped
    report = report_of(audit)
    assert report.degenerate
    assert [p.split(" (")[0] for p in report.problems] == [
        "the input passed through unchanged is accepted"
    ]


def test_passthrough_is_skipped_with_a_reason_when_no_input_has_the_output_shape():
    x = torch.randn(8, 100)
    weight = torch.randn(100, 30)
    audit = audit_output(x @ weight, x.double() @ weight.double(), [x, weight], policy=ORACLE)
    passthrough = by_name(audit)["input-passthrough"]
    assert passthrough.skipped and not passthrough.accepted
    assert "(8, 30)" in passthrough.detail and "(8, 100)" in passthrough.detail
    assert report_of(audit).adequate
    assert any("input-passthrough skipped" in note for note in audit_notes([audit]))


def test_integer_outputs_reject_zeros_constant_and_off_by_one_and_accept_the_exact_answer():
    x = torch.randn(32, 512, generator=torch.Generator().manual_seed(3))
    indices = x.argmax(-1)
    audit = audit_output(indices, x.double().argmax(-1), [x], policy=ORACLE)
    mutants = by_name(audit)
    assert list(mutants) == ["zeros", "constant", "off-by-one", "exact"]
    assert not any(mutants[name].accepted for name in ("zeros", "constant", "off-by-one"))
    assert mutants["exact"].accepted and mutants["exact"].must == "accept"
    assert report_of(audit).adequate


def test_an_all_false_mask_is_degenerate():
    x = torch.randn(16, 16)
    mask = x > 100.0
    report = report_of(audit_output(mask, x.double() > 100.0, [x], policy=ORACLE))
    assert report.degenerate
    assert report.problems[0].startswith("zeros are accepted: the true output is all zeros")


@pytest.mark.parametrize("seed", range(20))
def test_a_scalar_output_is_adequate_on_every_draw(seed):
    """A single value is its own mean (``constant`` is skipped), may round almost exactly to
    bfloat16 (the round trip is skipped below a few elements), and gets a perturbation of
    exactly 1% rather than a Gaussian draw that could be tiny."""
    x = torch.randn(64, 64, generator=torch.Generator().manual_seed(seed))
    audit = audit_output(x.sum(), x.double().sum(), [x], policy=ORACLE, seed=seed)
    mutants = by_name(audit)
    assert mutants["constant"].skipped and mutants["bf16-round-trip"].skipped
    assert not mutants["perturbation"].accepted and not mutants["zeros"].accepted
    assert report_of(audit).adequate


def test_the_bf16_round_trip_is_skipped_when_it_changes_nothing():
    counts = torch.randint(0, 100, (32, 32), generator=torch.Generator().manual_seed(0)).float()
    audit = audit_output(counts, counts.double(), [], policy=ORACLE)
    round_trip = by_name(audit)["bf16-round-trip"]
    assert round_trip.skipped and "exactly representable" in round_trip.detail


def test_zero_tolerance_rejects_rounding_noise_and_is_too_tight():
    reference, oracle, inputs = softmax_case()
    exact = TolerancePolicy(mode="fixed", atol=0.0, rtol=0.0)
    report = report_of(audit_output(reference, oracle, inputs, policy=exact), policy=exact)
    assert report.too_tight and not report.degenerate
    assert report.problems == [p for p in report.problems if "rounding-level noise" in p]
    assert report.verdict_line.startswith("too tight: rounding-level noise")


def test_problems_name_the_output_and_count_the_seeds():
    good = softmax_case(seed=1)
    tiny = softmax_case(scale=1e-12, seed=2)
    audits = [
        audit_output(*good, policy=KERNELBENCH, seed=1, index=0),
        audit_output(*tiny, policy=KERNELBENCH, seed=2, index=0),
        audit_output(*good, policy=KERNELBENCH, seed=1, index=1),
        audit_output(*good, policy=KERNELBENCH, seed=2, index=1),
    ]
    report = report_of(*audits, policy=KERNELBENCH)
    zeros = [p for p in report.problems if "zeros are accepted" in p]
    assert zeros and zeros[0].startswith("output 0: ") and zeros[0].endswith("(on 1 of 2 seeds)")


def test_mutants_are_reproducible_from_the_seed():
    reference, oracle, inputs = softmax_case()
    first = audit_output(reference, oracle, inputs, policy=ORACLE, seed=7)
    again = audit_output(reference, oracle, inputs, policy=ORACLE, seed=7)
    assert first == again


def test_the_report_refuses_a_verdict_that_contradicts_its_mutants():
    accepted_zeros = OutputAudit(
        seed=0,
        index=0,
        dtype="float32",
        shape=[4],
        rms=1e-12,
        mutants=[MutantResult(name="zeros", must="reject", accepted=True, error_ratio=0.5)],
    )
    with pytest.raises(ValidationError, match="contradict"):
        AdequacyReport(task="t.py", outputs=[accepted_zeros], degenerate=False, too_tight=False)
    with pytest.raises(ValidationError, match="problems"):
        AdequacyReport(task="t.py", outputs=[accepted_zeros], degenerate=True, too_tight=False)
    with pytest.raises(ValidationError, match="skipped"):
        MutantResult(name="zeros", must="reject", accepted=True, skipped=True)


def test_the_report_round_trips_through_json():
    reference, oracle, inputs = softmax_case()
    report = report_of(audit_output(reference, oracle, inputs, policy=ORACLE))
    again = AdequacyReport.model_validate_json(report.to_json())
    assert again == report and '"schema": "kernelproof.adequacy/1"' in report.to_json()


def test_the_schema_module_imports_no_torch():
    code = "import sys, kernelproof.schema.adequacy; sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
