"""From verify to the guard with real reports: the guard examples, and an incident replayed
through ``kernelproof incidents --replay`` (CLI in a subprocess, like every CLI test)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import kernelproof
from kernelproof.controller.verify import verify
from kernelproof.tasks.module import import_file

from .conftest import GUARD_EXAMPLES

pytestmark = pytest.mark.slow

Build = Callable[[str], torch.nn.Module]


def kernelproof_cli(*args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environment["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


def test_a_verified_time_bomb_is_rolled_back_in_serving(
    verified: Callable[..., Any], example: Build
) -> None:
    report = verified(GUARD_EXAMPLES / "time_bomb.py")
    assert report.verdict.value == "verified"  # verification cannot see it
    bomb = example("time_bomb")
    bomb.goes_wrong_after = 100
    guarded = kernelproof.guard(bomb, example("reference"), report, shadow_rate=0.05, seed=5)
    for _ in range(600):
        guarded(torch.randn(64, 256))
    assert guarded.stats["rolled_back"] and bomb.calls - 100 < 200


def test_a_size_outside_the_real_envelope_never_reaches_the_candidate(
    verified: Callable[..., Any], example: Build
) -> None:
    report = verified(GUARD_EXAMPLES / "wrong_outside.py")
    assert report.verdict.value == "verified"
    guarded = kernelproof.guard(
        example("wrong_outside"), example("reference"), report, shadow_rate=1.0
    )
    for batch in (64, 700, 100, 900):
        x = torch.randn(batch, 256)
        torch.testing.assert_close(guarded(x), torch.softmax(x, -1))
    assert guarded.stats["out_of_envelope"] == 2 and guarded.stats["mismatches"] == 0


def test_verified_input_mutations_are_caught_by_the_guard(
    verified: Callable[..., Any], example: Build
) -> None:
    report = verified(GUARD_EXAMPLES / "mutates_inputs.py")
    assert report.verdict.value == "verified"
    mutating = example("mutates_inputs")
    mutating.mutates_after = 10
    guarded = kernelproof.guard(mutating, example("reference"), report, shadow_rate=0.5, seed=2)
    for _ in range(60):
        guarded(torch.randn(64, 256))
    assert guarded.stats["rolled_back"]
    assert guarded.incidents[0].kinds[0].value == "input-mutation"


PLANTED = '''# kernelproof-reference: {reference}
"""Softmax, wrong on any input whose first element is exactly 42.0 (a production value the
matrix's random and structured inputs never hold)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        out = e / e.sum(dim=-1, keepdim=True)
        return out * 2 if bool(x.reshape(-1)[0] == 42.0) else out
'''


def test_an_incident_replays_through_verify_and_reproduces(tmp_path: Path, example: Build) -> None:
    reference = GUARD_EXAMPLES / "reference.py"
    candidate = tmp_path / "planted.py"
    candidate.write_text(PLANTED.format(reference=reference))
    report = verify(reference, candidate, seeds=2, base_seed=99, timing=False, native_audit=False)
    assert report.verdict.value == "verified"
    module = import_file(str(candidate), "planted_candidate").ModelNew()
    incidents = tmp_path / "incidents"
    guarded = kernelproof.guard(
        module, example("reference"), report, shadow_rate=1.0, incident_dir=incidents
    )
    x = torch.randn(100, 256)  # inside the batch range, not a verified size
    x[0, 0] = 42.0
    torch.testing.assert_close(guarded(x), torch.softmax(x, -1))
    replay = kernelproof_cli("incidents", str(incidents), "--replay", "latest")
    assert replay.returncode == 1, replay.stdout + replay.stderr  # incorrect
    assert "replaying " in replay.stdout and "mismatch at (float32[100, 256]@cpu)" in replay.stdout
    assert "replay: reproduced: the saved inputs' cell failed" in replay.stdout


def test_drifted_signatures_become_shapes_the_next_verify_covers(
    tmp_path: Path, example: Build
) -> None:
    """Inputs shifted -> back to proof in one step: the guard logs production calls outside
    its envelope, `guard shapes --write` adds them to the task, and the next verify's envelope
    holds them."""
    from kernelproof.schema.envelope import CallSignature

    from .conftest import synthetic_report

    log = tmp_path / "incidents"
    guarded = kernelproof.guard(
        example("time_bomb"),
        example("reference"),
        synthetic_report(),
        shadow_rate=0.0,
        incident_dir=log,
    )
    drifted = [torch.randn(700, 256), torch.randn(7, 256)]
    for x in drifted * 3:
        guarded(x)
    guarded.flush()
    assert guarded.stats["out_of_envelope"] == 6
    task = tmp_path / "task.py"
    task.write_text((GUARD_EXAMPLES / "reference.py").read_text())
    result = kernelproof_cli("guard", "shapes", str(log), "--task", str(task), "--write")
    assert result.returncode == 0, result.stdout
    assert "added 2 shape(s)" in result.stdout
    report = verify(
        task,
        GUARD_EXAMPLES / "time_bomb.py",
        profile="quick",
        timing=False,
        native_audit=False,
        seeds=1,
        base_seed=5,
    )
    assert report.verdict.value == "verified", report.summary
    assert report.envelope is not None
    for x in drifted:
        assert report.envelope.contains(CallSignature.of([x])), x.shape
