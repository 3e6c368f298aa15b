# kernelproof-reference: ../../../examples/softmax/reference.py
"""Test fixture: correct on each model's first calls, then a cheap wrong answer (HACKS row 10,
batch-and-skip / evaluator mode). Each correctness cell builds its model anew and calls it at
most a handful of times, so only the verification of timed outputs can see the switch."""

import torch
import torch.nn as nn

#: Calls answered honestly per model instance; the correctness matrix of the timing tests
#: (seeds=2, no value/layout variants) makes at most 5 calls on one instance.
HONEST_CALLS = 8


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > HONEST_CALLS:
            return torch.full_like(x, 1.0 / x.shape[-1])
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
