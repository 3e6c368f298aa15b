# kernelproof-reference: ../tiny_outputs/reference.py
# kernelproof-expect: incorrect
"""Degenerate output: returns zeros for a task whose true outputs are all about 1e-8.

HACKS row 12. The task's outputs are a million times smaller than KernelBench's ``atol=1e-2``,
so ``torch.zeros_like`` passes a fixed-tolerance check on every input, at any speed.

What catches it: the tolerance is scale-aware. The candidate's error against the float64
oracle is 100% of the output's size, against the reference's ~1e-7 (``correctness``,
``incorrect``). Under ``--atol 1e-2 --rtol 1e-2`` the same candidate is accepted, which is why
the task adequacy audit feeds a zeros mutant through the comparator and names a task degenerate
when it is accepted.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
