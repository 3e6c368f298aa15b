# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""A softmax that, after its first calls, zeroes its input on every third call (scratch
space reused as if the input were its own). Its outputs stay right; the caller's tensor is
destroyed.

Verification's input probe would catch it on any call; it only starts later, so the guard's
shadow checks must (they save the inputs before the candidate runs, and restore them).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    #: Calls made honestly before the mutations start; more than verification makes.
    mutates_after = 500

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        out = e / e.sum(dim=-1, keepdim=True)
        if self.calls > self.mutates_after and self.calls % 3 == 0:
            x.zero_()
        return out
