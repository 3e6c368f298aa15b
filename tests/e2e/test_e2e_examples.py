"""Every failure class of the e2e check, on examples that pass ``verify`` on their own (the
isolated verdict inside each report is that verification), and honest kernels that hold.

Each e2e run is computed once per session and shared. Timing is off except in the one test
about speed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelproof.schema import FindingCheck, Verdict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: conftest.TEST_SETTINGS (not importable under --import-mode=importlib), with two seeds:
#: each e2e check runs several verifications.
E2E_SETTINGS: dict[str, Any] = {
    "seeds": 2,
    "base_seed": 1234,
    "timing": False,
    "native_audit": False,
}

DECODER = EXAMPLES / "e2e" / "decoder"
CONVBLOCK = EXAMPLES / "e2e" / "convblock"
GATED_MLP = EXAMPLES / "e2e" / "gated_mlp"

#: Timing for the one test about a vanished speedup: short, since its effects are large
#: (1.4-1.7x alone, sampled or not, on this 2-core machine on 2026-12-05; 2.4x on an earlier
#: one; about 0.6x at the host's signature).
TIMED: dict[str, Any] = {"timing": True, "budget_s": 3.0, "compile_baseline": False}

#: What the isolated speedup's lower bound must pass: the same margin as the prediction's.
CLEARLY_FASTER = 1.15

#: Soak steps in tests: the fixed-point drift passes tolerance at step 7 of this host.
SOAK_STEPS = 24

_RUNS: dict[tuple, Any] = {}


@pytest.fixture(scope="session")
def e2e_report() -> Callable[..., Any]:
    from kernelproof.e2e.run import e2e

    def run(host: Path, *replacements: str, soak: int = 0, **settings: Any) -> Any:
        options = {**E2E_SETTINGS, **settings}
        key = (str(host), replacements, soak, repr(sorted(options.items())))
        if key not in _RUNS:
            _RUNS[key] = e2e(host, list(replacements), soak=soak, **options)
        return _RUNS[key]

    return run


def _checks(report: Any) -> set[FindingCheck]:
    return {f.check for f in report.findings if f.severity.value == "fail"}


@pytest.mark.slow
def test_an_honest_norm_holds_in_the_decoder_and_over_its_loop(e2e_report) -> None:
    report = e2e_report(
        DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_honest.py'}", soak=SOAK_STEPS
    )
    assert report.verdict is Verdict.VERIFIED, report.summary
    section = report.e2e
    assert [s.isolated_verdict for s in section.substitutions] == [Verdict.VERIFIED]
    assert section.substitutions[0].paths == [
        "blocks.0.attn_norm",
        "blocks.0.mlp_norm",
        "blocks.1.attn_norm",
        "blocks.1.mlp_norm",
        "norm",
    ]
    assert all(c.covered for c in section.substitutions[0].coverage)
    soak = section.soak
    assert soak.steps == SOAK_STEPS and soak.loop == "soak_steps"
    assert soak.first_drift_step is None and soak.nondeterminism == 0.0
    assert soak.projected_failure_step is None
    assert len(soak.rss_bytes["candidate"]) == SOAK_STEPS
    assert soak.cuda_memory == "not-applicable" and not soak.cuda_allocated_bytes
    # One replayed call per instance (the host's default call visits each once), in order.
    assert [c.path for c in section.attribution.calls] == section.substitutions[0].paths
    assert all(c.passed for c in section.attribution.calls)
    assert section.attribution.amplification is not None
    # The same calls on the substituted host's own stream: the first call's inputs are the
    # host's own input (the same in both streams), the later ones follow the candidate's
    # outputs.
    attribution = section.attribution
    stream = attribution.stream_calls
    assert attribution.stream_note == ""
    assert [c.path for c in stream] == section.substitutions[0].paths
    assert {c.stream for c in stream} == {"substituted"} and all(c.passed for c in stream)
    assert stream[0].error == attribution.calls[0].error
    assert attribution.max_stream_error == max(c.error for c in stream)
    assert attribution.amplification == pytest.approx(
        attribution.host_error / attribution.max_stream_error
    )


@pytest.mark.slow
def test_the_packet_and_the_terminal_show_the_e2e_section(e2e_report) -> None:
    from rich.console import Console

    from kernelproof.report.html import render_html
    from kernelproof.report.terminal import render_report

    report = e2e_report(
        DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_honest.py'}", soak=SOAK_STEPS
    )
    html = render_html(report)
    assert 'id="e2e"' in html and 'data-plot="soak"' in html
    assert "Amdahl" in html and "Error attribution" in html
    console = Console(record=True, width=200)
    render_report(report, console)
    text = console.export_text()
    assert "e2e RMSNorm (RMSNorm, 5 instance(s)): verified in isolation" in text
    assert "reproduce: kernelproof e2e" in text and f"--soak {SOAK_STEPS}" in text


@pytest.mark.slow
def test_a_small_biased_error_compounds_over_the_decode_steps(e2e_report) -> None:
    report = e2e_report(
        DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_fixed_point.py'}", soak=SOAK_STEPS
    )
    assert report.e2e.substitutions[0].isolated_verdict is Verdict.VERIFIED
    assert report.verdict is Verdict.INCORRECT
    drift = [f for f in report.findings if f.check is FindingCheck.SOAK_DRIFT]
    assert len(drift) == 1
    step = report.e2e.soak.first_drift_step
    assert step is not None and step > 0  # step 0 passes: the error builds up
    assert f"soak step {step}" in drift[0].message and "--soak" in drift[0].message
    ratios = report.e2e.soak.drift_ratios
    assert ratios[step] > ratios[0]
    # The words match the evidence: what failed is named, with no placeholder (issue 30).
    for finding in report.findings:
        assert " ?" not in finding.message and "0 variant(s)" not in finding.message, finding
    host = [f for f in report.findings if f.check is FindingCheck.E2E_CORRECTNESS]
    assert all("first seed" in f.message or "drift in the soak" in f.message for f in host), host


@pytest.mark.slow
def test_the_drift_is_shrunk_to_smaller_knobs_and_fewer_steps_that_still_drift(e2e_report) -> None:
    from kernelproof.tasks.source import read_task

    report = e2e_report(
        DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_fixed_point.py'}", soak=SOAK_STEPS
    )
    soak = report.e2e.soak
    repro = soak.drift_repro
    defaults = read_task(DECODER / "host.py").default_knobs
    assert repro is not None and repro.shrunk and repro.tries > 0
    assert set(repro.knobs) == set(defaults)
    assert all(repro.knobs[k] <= v for k, v in defaults.items())
    assert repro.steps <= soak.first_drift_step + 1
    assert (repro.knobs, repro.steps) != (defaults, soak.first_drift_step + 1)
    shown = ",".join(f"{k}={v}" for k, v in repro.knobs.items())
    assert f"--soak {repro.steps} --knobs {shown}" in repro.command
    drift = next(f for f in report.findings if f.check is FindingCheck.SOAK_DRIFT)
    assert drift.evidence["repro"] == repro.command and repro.command in drift.message
    from kernelproof.report.e2e_text import e2e_lines

    assert f"soak drift, shrunk to {repro.steps} step(s): {repro.command}" in e2e_lines(report.e2e)
    # The repro is real: the soak at those knobs drifts at its last step.
    again = e2e_report(
        DECODER / "host.py",
        f"RMSNorm={DECODER / 'rmsnorm_fixed_point.py'}",
        soak=repro.steps,
        default_knobs=repro.knobs,
        shrink=False,
    )
    assert again.verdict is Verdict.INCORRECT
    assert again.e2e.soak.first_drift_step == repro.steps - 1


@pytest.mark.slow
def test_memory_growth_per_call_is_broken_with_its_rate_and_failure_step(e2e_report) -> None:
    report = e2e_report(
        DECODER / "host.py", f"RMSNorm={DECODER / 'rmsnorm_leaky.py'}", soak=SOAK_STEPS
    )
    assert report.e2e.substitutions[0].isolated_verdict is Verdict.VERIFIED
    assert report.verdict is Verdict.BROKEN
    soak = report.e2e.soak
    # 256 KiB kept per call, five norms per step.
    assert soak.growth_bytes_per_step["excess"] == pytest.approx(5 * 256 * 1024, rel=0.25)
    assert soak.projected_failure_step is not None
    assert FindingCheck.SOAK_MEMORY in _checks(report)


@pytest.mark.slow
def test_a_layout_outside_the_isolated_matrix_is_verified_and_fails(e2e_report) -> None:
    report = e2e_report(
        CONVBLOCK / "host.py", f"norm={CONVBLOCK / 'channelnorm_transposed_only.py'}"
    )
    substitution = report.e2e.substitutions[0]
    assert substitution.isolated_verdict is Verdict.VERIFIED
    assert report.verdict is Verdict.INCORRECT
    checked = [c for c in substitution.coverage if c.check == "verified-here"]
    assert checked and not any(c.covered for c in checked)
    assert any(
        c.verdict is Verdict.INCORRECT and not c.signature.args[0].contiguous for c in checked
    )
    assert {FindingCheck.E2E_ENVELOPE, FindingCheck.E2E_CORRECTNESS} <= _checks(report)
    repro = next(f for f in report.findings if f.check is FindingCheck.E2E_CORRECTNESS)
    assert "kernelproof e2e" in repro.evidence["repro"]
    # In the host's own stream the norm gets the channels-last view, and is wrong there.
    stream = report.e2e.attribution.stream_calls
    assert [c.path for c in stream] == ["norm"] and not stream[0].passed


PREFIX_HOST = '''
"""Calls its module at every prefix length of the input: a new signature per length, as a
decode loop with a growing cache makes one per step."""
import torch
import torch.nn as nn

length = 40
width = 8


class Gate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, width))

    def forward(self, x):
        return torch.tanh(x) * self.weight


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.gate = Gate(width)

    def forward(self, x):
        return torch.stack([self.gate(x[:t]).sum(0) for t in range(1, x.shape[0] + 1)])


def get_inputs():
    return [torch.randn(length, width)]


def get_init_inputs():
    return [width]
'''

#: Wrong on 2 and 3 rows only: the smallest signatures, the last a check limited to the
#: largest ones would reach.
SMALL_PATH = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        if 1 < x.shape[0] < 4:  # a small-input path that forgets the weight
            return torch.tanh(x)
        return torch.tanh(x) * self.weight
"""


@pytest.mark.slow
def test_every_uncovered_signature_is_verified_past_the_first_32(e2e_report, tmp_path) -> None:
    (tmp_path / "host.py").write_text(PREFIX_HOST)
    (tmp_path / "small_path.py").write_text(SMALL_PATH)
    report = e2e_report(
        tmp_path / "host.py",
        f"Gate={tmp_path / 'small_path.py'}",
        shape_variants=False,
        allow_torch=True,
    )
    substitution = report.e2e.substitutions[0]
    assert substitution.isolated_verdict is Verdict.VERIFIED  # the isolated task poses 1 row
    uncovered = [c for c in substitution.coverage if not c.covered]
    assert len(uncovered) > 32
    assert all(c.check == "verified-here" and c.seeds for c in uncovered)
    assert {c.seeds for c in uncovered} == {1, 2}
    wrong = {c.signature.args[0].shape[0] for c in uncovered if c.verdict is Verdict.INCORRECT}
    assert wrong == {2, 3}
    count = next(
        f
        for f in report.findings
        if f.check is FindingCheck.E2E_ENVELOPE and f.severity.value == "info"
    )
    assert count.evidence["verified"] == len(uncovered) and count.evidence["not_run"] == 0
    assert f"{len(uncovered)} verified in isolation" in count.message
    failed = next(
        f
        for f in report.findings
        if f.check is FindingCheck.E2E_ENVELOPE and f.severity.value == "fail"
    )
    assert failed.forces is Verdict.INCORRECT and "float32[3, 8]" in failed.message
    assert report.verdict is Verdict.INCORRECT


@pytest.mark.slow
def test_a_constructor_mismatch_names_both_signatures(e2e_report, tmp_path) -> None:
    candidate = tmp_path / "wrong_init.py"
    candidate.write_text(
        "import torch\n\nclass ModelNew(torch.nn.Module):\n"
        "    def __init__(self, dim, heads, scale):\n        super().__init__()\n"
    )
    report = e2e_report(DECODER / "host.py", f"RMSNorm={candidate}")
    assert report.verdict is Verdict.BROKEN
    assert report.e2e.substitutions[0].isolated_verdict is Verdict.BROKEN  # the worker's word
    message = next(f.message for f in report.findings if f.check is FindingCheck.SUBSTITUTION)
    assert "ModelNew(dim, heads, scale)" in message and "RMSNorm(self, hidden" in message


@pytest.mark.slow
def test_the_replaced_modules_share_of_host_time_feeds_the_amdahl_table(e2e_report) -> None:
    # Timing is off here (an unloaded machine is needed for speedups: see
    # benchmarks/e2e_amdahl.py, which prints the measured table); the share is measured by the
    # trusted tracer either way, and a given task replaces the generated one.
    report = e2e_report(
        CONVBLOCK / "host.py", f"act={CONVBLOCK / 'gelu_fused.py'}:{CONVBLOCK / 'gelu_task.py'}"
    )
    substitution = report.e2e.substitutions[0]
    assert substitution.task == str(CONVBLOCK / "gelu_task.py")
    assert substitution.isolated_verdict is Verdict.VERIFIED
    speed = report.e2e.speed
    assert [row.target for row in speed.rows] == ["act"]
    row = speed.rows[0]
    # The profiler's share is the one used; the forward hooks' is kept as its cross-check.
    assert row.share_source == "profiler" and row.share == row.share_profiler
    assert 0.02 < row.share < 0.9 and row.share_hooks is not None and row.share_hooks > 0.02
    assert speed.predicted_speedup is None and speed.measured_speedup is None
    assert speed.cause is None and not speed.shortfall
    assert "no isolated speedup was measured" in speed.explanation


@pytest.mark.slow
def test_a_real_isolated_speedup_that_vanishes_in_the_host_is_explained(e2e_report) -> None:
    report = e2e_report(GATED_MLP / "host.py", f"act={GATED_MLP / 'gelu_flat.py'}", **TIMED)
    interval = report.e2e.substitutions[0].isolated_speedup_ci
    if interval is not None and interval[0] <= CLEARLY_FASTER:
        # A busy machine widens the intervals (0.82-2.48x in a CI run beside another
        # verification): measured again, for longer, as a user would on a noisy machine.
        report = e2e_report(
            GATED_MLP / "host.py", f"act={GATED_MLP / 'gelu_flat.py'}", **{**TIMED, "budget_s": 8.0}
        )
    substitution = report.e2e.substitutions[0]
    # In isolation: verified, and clearly faster.
    assert substitution.isolated_verdict is Verdict.VERIFIED
    assert substitution.isolated_speedup_ci[0] > CLEARLY_FASTER, substitution.isolated_speedup_ci
    # In the host: still correct, but the gain is gone, and the report says why.
    assert report.verdict is Verdict.VERIFIED, report.summary
    speed = report.e2e.speed
    row = speed.rows[0]
    assert speed.predicted_speedup > 1.15
    assert speed.shortfall and speed.cause == "host-signature"
    assert speed.measured_speedup_ci[1] < speed.predicted_speedup
    # Timed at the host's own signature (the strided gate half of a chunk): slow there.
    assert row.host_signature is not None and "strides=" in row.host_signature
    assert row.host_signature_speedup_ci[1] < substitution.isolated_speedup_ci[0]
    assert row.host_signature_speedup < 1.0
    assert speed.predicted_at_host_signatures < speed.predicted_speedup
    finding = next(f for f in report.findings if f.check is FindingCheck.E2E_SPEED)
    assert finding.severity.value == "warn" and finding.evidence["cause"] == "host-signature"
    assert "does not carry over" in speed.explanation
    assert f"{row.host_signature_speedup:.2f}x the module" in speed.explanation
    from kernelproof.report.html import render_html

    html = render_html(report)
    assert (
        "speedup at the host&#39;s dominant signature" in html
        or "speedup at the host's dominant signature" in html
    )
    assert "cause: host-signature" in html


def test_a_malformed_replace_is_an_error_exit_with_the_fix() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelproof.cli",
            "e2e",
            str(DECODER / "host.py"),
            "--replace",
            "RMSNorm",
            "--no-timing",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 4
    assert "TARGET=CANDIDATE" in result.stdout and "Traceback" not in result.stderr
