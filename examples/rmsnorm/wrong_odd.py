# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Subtly wrong RMSNorm: squares are summed in pairs and an odd last element is dropped.

Correct whenever ``hidden`` is even. When ``hidden`` is odd the last element of each row is missing
from the mean square (with ``hidden == 1`` it is missing entirely). It never raises.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = x.shape[-1]
        paired = hidden // 2 * 2
        # Vectorised two-wide loads: (..., hidden // 2, 2); the tail of an odd row is never loaded.
        pairs = x[..., :paired].reshape(*x.shape[:-1], paired // 2, 2)
        sum_square = pairs.square().sum(dim=-1).sum(dim=-1, keepdim=True)
        return x * torch.rsqrt(sum_square / hidden + self.eps) * self.weight
