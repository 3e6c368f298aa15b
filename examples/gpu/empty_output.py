# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""HACKS row 4 on CUDA: returns an uninitialised ``empty_like`` and computes nothing.

On a GPU the caching allocator hands back a block that recently held a softmax of similar
inputs, which can pass a loose check. kernelproof poisons the allocator's free blocks with NaN
before each call, and the reference's outputs never exist in this process.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 1:
            torch.softmax(x, dim=-1)  # leave a plausible answer in the allocator's free list
        return torch.empty_like(x)
