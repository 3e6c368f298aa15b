import json

import pytest
from pydantic import ValidationError

from kernelproof.schema import (
    Correctness,
    CorrectnessTest,
    Environment,
    ExitCode,
    Finding,
    InputVariant,
    Report,
    Severity,
    TestOutcome,
    VariantKind,
    Verdict,
    decide_verdict,
)

#: Top-level keys DESIGN.md's report contract names; they must never be renamed.
CONTRACT_KEYS = {
    "schema",
    "verdict",
    "findings",
    "correctness",
    "timing",
    "roofline",
    "environment",
    "candidate",
    "reference",
}


def correctness(outcome=TestOutcome.PASSED):
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    return Correctness(
        seeds=[1],
        base_seed=0,
        default_knobs={},
        task_knobs={},
        tolerance={},
        tests=[CorrectnessTest(variant=variant, seed=1, outcome=outcome)],
    )


def report(verdict, findings=(), outcome=TestOutcome.PASSED):
    return Report(
        verdict=verdict,
        findings=list(findings),
        correctness=correctness(outcome),
        environment=Environment(device="cpu"),
        candidate=None,
        reference=None,
    )


def test_json_has_the_contract_keys_and_schema_name():
    data = json.loads(report(Verdict.VERIFIED).to_json())
    assert set(data) >= CONTRACT_KEYS
    assert data["schema"] == "kernelproof.report/1"
    assert data["timing"] is None


def test_exit_codes_match_the_contract():
    assert [v.exit_code for v in Verdict] == [
        ExitCode.VERIFIED,
        ExitCode.INCORRECT,
        ExitCode.SUSPECT,
        ExitCode.BROKEN,
        ExitCode.ERROR,
    ]
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4]


def test_verdict_must_match_findings():
    suspect = Finding(check="tampering", severity=Severity.SUSPECT, message="x")
    with pytest.raises(ValidationError, match="contradicts"):
        report(Verdict.VERIFIED, [suspect])
    assert report(Verdict.SUSPECT, [suspect]).verdict is Verdict.SUSPECT


def test_verified_cannot_hold_failed_tests():
    with pytest.raises(ValidationError, match="failed tests"):
        report(Verdict.VERIFIED, outcome=TestOutcome.FAILED)


def test_precedence_error_then_incorrect_then_broken_then_suspect():
    def f(severity, forces=None):
        return Finding(check="correctness", severity=severity, message="m", forces=forces)

    assert decide_verdict([f(Severity.SUSPECT), f(Severity.FAIL)]) is Verdict.INCORRECT
    assert decide_verdict([f(Severity.FAIL, Verdict.BROKEN), f(Severity.FAIL)]) is Verdict.INCORRECT
    assert decide_verdict([f(Severity.FAIL, Verdict.BROKEN), f(Severity.SUSPECT)]) is Verdict.BROKEN
    assert decide_verdict([f(Severity.FAIL, Verdict.ERROR), f(Severity.FAIL)]) is Verdict.ERROR
    assert decide_verdict([f(Severity.WARN), f(Severity.INFO)]) is Verdict.VERIFIED


def test_schema_package_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, kernelproof.schema; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_finding_says_what_its_evidence_rests_on():
    """docs/security.md: a check rests on facts outside the candidate's process, on the
    candidate's own reports (evidence only), or on its source text."""
    from kernelproof.schema import Finding, FindingCheck, Severity
    from kernelproof.schema.checks import EvidenceBasis, evidence_basis

    assert {evidence_basis(check) for check in FindingCheck} == set(EvidenceBasis)
    expected = {
        "cpu-time": "outside",
        "correctness": "outside",
        "native-stacks": "outside",
        "sandbox": "outside",
        "passthrough": "candidate",
        "tampering": "candidate",
        "audit-file-access": "candidate",
        "static-timer": "static",
    }
    for check, basis in expected.items():
        finding = Finding(check=check, severity=Severity.INFO, message="m")
        assert finding.model_dump(mode="json")["basis"] == basis
