# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest RMSNorm through the vector 2-norm: rms = ||x|| / sqrt(hidden)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # On a strided last dimension vector_norm reduces less accurately (several times the
        # reference's rounding error); a contiguous copy keeps its error at the reference's level.
        x = x.contiguous()
        norm = torch.linalg.vector_norm(x, ord=2, dim=-1, keepdim=True)
        mean_square = norm.square() / x.shape[-1]
        return x / torch.sqrt(mean_square + self.eps) * self.weight
