# kernelproof-reference: rowsum/reference.py
# kernelproof-expect: incorrect
"""A row sum that is wrong on a random 1 call in 50 (it drops the last column).

A matrix of a few dozen cells, plus one verified output per timing round, sees a fault
this rare too seldom; comparing every timed output (the reference's outputs for the timing
inputs are known) sees it in a few hundred calls.
"""

import random

import torch
import torch.nn as nn

#: One call in this many is wrong.
FAULT_EVERY = 50


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.draw = random.Random()  # seeded from the OS: not the harness's seeds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
        if self.draw.randrange(FAULT_EVERY) == 0:
            ones[-1] = 0.0
        return x @ ones
