"""Building a variant's inputs deterministically inside a worker.

Both workers call :func:`build_inputs` with the same task source and the same
:class:`InputVariant`, so they hold identical inputs without any tensor crossing a process
boundary. Task code is deterministic given the seed; every RNG it might use is seeded here.
"""

from __future__ import annotations

import random
import types
from typing import Any

import numpy
import torch

from kernelproof.schema.variant import InputVariant, LayoutTransform, ValueTransform

#: The shift variant adds this to every floating input: large enough that exp() of it overflows
#: float32 (exp(89) > 3.4e38), so softmax without max-subtraction is caught (HACKS row 18).
SHIFT_AMOUNT = 100.0

#: Integer-valued inputs are round(randn * this), clamped to +-INTEGER_LIMIT: 13 distinct
#: values, so a row of a few thousand elements ties hundreds of times at its maximum.
INTEGER_SPREAD = 2.0
INTEGER_LIMIT = 6.0

#: Quantised inputs take 2 * this + 1 levels in [-1, 1] (int4-like): ties and repeats.
QUANTISED_STEPS = 8

#: The largest-finite variant scales each input so that max |x|^2 * row length * this equals
#: the dtype's largest finite value: a sum of products of two inputs over a row (a dot
#: product, a sum of squares) stays finite, an exp() does not (then the reference's own Inf
#: decides, as for planted Inf). Scaling to the largest value itself made every product
#: overflow in a plain rewrite of attention while the reference's fused kernel stayed
#: finite: a difference of kernels at inputs no product-based task can use.
LARGEST_HEADROOM = 4.0

#: The subnormal variant scales each input so that its largest element is this share of the
#: smallest normal number: all of them subnormal, most with a few bits of precision left.
SUBNORMAL_FILL = 0.99

#: Elements a storage-offset view starts past the beginning of its storage: odd, so the data
#: pointer loses 16-byte alignment too.
STORAGE_OFFSET_ELEMENTS = 3


def seed_everything(seed: int) -> None:
    """Seed every RNG a task or model constructor may draw from."""
    random.seed(seed)
    numpy.random.seed(seed % (2**32))
    # The CPU generator directly: ``torch.manual_seed`` also visits every other backend, which
    # costs 0.15 ms, paid once per timed call. The values are the same.
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def build_inputs(
    task: types.ModuleType,
    variant: InputVariant,
    *,
    device: str = "cpu",
    dtype: torch.dtype | None = None,
) -> list[Any]:
    """The inputs of ``variant``: ``get_inputs()`` under its seed, then its transforms."""
    seed_everything(variant.seed)
    raw = task.get_inputs()
    if not isinstance(raw, (list, tuple)):
        raw = [raw]
    inputs = [_place(x, device, dtype) for x in raw]
    if variant.value is not None:
        inputs = transform_values(inputs, variant.value, variant.seed)
    if variant.task_value is not None:
        inputs = task_value_variant(task, variant.task_value, inputs, variant.seed)
    if variant.layout is not None:
        inputs = [_relayout(x, variant.layout) for x in inputs]
    return inputs


def oracle_inputs(inputs: list[Any]) -> list[Any]:
    """Float64 copies of the floating inputs, for the oracle. Other inputs pass unchanged."""
    return [to_float64(x) for x in inputs]


def to_float64(value: Any) -> Any:
    """``value`` with every floating tensor in it as float64, through lists, tuples and dicts
    (a task's inputs, or tensors a model keeps as plain attributes). Parameters are left to
    ``Module.to``; anything else passes unchanged."""
    if isinstance(value, torch.nn.Parameter):
        return value
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64) if value.is_floating_point() else value
    if isinstance(value, list):
        return [to_float64(v) for v in value]
    if type(value) is tuple:
        return tuple(to_float64(v) for v in value)
    if isinstance(value, dict):
        return {k: to_float64(v) for k, v in value.items()}
    return value


def _place(x: Any, device: str, dtype: torch.dtype | None) -> Any:
    if not isinstance(x, torch.Tensor):
        return x
    if dtype is not None and x.is_floating_point():
        x = x.to(dtype)
    return x.to(device)


def transform_values(inputs: list[Any], transform: ValueTransform, seed: int) -> list[Any]:
    """``inputs`` with every floating-point tensor transformed (planted Inf/NaN: the first
    only). Integer tensors (ids, indices, counts) pass unchanged, so they stay valid."""
    floating = [
        i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()
    ]
    out = list(inputs)
    if transform is ValueTransform.SPECIAL:
        if floating:
            out[floating[0]] = _plant_special(out[floating[0]], seed)
        return out
    for i in floating:
        out[i] = structured_values(out[i], transform, seed + i)
    return out


def structured_values(x: torch.Tensor, transform: ValueTransform, seed: int) -> torch.Tensor:
    """One floating tensor under ``transform`` (see :class:`ValueTransform`); a new tensor."""
    if transform is ValueTransform.SCALE_UP:
        return x * 1e3
    if transform is ValueTransform.SCALE_UP_4:
        return x * 1e4
    if transform is ValueTransform.SCALE_UP_5:
        return x * 1e5
    if transform is ValueTransform.SCALE_DOWN:
        return x * 1e-3
    if transform is ValueTransform.SHIFT:
        return x + SHIFT_AMOUNT
    if transform is ValueTransform.INTEGERS:
        return torch.round(x * INTEGER_SPREAD).clamp_(-INTEGER_LIMIT, INTEGER_LIMIT)
    if transform is ValueTransform.QUANTISED:
        return torch.round(x.clamp(-1, 1) * QUANTISED_STEPS) / QUANTISED_STEPS
    if transform is ValueTransform.NEGATIVE_ZERO:
        return _signed_zeros(x, seed)
    info = torch.finfo(x.dtype)
    peak = float(x.abs().max()) if x.numel() else 0.0
    if transform is ValueTransform.DENORMAL:  # every element below the smallest normal
        return (x.double() * (SUBNORMAL_FILL * info.tiny / peak if peak else 0.0)).to(x.dtype)
    if transform is ValueTransform.LARGEST:
        return (x.double() * (_largest_magnitude(x) / peak if peak else 0.0)).to(x.dtype)
    if transform is ValueTransform.WIDE_RANGE:
        return _wide_range(x, seed)
    if x.dim() == 0 or x.numel() == 0:
        return x.clone()
    if transform is ValueTransform.EQUAL_ROWS:
        return x[..., :1].expand(x.shape).contiguous()
    if transform is ValueTransform.REPEATED_ROWS:
        rows = x.reshape(-1, x.shape[-1])
        return rows[:1].expand(rows.shape).reshape(x.shape).contiguous()
    raise ValueError(f"unknown value transform {transform!r}")


def _largest_magnitude(x: torch.Tensor) -> float:
    """The magnitude the largest-finite variant scales ``x``'s peak to (see
    :data:`LARGEST_HEADROOM`)."""
    row = x.shape[-1] if x.dim() >= 1 and x.shape[-1] > 0 else 1
    return (torch.finfo(x.dtype).max / (LARGEST_HEADROOM * row)) ** 0.5


def _wide_range(x: torch.Tensor, seed: int) -> torch.Tensor:
    """``x``'s signs with magnitudes drawn log-uniformly from ``[1/top, top]``, ``top`` the
    largest-finite variant's magnitude: the product of any two stays a normal, finite number
    and a row's sum of such products stays finite, so the reference stays finite wherever the
    largest-finite variant does, while |x| covers 1e4, 1e5 and every other decade between."""
    top = _largest_magnitude(x)
    generator = torch.Generator().manual_seed(seed)
    exponent = torch.rand(x.shape, generator=generator, dtype=torch.float64) * 2 - 1
    magnitude = torch.pow(top, exponent)
    sign = torch.where(x.cpu() < 0, -1.0, 1.0).to(torch.float64)
    return (sign * magnitude).to(dtype=x.dtype, device=x.device)


def _signed_zeros(x: torch.Tensor, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    draw = torch.rand(x.shape, generator=generator).to(x.device)
    out = x.clone()
    out[draw < 0.25] = -0.0
    out[(draw >= 0.25) & (draw < 0.5)] = 0.0
    return out


def task_value_variant(
    task: types.ModuleType, name: str, inputs: list[Any], seed: int
) -> list[Any]:
    """Apply the task's own value generator ``VALUE_VARIANTS[name](inputs, generator)``.

    The result must be a list of the same length whose tensors keep their shapes and dtypes:
    a generator that changes the signature tests a different problem.
    """
    generators = getattr(task, "VALUE_VARIANTS", None)
    if not isinstance(generators, dict) or not callable(generators.get(name)):
        raise TaskValueError(
            f"the task has no callable VALUE_VARIANTS[{name!r}]; it declares "
            f"{sorted(generators) if isinstance(generators, dict) else 'none'}"
        )
    generator = torch.Generator().manual_seed(seed)
    produced = generators[name](
        [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], generator
    )
    if not isinstance(produced, (list, tuple)) or len(produced) != len(inputs):
        raise TaskValueError(
            f"VALUE_VARIANTS[{name!r}] returned {type(produced).__name__} of length "
            f"{len(produced) if isinstance(produced, (list, tuple)) else '-'}; it must return a "
            f"list of {len(inputs)} inputs, like get_inputs()"
        )
    for index, (before, after) in enumerate(zip(inputs, produced)):
        if isinstance(before, torch.Tensor) and (
            not isinstance(after, torch.Tensor)
            or after.shape != before.shape
            or after.dtype != before.dtype
        ):
            got = (
                f"{tuple(after.shape)} {after.dtype}"
                if isinstance(after, torch.Tensor)
                else type(after).__name__
            )
            raise TaskValueError(
                f"VALUE_VARIANTS[{name!r}] changed input {index} from {tuple(before.shape)} "
                f"{before.dtype} to {got}; keep every input's shape and dtype (change values "
                "only)"
            )
    return [
        after.to(before.device) if isinstance(after, torch.Tensor) else after
        for before, after in zip(inputs, produced)
    ]


class TaskValueError(ValueError):
    """A task's ``VALUE_VARIANTS`` generator is missing or returned inputs of another shape."""


def _plant_special(x: torch.Tensor, seed: int) -> torch.Tensor:
    x = x.clone()
    flat = x.view(-1)
    n = flat.numel()
    if n == 0:
        return x
    generator = torch.Generator().manual_seed(seed)
    positions = torch.randperm(n, generator=generator)[:3].tolist()
    for position, value in zip(positions, (float("inf"), float("nan"), float("-inf"))):
        flat[position] = value
    return x


def _poison_value(dtype: torch.dtype) -> float | int | bool:
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def _relayout(x: Any, layout: LayoutTransform) -> Any:
    """Same values, different memory layout. Gaps in the storage hold poison values, so a
    kernel that assumes contiguity reads NaN (or an out-of-range index) instead of data."""
    if not isinstance(x, torch.Tensor) or x.numel() == 0:
        return x
    poison = _poison_value(x.dtype)
    if layout is LayoutTransform.STORAGE_OFFSET:
        storage = torch.full(
            (x.numel() + STORAGE_OFFSET_ELEMENTS,), poison, dtype=x.dtype, device=x.device
        )
        view = storage[STORAGE_OFFSET_ELEMENTS:].view(x.shape)
        view.copy_(x)
        return view
    if x.dim() >= 2 and x.shape[-1] > 1 and x.shape[-2] > 1:
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if x.dim() == 0:
        return x
    wide = torch.full((*x.shape[:-1], 2 * x.shape[-1]), poison, dtype=x.dtype, device=x.device)
    view = wide[..., ::2]
    view.copy_(x)
    return view
