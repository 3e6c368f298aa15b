"""A task's POLICY and SHAPES are validated: a misspelt hint is an `error` verdict, not ignored."""

from pathlib import Path

import pytest

from kernelproof import verify
from kernelproof.errors import TaskError
from kernelproof.schema import FindingCheck, Verdict
from kernelproof.tasks.hints import validate_policy, validate_shapes

TASK = """import torch
import torch.nn as nn

dim = 64
{hints}

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(dim)]


def get_init_inputs():
    return []
"""

CANDIDATE = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
"""


def files(tmp_path: Path, hints: str, candidate: str = CANDIDATE) -> tuple[Path, Path]:
    reference = tmp_path / "reference.py"
    reference.write_text(TASK.format(hints=hints))
    (tmp_path / "candidate.py").write_text(candidate)
    return reference, tmp_path / "candidate.py"


def only_finding(report):
    (finding,) = report.findings
    return finding


def test_an_unknown_policy_key_is_an_error_naming_the_valid_keys(tmp_path):
    report = verify(*files(tmp_path, 'POLICY = {"allow_troch": True}'))
    assert report.verdict is Verdict.ERROR
    finding = only_finding(report)
    assert finding.check is FindingCheck.TASK
    assert "'allow_troch'" in finding.message
    assert (
        "allow_torch, atol, input_pool, mode, rtol, seeds, strict, tolerance_factor"
        in finding.message
    )


def test_a_policy_value_of_the_wrong_type_is_an_error(tmp_path):
    report = verify(*files(tmp_path, 'POLICY = {"seeds": "many"}'))
    assert report.verdict is Verdict.ERROR
    assert "POLICY['seeds']" in only_finding(report).message


def test_shapes_naming_no_knob_is_an_error_naming_the_knobs(tmp_path):
    report = verify(*files(tmp_path, "SHAPES = [dict(dimm=8)]"))
    assert report.verdict is Verdict.ERROR
    message = only_finding(report).message
    assert "'dimm'" in message and "knobs are dim" in message


def test_a_shape_value_that_is_not_an_integer_is_an_error(tmp_path):
    report = verify(*files(tmp_path, "SHAPES = [dict(dim=True)]"))
    assert report.verdict is Verdict.ERROR
    assert "SHAPES[0]['dim']" in only_finding(report).message


def test_a_candidate_without_modelnew_is_broken_not_an_error(tmp_path):
    report = verify(*files(tmp_path, "", candidate="class Model: pass\n"))
    assert report.verdict is Verdict.BROKEN
    assert only_finding(report).check is FindingCheck.CANDIDATE_FILE


def test_valid_hints_keep_what_they_set():
    assert validate_policy({"seeds": 3, "mode": "eval"}, Path("t.py")) == {
        "seeds": 3,
        "mode": "eval",
    }
    assert validate_shapes([{"dim": 8}], ["dim"], Path("t.py")) == [{"dim": 8}]
    with pytest.raises(TaskError, match="valid keys"):
        validate_policy({"nope": 1}, Path("t.py"))
