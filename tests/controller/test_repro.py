"""Inferred assumptions and minimal repros, end to end (slow)."""

import subprocess
import sys

import pytest

from kernelproof.schema import Verdict

pytestmark = pytest.mark.slow


def test_wrong_at_odd_sizes_gets_a_statement_and_a_working_repro(verified, examples, tmp_path):
    report = verified(examples / "softmax" / "wrong_odd.py")
    assert [a.statement for a in report.assumptions] == ["wrong when dim is odd"]
    repro = report.repros[0]
    assert repro.knobs["dim"] % 2 == 1 and repro.knobs["dim"] < 4096
    script = tmp_path / "repro.py"
    script.write_text(repro.script)
    shown = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert shown.returncode == 1 and "REPRODUCED" in shown.stdout, shown.stdout + shown.stderr
    command = repro.command.split()
    assert command[:2] == ["kernelproof", "verify"]
    rerun = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", *command[1:]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 1, rerun.stdout[-2000:]


def test_the_repro_command_rebuilds_the_same_weights_and_inputs(verified, examples, tmp_path):
    # linear_relu has weights: the command must carry the base seed that drew them, or the
    # rerun compares other weights and may not fail (an honest LSTM's repro did not).
    report = verified(examples / "linear_relu" / "wrong_odd.py", seeds=2)
    repro = report.repros[0]
    words = repro.command.split()
    assert words[words.index("--seed") + 1] == str(report.correctness.base_seed)
    out = tmp_path / "rerun.json"
    rerun = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", *words[1:], "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert rerun.returncode == 1, rerun.stdout[-2000:]
    from kernelproof.schema import Report

    again = Report.model_validate_json(out.read_text())
    # Same weights, same inputs, same knobs: the very same error, to the last digit.
    assert repro.detail in [t.message[:600] for t in again.correctness.tests], (
        repro.detail,
        [t.message for t in again.correctness.tests],
    )


def test_hardcoded_shape_repro_shrinks_the_knobs(verified, examples):
    report = verified(examples / "linear_relu" / "hardcoded.py")
    assert report.verdict is Verdict.INCORRECT
    assert report.assumptions and "exceeds" in report.assumptions[0].statement
    repro = report.repros[0]
    failing = next(t for t in report.correctness.tests if t.variant.name == repro.failure)
    before = {**report.correctness.default_knobs, **failing.variant.knobs}
    assert repro.shrink_steps >= 1
    assert sum(repro.knobs.values()) < sum(before.values())


def test_verified_candidate_has_no_assumptions_or_repros(verified, examples):
    report = verified(examples / "softmax" / "correct.py")
    assert report.assumptions == [] and report.repros == []
