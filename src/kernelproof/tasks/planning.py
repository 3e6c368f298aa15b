"""Sizing a task before running it: bytes and FLOPs of one call, computed on the meta device.

KernelBench tasks are sized for a datacenter GPU (level-1 softmax is 4096 x 393216 floats);
the controller uses these estimates to scale knobs down to what the machine can hold.
"""

from __future__ import annotations

import types
from typing import Any

import torch


def estimate_call(task: types.ModuleType, dtype: torch.dtype | None) -> dict[str, Any]:
    """Bytes (inputs + parameters + outputs) and matmul/conv FLOPs of one forward call.

    Runs the task on the meta device, so nothing is allocated. Returns ``ok=False`` with the
    error when the task cannot run on meta (an op without a meta kernel, a ``.cuda()`` call).
    """
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with torch.device("meta"):
            inputs = list(task.get_inputs())
            model = task.Model(*task.get_init_inputs())
            if dtype is not None:
                inputs = [
                    x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                    for x in inputs
                ]
                if isinstance(model, torch.nn.Module):
                    model = model.to(dtype)
            counter = FlopCounterMode(display=False)
            with counter, torch.no_grad():
                raw = model(*inputs)
    except Exception as exc:  # noqa: BLE001 - meta support is best effort
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    outputs = list(raw) if isinstance(raw, (tuple, list)) else [raw]
    params = list(model.state_dict().values()) if isinstance(model, torch.nn.Module) else []
    return {
        "ok": True,
        "bytes": _nbytes(inputs) + _nbytes(params) + _nbytes(outputs),
        "input_bytes": _nbytes(inputs),
        "output_elements": sum(o.numel() for o in outputs if isinstance(o, torch.Tensor)),
        "largest_tensor_elements": max(
            (v.numel() for v in inputs + outputs if isinstance(v, torch.Tensor)), default=0
        ),
        "flops": float(counter.get_total_flops()),
    }


def _nbytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
