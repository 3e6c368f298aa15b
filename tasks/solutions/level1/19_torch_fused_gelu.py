"""Honest PyTorch rewrite of the written-out tanh GELU: one fused ``F.gelu(approximate="tanh")``.

The reference spells the formula ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` as
eight eager ops, each a full pass that reads and writes the tensor. PyTorch's own GELU kernel
with ``approximate="tanh"`` computes exactly this formula in one vectorised pass, so the work
is the same and only the redundant memory traffic is skipped.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")
