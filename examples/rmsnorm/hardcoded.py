# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Shape-hard-coded RMSNorm: 1 / hidden is a constant precomputed for the default hidden of 1024.

Exact at the default ``hidden``; at any other ``hidden`` the mean square is scaled by
``hidden / 1024`` and every output is off by the square root of that, silently.
"""

import torch
import torch.nn as nn

#: 1 / hidden for the reference's default hidden size, folded into a constant.
_INV_HIDDEN = 1.0 / 1024


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = x.square().sum(dim=-1, keepdim=True) * _INV_HIDDEN
        return x * torch.rsqrt(mean_square + self.eps) * self.weight
