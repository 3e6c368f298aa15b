"""The task-adequacy audit end to end, through a reference worker, and its command line."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelproof.controller.audit_task import audit_task
from kernelproof.errors import TaskError
from kernelproof.schema import AdequacyReport

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUNDLED = sorted(EXAMPLES.glob("*/reference.py"))

#: Few seeds and a fixed base seed: each audit stays within seconds and reproduces.
AUDIT = {"seeds": 2, "base_seed": 1234}

TASK_TEMPLATE = """
import torch
import torch.nn as nn

batch_size = 16
dim = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {forward}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""


def write_task(folder: Path, name: str, forward: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(TASK_TEMPLATE.format(forward=forward))
    return path


def test_there_are_bundled_tasks_to_audit():
    assert len(BUNDLED) >= 5


@pytest.mark.parametrize("reference", BUNDLED, ids=lambda p: p.parent.name)
def test_every_bundled_task_is_adequate(reference):
    report = audit_task(reference, **AUDIT)
    assert report.adequate, report.problems
    assert not report.degenerate and not report.too_tight and not report.problems
    assert report.seeds and len({o.seed for o in report.outputs}) == AUDIT["seeds"]
    for output in report.outputs:
        ran = [m for m in output.mutants if not m.skipped]
        assert {m.must for m in ran} == {"reject", "accept"}
        assert all(m.as_expected for m in ran)


def test_a_tiny_output_under_kernelbench_tolerance_is_degenerate_and_names_zeros(tmp_path):
    reference = write_task(tmp_path, "tiny", "x * 1e-30")
    report = audit_task(reference, atol=1e-2, rtol=1e-2, **AUDIT)
    assert report.degenerate and report.tolerance["mode"] == "fixed"
    assert report.problems[0].startswith("zeros are accepted: the outputs are too small")
    zeros = [m for o in report.outputs for m in o.mutants if m.name == "zeros"]
    assert zeros and all(m.accepted for m in zeros)
    # The oracle tolerance sees through the scale: the same task is adequate without atol/rtol.
    assert audit_task(reference, **AUDIT).adequate


@pytest.mark.skipif(
    not (EXAMPLES / "tiny_outputs" / "reference.py").exists(), reason="no tiny_outputs example"
)
def test_tiny_outputs_are_degenerate_only_under_kernelbench_tolerance():
    """The bundled tiny_outputs task (softmax * 1e-5) is adequate under the oracle tolerance
    (the parametrized test above) but degenerate under KernelBench's fixed atol/rtol."""
    report = audit_task(
        EXAMPLES / "tiny_outputs" / "reference.py", profile="kernelbench-compat", **AUDIT
    )
    assert report.degenerate
    assert any(p.startswith("zeros are accepted") for p in report.problems)


def test_a_task_that_fails_says_where_and_what_to_fix(tmp_path):
    reference = write_task(tmp_path, "raises", "undefined_name + x")
    with pytest.raises(TaskError, match=r"fails on its default inputs .*NameError.*line 14.*Fix"):
        audit_task(reference, **AUDIT)


def cli(*args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "COLUMNS": "200"}  # one table row per line, no wrapping
    return subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "audit-task", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )


def test_cli_exit_codes_and_output(tmp_path):
    adequate = cli(
        str(EXAMPLES / "softmax" / "reference.py"),
        "--seeds",
        "1",
        "--seed",
        "5",
        "--json",
        str(tmp_path / "audit.json"),
    )
    assert adequate.returncode == 0, adequate.stdout + adequate.stderr
    assert "rounding-noise" in adequate.stdout and "bf16-round-trip" in adequate.stdout
    assert "\nadequate\n" in adequate.stdout
    saved = AdequacyReport.model_validate(json.loads((tmp_path / "audit.json").read_text()))
    assert saved.adequate and saved.base_seed == 5

    identity = write_task(tmp_path, "identity", "x.clone()")
    degenerate = cli(str(identity), "--seeds", "1")
    assert degenerate.returncode == 1, degenerate.stdout + degenerate.stderr
    assert "degenerate: the input passed through unchanged is accepted" in degenerate.stdout

    missing = cli(str(tmp_path / "nowhere.py"))
    assert missing.returncode == 4
    assert "the reference file does not exist" in missing.stdout
    assert "Traceback" not in missing.stdout + missing.stderr
