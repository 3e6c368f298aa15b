"""Structured value variants: ties, equal and repeated rows, signed zeros, subnormals, the
largest finite values, and a task's own ``VALUE_VARIANTS``."""

from __future__ import annotations

import types

import pytest
import torch

from kernelproof.errors import TaskError
from kernelproof.schema import InputVariant, ValueTransform, VariantKind
from kernelproof.tasks.inputs import TaskValueError, build_inputs, transform_values
from kernelproof.tasks.source import parse_task


def _x() -> torch.Tensor:
    return torch.randn(8, 100, generator=torch.Generator().manual_seed(0))


def test_integer_and_quantised_values_tie_often():
    for transform in (ValueTransform.INTEGERS, ValueTransform.QUANTISED):
        (x,) = transform_values([_x()], transform, seed=1)
        assert x.unique().numel() <= 17
        assert bool((x == x.max(dim=-1, keepdim=True).values).sum(dim=-1).gt(1).any())


def test_equal_and_repeated_rows():
    (equal,) = transform_values([_x()], ValueTransform.EQUAL_ROWS, seed=1)
    assert bool((equal == equal[:, :1]).all()) and equal[:, 0].unique().numel() > 1
    (repeated,) = transform_values([_x()], ValueTransform.REPEATED_ROWS, seed=1)
    assert bool((repeated == repeated[0]).all()) and repeated[0].unique().numel() > 1


def test_signed_zeros_subnormals_and_largest_finite():
    (zeros,) = transform_values([_x()], ValueTransform.NEGATIVE_ZERO, seed=1)
    negative = (zeros == 0) & torch.signbit(zeros)
    assert 0.15 < float(negative.float().mean()) < 0.35
    (tiny,) = transform_values([_x()], ValueTransform.DENORMAL, seed=1)
    nonzero = tiny[tiny != 0].abs()
    assert bool((nonzero < torch.finfo(torch.float32).tiny).all()) and nonzero.numel() > 700
    (large,) = transform_values([_x()], ValueTransform.LARGEST, seed=1)
    assert float(large.abs().max()) > 1e17  # near sqrt(float32 max / row): far past fp16
    # A sum of products of two inputs over a row (a dot product) stays finite.
    assert bool(torch.isfinite((large * large).sum(dim=-1)).all())
    assert not bool(torch.isfinite((large * large * large).sum(dim=-1)).all())


def test_integer_inputs_stay_valid():
    ids = torch.arange(10)
    for transform in ValueTransform:
        out = transform_values([_x(), ids], transform, seed=1)
        assert torch.equal(out[1], ids), transform


TASK = """
import torch
n = 4
class Model(torch.nn.Module):
    def forward(self, x):
        return x
def get_inputs():
    return [torch.randn(n)]
def get_init_inputs():
    return []
def ones(inputs, generator):
    return [torch.ones_like(inputs[0])]
def reshaped(inputs, generator):
    return [inputs[0].reshape(2, 2)]
VALUE_VARIANTS = {"ones": ones, "reshaped": reshaped}
"""


def test_task_value_variants_are_read_without_running_the_task_and_applied_in_workers():
    assert parse_task(TASK, "t.py").value_variants == ["ones", "reshaped"]
    module = types.ModuleType("t")
    exec(compile(TASK, "t.py", "exec"), module.__dict__)
    variant = InputVariant(
        name="value:task:ones", kind=VariantKind.VALUE, seed=3, task_value="ones"
    )
    assert torch.equal(build_inputs(module, variant)[0], torch.ones(4))
    with pytest.raises(TaskValueError, match=r"changed input 0 from \(4,\).*to \(2, 2\)"):
        build_inputs(module, variant.model_copy(update={"task_value": "reshaped"}))


def test_value_variants_must_be_a_dict_literal_with_string_keys():
    with pytest.raises(TaskError, match="VALUE_VARIANTS` must be a dict literal"):
        parse_task(
            TASK.replace(
                'VALUE_VARIANTS = {"ones": ones, "reshaped": reshaped}',
                "VALUE_VARIANTS = dict(ones=ones)",
            ),
            "t.py",
        )


def test_values_reach_1e4_1e5_and_every_decade_of_the_finite_range():
    (x4,) = transform_values([_x()], ValueTransform.SCALE_UP_4, seed=1)
    (x5,) = transform_values([_x()], ValueTransform.SCALE_UP_5, seed=1)
    assert 1e4 < float(x4.abs().max()) < 1e5 < float(x5.abs().max())
    source = torch.randn(64, 1000, generator=torch.Generator().manual_seed(0))
    (wide,) = transform_values([source], ValueTransform.WIDE_RANGE, seed=1)
    assert bool(torch.isfinite(wide).all())
    assert torch.equal(torch.signbit(wide), torch.signbit(source))
    decades = torch.log10(wide.abs()).floor().unique()
    assert {-10, -1, 0, 4, 5, 10} <= {int(d) for d in decades}  # 64,000 draws over ~34 decades
    # As the largest-finite variant: a sum of products of two inputs over a row stays finite.
    assert bool(torch.isfinite((wide * wide).sum(dim=-1)).all())
    again = transform_values([source], ValueTransform.WIDE_RANGE, seed=1)[0]
    assert torch.equal(wide, again)  # deterministic from the seed: both workers agree
