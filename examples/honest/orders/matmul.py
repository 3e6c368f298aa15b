# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: the row sum as a GEMM with a column of ones (BLAS blocks and orders it its own way)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ x.new_ones(x.shape[-1], 1)).squeeze(-1) * self.scale
