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
        inputs = _transform_values(inputs, variant.value, variant.seed)
    if variant.layout is not None:
        inputs = [_relayout(x, variant.layout) for x in inputs]
    return inputs


def oracle_inputs(inputs: list[Any]) -> list[Any]:
    """Float64 copies of the floating inputs, for the oracle. Other inputs pass unchanged."""
    return [
        x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
        for x in inputs
    ]


def _place(x: Any, device: str, dtype: torch.dtype | None) -> Any:
    if not isinstance(x, torch.Tensor):
        return x
    if dtype is not None and x.is_floating_point():
        x = x.to(dtype)
    return x.to(device)


def _transform_values(inputs: list[Any], transform: ValueTransform, seed: int) -> list[Any]:
    floating = [
        i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()
    ]
    out = list(inputs)
    if transform is ValueTransform.SPECIAL:
        if floating:
            out[floating[0]] = _plant_special(out[floating[0]], seed)
        return out
    for i in floating:
        x = out[i]
        if transform is ValueTransform.SCALE_UP:
            out[i] = x * 1e3
        elif transform is ValueTransform.SCALE_DOWN:
            out[i] = x * 1e-3
        elif transform is ValueTransform.SHIFT:
            out[i] = x + SHIFT_AMOUNT
    return out


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
    wide = torch.full(
        (*x.shape[:-1], 2 * x.shape[-1]), poison, dtype=x.dtype, device=x.device
    )
    view = wide[..., ::2]
    view.copy_(x)
    return view
