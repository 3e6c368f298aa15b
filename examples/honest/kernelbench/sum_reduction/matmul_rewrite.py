"""Honest rewrite of the sum as a matrix product with a vector of ones.

The reduced dimension is moved last and the sum becomes ``x @ ones``, which runs on the BLAS
GEMV kernel: a different summation order from ``torch.sum``, equally correct.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        moved = x.movedim(dim, -1)
        ones = torch.ones(moved.shape[-1], 1, dtype=x.dtype)
        return (moved @ ones).squeeze(-1).unsqueeze(dim)
