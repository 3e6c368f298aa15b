# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""A softmax that is right for its first calls and 1% off from then on: a time bomb.

Verification sees a few dozen calls per model and passes it. In production the guard's shadow
checks must catch it and roll back (``tests/dispatch``, ``benchmarks/guard_overhead.py``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    #: Calls answered right before the bomb goes off; far more than verification makes.
    goes_wrong_after = 500

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        out = e / e.sum(dim=-1, keepdim=True)
        if self.calls > self.goes_wrong_after:
            out = out * 1.01
        return out
