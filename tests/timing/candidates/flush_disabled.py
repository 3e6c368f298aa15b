# kernelproof-reference: ../../../examples/softmax/reference.py
"""Test fixture: correct outputs, but it swaps the harness's cache evictor for one that evicts
nothing, so its timed calls would run on warm caches (HACKS row 25, on CPU)."""

import sys

import torch
import torch.nn as nn

_timer = sys.modules.get("kernelproof.timing.call_timer")
if _timer is not None:

    class _Idle:
        def evict(self, tensors):
            return 0

    _timer._line_evictor = _Idle()


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
