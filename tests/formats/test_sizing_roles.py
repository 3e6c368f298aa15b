"""Sizing keeps tasks meaningful: batch and spatial knobs shrink first, class counts never, and
a halving the reference cannot run is undone (through a real reference worker)."""

from pathlib import Path

import pytest

from kernelproof.config import resolve_settings
from kernelproof.controller.sizing import fit_default_shape
from kernelproof.tasks.knob_roles import KnobRole, knob_role
from kernelproof.tasks.source import read_task
from kernelproof.workers.pair import WorkerPair

pytestmark = pytest.mark.slow


def _size(path: Path):
    task = read_task(path)
    with WorkerPair(task=task, candidate_path=None, settings=resolve_settings()) as pair:
        pair.start_reference()
        return task, fit_default_shape(pair, task.default_knobs, pair.settings)


@pytest.fixture(scope="module")
def folder(examples: Path) -> Path:
    return examples / "formats" / "sizing"


def test_vgg_like_task_keeps_its_thousand_classes(folder):
    task, sizing = _size(folder / "vgg_like.py")
    assert sizing.scaled_down, "the task's own shape is over the budget"
    assert sizing.knobs["num_classes"] == 1000 and sizing.knobs["in_channels"] == 3
    # The largest of batch and image shrinks first: the image, so the batch stays informative.
    assert sizing.knobs["height"] < 224 and sizing.knobs["width"] < 224
    assert sizing.knobs["batch_size"] >= 8
    assert "kept: " in sizing.scaled_down and "num_classes=1000" in sizing.scaled_down
    assert sizing.tiny_output is None


def test_pooling_net_stops_shrinking_its_image_where_the_pools_need_it(folder):
    _, sizing = _size(folder / "pooling_net.py")
    assert sizing.scaled_down and sizing.warning is None
    assert sizing.knobs["image_size"] == 56, sizing.scaled_down
    assert sizing.knobs["channels"] == 64 and sizing.knobs["num_classes"] == 10
    assert sizing.knobs["batch_size"] < 256
    assert "image_size kept at 56 (the reference fails at 28)" in sizing.scaled_down


def test_tiny_scaled_outputs_are_named(folder):
    _, sizing = _size(folder / "tiny_output.py")
    assert sizing.scaled_down and sizing.knobs["num_classes"] == 2
    assert sizing.tiny_output is not None and "4 element(s)" in sizing.tiny_output


@pytest.mark.parametrize(
    "name, role",
    [
        ("batch_size", KnobRole.BATCH),
        ("height", KnobRole.EXTENT),
        ("dim1", KnobRole.EXTENT),
        ("seq_len", KnobRole.EXTENT),
        ("image_size", KnobRole.EXTENT),
        ("dim", KnobRole.GENERIC),
        ("K", KnobRole.GENERIC),
        ("in_channels", KnobRole.WIDTH),
        ("hidden_size", KnobRole.WIDTH),
        ("num_classes", KnobRole.FIXED),
        ("kernel_size", KnobRole.FIXED),
        ("num_layers", KnobRole.FIXED),
    ],
)
def test_knob_roles_from_names(name, role):
    assert knob_role(name) is role
