from pathlib import Path

import pytest

from kernelproof.errors import CandidateFormatError, TaskError
from kernelproof.tasks.source import read_candidate, read_task

TASK = """import torch
batch_size = 16
in_channels, out_channels = 3, 8
_private = 5
flag = True
dim = 16384
N = 2048 * 2
bias_shape = (out_channels, 1, 1)
SHAPES = [dict(batch_size=3, dim=7), {"dim": 1}]
POLICY = {"allow_torch": True}
class Model(torch.nn.Module):
    pass
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return [in_channels, out_channels, bias_shape]
"""


def write(tmp_path: Path, text: str, name: str = "task.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_knobs_are_top_level_int_constants(tmp_path):
    task = read_task(write(tmp_path, TASK))
    assert task.default_knobs == {
        "batch_size": 16,
        "in_channels": 3,
        "out_channels": 8,
        "dim": 16384,
        "N": 4096,
    }
    assert task.shapes == [{"batch_size": 3, "dim": 7}, {"dim": 1}]
    assert task.policy == {"allow_torch": True}


def test_render_replaces_literals_so_derived_values_follow(tmp_path):
    task = read_task(write(tmp_path, TASK))
    text = task.render({"out_channels": 5, "dim": 8191, "N": 100})
    namespace: dict = {}
    exec(compile(text.replace("import torch", "").split("class Model")[0], "t", "exec"), namespace)
    assert namespace["bias_shape"] == (5, 1, 1)
    assert namespace["dim"] == 8191
    assert namespace["in_channels"] == 3  # untouched knob on the same line
    changed = [a for a, b in zip(text.splitlines(), TASK.splitlines()) if a != b]
    assert changed == ["in_channels, out_channels = 3, 5", "dim = 8191", "N = 100"]


def test_render_rejects_unknown_knob(tmp_path):
    task = read_task(write(tmp_path, TASK))
    with pytest.raises(TaskError, match="no knob named width"):
        task.render({"width": 3})


@pytest.mark.parametrize(
    "text, message",
    [
        ("import torch\n", "does not define Model, get_inputs, get_init_inputs"),
        ("def get_inputs(:\n", "syntax error"),
        (TASK.replace("SHAPES = [", "SHAPES = [make(), "), "written with literals only"),
    ],
)
def test_bad_reference_gets_a_clear_error(tmp_path, text, message):
    with pytest.raises(TaskError, match=message):
        read_task(write(tmp_path, text))


def test_missing_reference_file(tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        read_task(tmp_path / "nope.py")


def test_candidate_without_modelnew_is_a_format_error(tmp_path):
    with pytest.raises(CandidateFormatError, match="does not define `ModelNew`"):
        read_candidate(write(tmp_path, "class Model: pass\n", "cand.py"))
    assert "ModelNew" in read_candidate(write(tmp_path, "class ModelNew: pass\n", "ok.py"))


def test_a_candidate_format_error_is_not_a_task_error(tmp_path):
    """A bad candidate must never be mistaken for a bad task (``error`` instead of ``broken``)."""
    with pytest.raises(CandidateFormatError) as caught:
        read_candidate(write(tmp_path, "def (:\n", "cand.py"))
    assert not isinstance(caught.value, TaskError)
