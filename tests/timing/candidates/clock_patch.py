# kernelproof-reference: ../../../examples/softmax/reference.py
"""Test fixture: correct outputs, but it rewires the harness's own clock so that every timed
call looks 100x shorter (HACKS row 8, aimed at kernelproof itself)."""

import sys

import torch
import torch.nn as nn

_timer = sys.modules.get("kernelproof.timing.call_timer")
if _timer is not None:
    _real = _timer._clock_ns
    _start = _real()
    _timer._clock_ns = lambda: _start + (_real() - _start) // 100


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = x.amax(dim=-1, keepdim=True)
        e = (x - m).exp()
        return e / e.sum(dim=-1, keepdim=True)
