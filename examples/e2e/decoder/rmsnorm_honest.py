"""Honest RMSNorm for the decoder: the mean square through a dot product of each row with
itself, one reduction instead of a square and a mean."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        mean_square = torch.linalg.vecdot(x, x).unsqueeze(-1) / x.shape[-1]
        return x * torch.rsqrt(mean_square + self.eps) * self.weight
