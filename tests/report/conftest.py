"""Reports built directly with pydantic, so every view of a report is tested in milliseconds.

``full_report`` fills every section (as no single real run does: timing is skipped for an
incorrect candidate); the others are the degraded shapes a real run produces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kernelproof.schema import (
    Artifact,
    Assumption,
    Baselines,
    Ceilings,
    CodeFacts,
    Correctness,
    CorrectnessTest,
    Environment,
    Finding,
    InputVariant,
    LayoutTransform,
    OpAudit,
    OutputComparison,
    Report,
    Repro,
    Roofline,
    Severity,
    ShapeTiming,
    SolFraction,
    SourceLocation,
    TestOutcome,
    Timing,
    TimingStats,
    ValueTransform,
    VariantKind,
    Verdict,
)

SEEDS = [11, 22]
REFERENCE = "examples/softmax/reference.py"
CANDIDATE = "examples/softmax/wrong_odd.py"

#: A message with markup in it: every view must show it as text.
HOSTILE = "<script>alert('x')</script> [bold]not markup[/bold]"


def stats(median: float, spread: float = 0.1, n: int = 12) -> TimingStats:
    samples = [median * (1 + spread * ((i % 5) - 2) / 2) for i in range(n)]
    return TimingStats(median_s=median, iqr_s=median * spread, samples=samples)


def cell(
    name: str,
    kind: VariantKind,
    seed: int,
    outcome: TestOutcome = TestOutcome.PASSED,
    ratio: float | None = 0.5,
    message: str = "",
    **variant: Any,
) -> CorrectnessTest:
    return CorrectnessTest(
        variant=InputVariant(name=name, kind=kind, seed=seed, **variant),
        seed=seed,
        outcome=outcome,
        error_ratio=ratio,
        message=message,
        candidate_s=0.001,
        outputs=[
            OutputComparison(
                index=0,
                error_ratio=ratio,
                candidate_error=1e-7,
                reference_error=1e-7,
                passed=outcome is TestOutcome.PASSED,
            )
        ]
        if ratio is not None
        else [],
    )


def correctness(failing: bool) -> Correctness:
    tests = [
        cell("seed:0", VariantKind.SEED, SEEDS[0]),
        cell("seed:1", VariantKind.SEED, SEEDS[1], ratio=2.0),
        cell("value:scale-1e3", VariantKind.VALUE, SEEDS[0], value=ValueTransform.SCALE_UP),
        cell(
            "layout:non-contiguous",
            VariantKind.LAYOUT,
            SEEDS[0],
            TestOutcome.RAISED,
            None,
            "requires contiguous input",
            layout=LayoutTransform.NON_CONTIGUOUS,
        ),
        cell(
            "shape:dim=4097",
            VariantKind.SHAPE,
            SEEDS[0],
            TestOutcome.FAILED if failing else TestOutcome.PASSED,
            126.0 if failing else 0.7,
            "error 126x the reference's own" if failing else "",
            knobs={"dim": 4097},
        ),
        cell(
            "shape:dim=1",
            VariantKind.SHAPE,
            SEEDS[0],
            TestOutcome.FAILED if failing else TestOutcome.PASSED,
            0.0,
            "NaN where the reference is finite" if failing else "",
            knobs={"dim": 1},
        ),
        cell(
            "shape:dim=8192",
            VariantKind.SHAPE,
            SEEDS[0],
            TestOutcome.SKIPPED,
            None,
            "over this machine's budget",
            knobs={"dim": 8192},
        ),
    ]
    return Correctness(
        seeds=SEEDS,
        base_seed=1234,
        default_knobs={"batch_size": 64, "dim": 4096},
        task_knobs={"batch_size": 64, "dim": 4096},
        tolerance={"mode": "oracle", "factor": 3.0},
        tests=tests,
    )


def timing() -> Timing:
    shapes = [
        ShapeTiming(
            variant="default",
            knobs={"batch_size": 64, "dim": 4096},
            reference=stats(2e-3),
            candidate=stats(1e-3),
            speedup=2.0,
            speedup_ci=(1.8, 2.2),
            floor_s=2e-4,
        ),
        ShapeTiming(
            variant="shape:dim=4097",
            knobs={"batch_size": 64, "dim": 4097},
            reference=stats(2e-3),
            candidate=stats(2.5e-3),
            speedup=0.8,
            speedup_ci=(0.7, 0.9),
            floor_s=2e-4,
        ),
        ShapeTiming(
            variant="shape:dim=1",
            knobs={"batch_size": 64, "dim": 1},
            reference=stats(1e-5),
            candidate=stats(1e-5),
            speedup=1.0,
            speedup_ci=(0.05, 20.0),
        ),
    ]
    return Timing(
        reference=stats(2e-3),
        candidate=stats(1e-3),
        speedup=2.0,
        speedup_ci=(1.8, 2.2),
        per_shape=shapes,
        baselines=Baselines(eager=2.0, torch_compile=1.5),
        speedup_range={"min": 0.8, "median": 1.0, "max": 2.0},
        threads=1,
        budget_s=5.0,
        stop_reason="budget",
        verified_timed_calls=4,
        elapsed_s=5.1,
    )


def roofline() -> Roofline:
    return Roofline(
        flops=1.3e6,
        bytes=2.1e6,
        floor_s=1.9e-4,
        sol_fraction=SolFraction(reference=0.1, candidate=0.2),
        ceilings=Ceilings(peak_flops=4e10, peak_bytes_per_s=1.1e10, source="calibration:abc123"),
    )


def findings(failing: bool) -> list[Finding]:
    located = Finding(
        check="static-introspection",
        severity=Severity.WARN,
        message="References `os._exit`: it can take the harness down.",
        evidence={"name": "os._exit"},
        location=SourceLocation(path=CANDIDATE, line=16, column=9),
    )
    info = Finding(
        check="static-languages",
        severity=Severity.INFO,
        message="Languages: pytorch",
        location=SourceLocation(path=CANDIDATE, line=1, column=1),
    )
    noise = Finding(
        check="timing-noise", severity=Severity.INFO, message=HOSTILE, variant="timing:default"
    )
    result = [located, info, noise]
    if failing:
        result.insert(
            0,
            Finding(
                check="correctness",
                severity=Severity.FAIL,
                forces=Verdict.INCORRECT,
                variant="shape:dim=4097",
                message="silently wrong on 2 of 7 variants",
                evidence={"variants": {"shape:dim=4097": "error 126x"}, "worst": float("inf")},
            ),
        )
    return result


def make_report(verdict: Verdict = Verdict.INCORRECT, **overrides: Any) -> Report:
    """A report with every section filled; ``overrides`` replace fields (``None`` empties)."""
    failing = verdict is Verdict.INCORRECT
    fields: dict[str, Any] = dict(
        verdict=verdict,
        summary=(
            "Incorrect: silently wrong on 2 of 7 variants (first: shape:dim=4097)"
            if failing
            else "Correct on all 7 tested variants with no integrity finding."
        ),
        findings=findings(failing),
        correctness=correctness(failing),
        timing=timing(),
        roofline=roofline(),
        op_audit=OpAudit(
            reference_ops={"aten::softmax": 1},
            candidate_ops={"aten::exp": 1},
            custom_kernels={"softmax_kernel": 14},
            declared_kernels=["softmax_kernel"],
            calls=14,
            calls_with_custom=14,
        ),
        code=CodeFacts(
            languages=["pytorch", "c++"], lines_of_code=42, reference_lines_of_code=21, build_s=12.5
        ),
        assumptions=[
            Assumption(
                statement="wrong when dim is odd",
                kind="wrong",
                variants=["shape:dim=4097", "shape:dim=1"],
                counter_examples=["shape:dim=127"],
            )
        ]
        if failing
        else [],
        repros=[
            Repro(
                failure="shape:dim=4097",
                knobs={"batch_size": 1, "dim": 3},
                seed=11,
                detail="error 126x the reference's own",
                shrink_steps=4,
                command=f"kernelproof verify {REFERENCE} {CANDIDATE} --seed 1234",
                script="import torch\nx = torch.randn(1, 3)\nprint(x.softmax(-1))\n",
            )
        ]
        if failing
        else [],
        environment=Environment(
            device="cpu",
            device_name="x86_64",
            threads=1,
            fingerprint="abc123",
            versions={"torch": "2.13.0", "kernelproof": "0.1.0"},
        ),
        candidate=Artifact(path=CANDIDATE, sha256="c" * 64),
        reference=Artifact(path=REFERENCE, sha256="r" * 64),
        settings={
            "device": "cpu",
            "seeds": 2,
            "base_seed": 1234,
            "timing": True,
            "budget_s": 5.0,
            "compile_baseline": True,
            "build_s": 12.5,
        },
        duration_s=9.5,
    )
    fields.update(overrides)
    return Report(**fields)


def broken_report() -> Report:
    """A candidate that died on its first call: no matrix cell, no timing, no audit."""
    crash = Finding(
        check="crash",
        severity=Severity.FAIL,
        forces=Verdict.BROKEN,
        message="the worker exited with status 7",
        evidence={"exit_code": 7},
    )
    return make_report(
        Verdict.BROKEN,
        summary="Broken: the worker exited with status 7",
        findings=[crash],
        correctness=None,
        timing=None,
        roofline=None,
        op_audit=None,
        assumptions=[],
        repros=[],
    )


def error_report() -> Report:
    """The task is at fault: the early report, with no settings and no reference artifact."""
    task = Finding(
        check="task",
        severity=Severity.FAIL,
        forces=Verdict.ERROR,
        message="examples/nope.py: the reference file does not exist; check the path",
    )
    return make_report(
        Verdict.ERROR,
        summary="Error: the reference file does not exist",
        findings=[task],
        correctness=None,
        timing=None,
        roofline=None,
        op_audit=None,
        code=None,
        assumptions=[],
        repros=[],
        reference=None,
        settings={},
    )


@pytest.fixture
def hostile() -> str:
    """The markup-laden message one finding of every built report carries."""
    return HOSTILE


@pytest.fixture
def build_report() -> Callable[..., Report]:
    return make_report


@pytest.fixture(scope="session")
def full_report() -> Report:
    return make_report()


@pytest.fixture(scope="session")
def verified_report() -> Report:
    return make_report(Verdict.VERIFIED)


@pytest.fixture(scope="session")
def untimed_report() -> Report:
    return make_report(
        Verdict.VERIFIED, timing=None, roofline=None, settings={"timing": False, "seeds": 2}
    )


@pytest.fixture(scope="session")
def broken() -> Report:
    return broken_report()


@pytest.fixture(scope="session")
def error() -> Report:
    return error_report()


@pytest.fixture(scope="session")
def full_html(full_report: Report) -> str:
    """The packet of ``full_report``, rendered once (plots take about a second)."""
    from kernelproof.report.html import render_html

    return render_html(full_report)
