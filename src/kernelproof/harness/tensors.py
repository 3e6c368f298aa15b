"""Tensor helpers of the harness: dtypes, modes, the state handed from the reference to the
candidate, the float64 oracle, and how outputs are described and sent."""

from __future__ import annotations

from typing import Any


def torch_dtype(name: str | None) -> Any:
    """The torch dtype named ``name`` (None: the task's own)."""
    import torch

    return None if name is None else getattr(torch, name)


def working_dtype(inputs: list[Any], dtype: Any) -> Any:
    import torch

    if dtype is not None:
        return dtype
    floating = [x.dtype for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    return floating[0] if floating else None


def synchronize(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def state_tensors(model: Any) -> tuple[list[str], list[Any]]:
    import torch

    if not isinstance(model, torch.nn.Module):
        return [], []
    state = model.state_dict()
    names = [n for n, t in state.items() if isinstance(t, torch.Tensor)]
    return names, [state[n] for n in names]


def load_matching(model: Any, reference_state: dict[str, Any]) -> dict[str, Any]:
    """Copy reference weights into the candidate wherever names and shapes match."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return {
            "copied": [],
            "unmatched_candidate": [],
            "unmatched_reference": list(reference_state),
        }
    own = model.state_dict()
    copied, mismatched = [], []
    with torch.no_grad():
        for name, tensor in own.items():
            source = reference_state.get(name)
            if source is not None and tuple(source.shape) == tuple(tensor.shape):
                tensor.copy_(source.to(device=tensor.device, dtype=tensor.dtype))
                copied.append(name)
            else:
                mismatched.append(name)
    return {
        "copied": copied,
        "unmatched_candidate": mismatched,
        "unmatched_reference": [n for n in reference_state if n not in own],
    }


def apply_mode(model: Any, mode: str) -> None:
    """Put ``model`` in the mode the task asks for. ``as-built`` leaves every submodule as its
    constructor left it: KernelBench never calls ``.eval()``, so its BatchNorm tasks
    normalise with batch statistics (training mode, PyTorch's default)."""
    if mode == "eval":
        model.eval()
    elif mode == "train":
        model.train()


def mode_of(model: Any) -> str:
    """``train``, ``eval`` or ``mixed``: the ``training`` flags of the model's submodules."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return "eval"
    flags = {module.training for module in model.modules()}
    return "mixed" if len(flags) > 1 else ("train" if flags == {True} else "eval")


def describe(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "type": f"{type(value).__module__}.{type(value).__qualname__}",
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "device": value.device.type,
        }
    return {"kind": type(value).__name__, "repr": repr(value)[:200]}


def plain_tensor(value: Any) -> Any:
    import torch

    if type(value) is not torch.Tensor:
        value = torch.Tensor.as_subclass(value, torch.Tensor)
    return value.detach()
