"""The e2e finding for a module that passes alone but breaks its host says what failed: the
host's wrong variants, else its decisive findings and the soak's drift; never "0 variant(s),
first ?" and never an "unknown" ratio."""

from __future__ import annotations

from kernelproof.e2e.host_failure import host_failure_finding
from kernelproof.e2e.soak import drift_findings
from kernelproof.schema import (
    Artifact,
    Correctness,
    CorrectnessTest,
    Environment,
    Finding,
    FindingCheck,
    InputVariant,
    Report,
    Severity,
    TestOutcome,
    VariantKind,
    Verdict,
)
from kernelproof.schema.e2e import Attribution, Soak

TARGETS = ["layers.0.norm"]
DRIFT_COMMAND = "kernelproof e2e host.py --replace norm=rmsnorm_leaky.py --soak 9"


def host(
    outcomes: list[TestOutcome], findings: list[Finding], verdict: Verdict = Verdict.INCORRECT
) -> Report:
    tests = [
        CorrectnessTest(
            variant=InputVariant(name=f"seed:{i}", kind=VariantKind.SEED, seed=i),
            seed=i,
            outcome=outcome,
        )
        for i, outcome in enumerate(outcomes)
    ]
    return Report(
        verdict=verdict,
        findings=findings,
        correctness=Correctness(
            seeds=[0],
            base_seed=0,
            default_knobs={},
            task_knobs={},
            tolerance={"mode": "oracle"},
            tests=tests,
        ),
        environment=Environment(device="cpu", versions={}),
        settings={},
        duration_s=1.0,
        candidate=Artifact(path="c.py", sha256="c" * 64),
        reference=Artifact(path="r.py", sha256="r" * 64),
    )


def drift() -> list[Finding]:
    soak = Soak(
        steps=9,
        loop="soak_steps",
        first_drift_step=6,
        drift_ratios=[None, None, 1.0, 1.2, 2.0, 2.5, 4.1],
    )
    return drift_findings(soak, DRIFT_COMMAND)


def assert_no_placeholder(message: str) -> None:
    for placeholder in (" ?", "0 variant(s)", "unknown", "None"):
        assert placeholder not in message, message


def test_wrong_variants_are_named():
    report = host(
        [TestOutcome.PASSED, TestOutcome.FAILED],
        [
            Finding(
                check=FindingCheck.CORRECTNESS,
                severity=Severity.FAIL,
                forces=Verdict.INCORRECT,
                message="silently wrong on 1 of 2",
            )
        ],
    )
    finding = host_failure_finding(TARGETS, report, Attribution(max_local_error_ratio=0.4), [])
    assert finding is not None
    assert "wrong on 1 variant(s), first seed:1" in finding.message
    assert "0.40x" in finding.message and "host's outputs 0" not in finding.message
    assert_no_placeholder(finding.message)


def test_with_no_wrong_variant_the_drift_in_the_soak_is_named():
    nonfinite = Finding(
        check=FindingCheck.NON_FINITE_OUTPUT,
        severity=Severity.FAIL,
        forces=Verdict.INCORRECT,
        message="NaN where the reference is finite",
    )
    finding = host_failure_finding(
        TARGETS, host([TestOutcome.PASSED], [nonfinite]), Attribution(), drift()
    )
    assert finding is not None
    assert "the host fails: non-finite-output (NaN where the reference is finite)" in (
        finding.message
    )
    assert "drift in the soak (the host's outputs drift beyond tolerance at soak step 6" in (
        finding.message
    )
    assert finding.message.endswith(f"Reproduce: {DRIFT_COMMAND}")
    assert finding.evidence["causes"] == ["non-finite-output", "soak-drift"]
    assert_no_placeholder(finding.message)


def test_a_drift_message_with_no_first_ratio_has_no_placeholder():
    [finding] = drift_findings(
        Soak(steps=3, loop="soak_steps", first_drift_step=1, drift_ratios=[None, None]),
        DRIFT_COMMAND,
    )
    assert_no_placeholder(finding.message)
    assert "a different shape or count" in finding.message


def test_a_host_that_holds_gives_no_finding():
    verified = host([TestOutcome.PASSED], [], Verdict.VERIFIED)
    assert host_failure_finding(TARGETS, verified, Attribution(), drift()) is None
