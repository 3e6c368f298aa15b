"""Knobs apply to both sides: a candidate whose module copies the task's constants (as
KernelBench candidates do) gets them re-rendered at each shape, as the reference does; a size
written as a literal in the candidate's code is still a stated limitation."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from kernelproof.schema import FindingCheck, Severity, TestOutcome, Verdict
from kernelproof.tasks.candidate_knobs import (
    rendered_for_construction,
    rerender_module,
    shared_knobs,
)
from kernelproof.tasks.source import parse_task

TASKS = ("lstm_hn.py", "gru_bidirectional.py")


def _renamed(reference: Path, folder: Path, edit: tuple[str, str] | None = None) -> Path:
    """The reference itself with ``Model`` renamed ``ModelNew`` (and one optional edit)."""
    text = (
        reference.read_text()
        .replace("class Model(", "class ModelNew(")
        .replace("super(Model, self)", "super(ModelNew, self)")
    )
    if edit is not None:
        assert edit[0] in text
        text = text.replace(edit[0], edit[1])
    candidate = folder / f"{reference.stem}_{'edited' if edit else 'same'}.py"
    candidate.write_text(text)
    return candidate


@pytest.mark.slow
@pytest.mark.parametrize("name", TASKS)
def test_the_reference_as_its_own_candidate_is_verified_at_every_shape(
    verified, examples, tmp_path, name
):
    reference = examples / "formats" / "knobs" / name
    report = verified(
        _renamed(reference, tmp_path), reference=reference, allow_torch=True, generated_shapes=False
    )
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert not [f for f in report.findings if f.check == FindingCheck.LIMITATION]
    shapes = [t for t in report.correctness.tests if t.variant.kind.value == "shape"]
    assert any(t.variant.knobs.get("batch_size", 4) != 4 for t in shapes)
    assert all(t.outcome is TestOutcome.PASSED for t in shapes)
    [line] = [f for f in report.findings if f.check == FindingCheck.CANDIDATE_KNOBS]
    assert line.severity is Severity.INFO and "`batch_size`" in line.message


@pytest.mark.slow
def test_a_size_written_as_a_literal_is_still_a_stated_limitation(verified, examples, tmp_path):
    reference = examples / "formats" / "knobs" / "gru_bidirectional.py"
    candidate = _renamed(
        reference,
        tmp_path,
        (
            "torch.randn((num_layers * 2, batch_size, hidden_size))",
            "torch.randn((num_layers * 2, 4, hidden_size))",
        ),
    )
    report = verified(candidate, reference=reference, allow_torch=True, generated_shapes=False)
    assert report.verdict is Verdict.VERIFIED, report.summary
    [limitation] = [f for f in report.findings if f.check == FindingCheck.LIMITATION]
    assert limitation.severity is Severity.WARN


TASK = """import torch
batch_size = 8
dim = 16
bias_shape = (dim, 1)
class Model(torch.nn.Module):
    pass
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return []
"""


def test_only_knobs_copied_with_the_reference_value_are_shared():
    task = parse_task(TASK, "task.py")
    candidate = "batch_size = 8\ndim = 32\nunrelated = 3\nclass ModelNew: pass\n"
    assert shared_knobs(task, candidate) == {"batch_size": 8}
    assert shared_knobs(task, "def broken(:\n") == {}


def test_rerendering_sets_the_knobs_and_the_values_derived_from_them():
    source = (
        "batch_size = 8\ndim = 16\nbias_shape = (dim, 1)\nfixed = (4, 1)\n"
        "def width():\n    return dim\n"
    )
    module = types.ModuleType("candidate")
    exec(compile(source, "candidate.py", "exec"), module.__dict__)
    rerender_module(module, source, {"dim": 5}, ["batch_size", "dim"])
    assert module.dim == 5 and module.width() == 5 and module.bias_shape == (5, 1)
    assert module.batch_size == 8 and module.fixed == (4, 1)
    rerender_module(module, source, {}, ["batch_size", "dim"])  # back to the defaults
    assert module.dim == 16 and module.bias_shape == (16, 1)


def test_values_already_in_place_rerun_nothing():
    source = "dim = 16\nbuilds = []\nkernel = builds.append(dim)\n"
    module = types.ModuleType("candidate")
    exec(compile(source, "candidate.py", "exec"), module.__dict__)
    rerender_module(module, source, {}, ["dim"])
    rerender_module(module, source, {"dim": 16}, ["dim"])
    assert module.builds == [16]
    rerender_module(module, source, {"dim": 8}, ["dim"])
    assert module.builds == [16, 8]


def test_the_written_values_are_back_after_construction_even_when_it_raises():
    source = "dim = 16\nbias_shape = (dim, 1)\n"
    module = types.ModuleType("candidate")
    exec(compile(source, "candidate.py", "exec"), module.__dict__)
    with rendered_for_construction(module, source, {"dim": 3}, ["dim"]):
        assert module.bias_shape == (3, 1)
    assert module.dim == 16 and module.bias_shape == (16, 1)
    with (
        pytest.raises(RuntimeError),
        rendered_for_construction(module, source, {"dim": 5}, ["dim"]),
    ):
        raise RuntimeError("the constructor failed")
    assert module.dim == 16


@pytest.mark.slow
def test_a_kernel_sized_from_a_copied_knob_in_its_calls_is_still_caught(verified, examples):
    """The attack on re-rendering: a grid sized from ``batch_size`` read in ``forward``."""
    candidate = examples / "formats" / "knobs" / "linear_relu_copied_knobs.py"
    report = verified(
        candidate, reference=examples / "linear_relu" / "reference.py", allow_torch=True
    )
    assert report.verdict is Verdict.INCORRECT, report.summary
    assert [f for f in report.findings if f.check == FindingCheck.CANDIDATE_KNOBS]
