"""Honest matrix-vector product computed in float64 inside and rounded once to float32.

More accurate than the float32 reference: each dot product is accumulated in double.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.double(), B.double()).to(A.dtype)
