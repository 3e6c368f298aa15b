"""The terminal summary says where a verdict holds (the report's envelope)."""

from __future__ import annotations

import io

import torch

from kernelproof.controller.envelope import build_envelope
from kernelproof.report.terminal import render_report, report_console
from kernelproof.schema import (
    Correctness,
    CorrectnessTest,
    Environment,
    InputVariant,
    Report,
    TestOutcome,
    VariantKind,
    Verdict,
)
from kernelproof.schema.envelope import CallSignature


def test_the_summary_prints_the_envelope() -> None:
    cell = CorrectnessTest(
        variant=InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1),
        seed=1,
        outcome=TestOutcome.PASSED,
    )
    envelope = build_envelope([cell], {"seed:0": CallSignature.of([torch.zeros(4, 8)])}, {"n": 4})
    report = Report(
        verdict=Verdict.VERIFIED,
        environment=Environment(device="cpu"),
        candidate=None,
        reference=None,
        envelope=envelope,
        correctness=Correctness(
            seeds=[1],
            base_seed=1,
            default_knobs={"n": 4},
            task_knobs={"n": 4},
            tolerance={},
            tests=[cell],
        ),
    )
    out = io.StringIO()
    render_report(report, report_console(out))
    assert "envelope: 1 verified signature(s); no knob range covered" in out.getvalue()
