# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: the row sum through einsum with a ones vector."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bi,i->b", x, x.new_ones(x.shape[-1])) * self.scale
