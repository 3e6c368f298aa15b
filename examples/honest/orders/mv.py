# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: the row sum as a matrix-vector product with ones (the issue's ``torch.mv(x, ones) * scale``)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mv(x, x.new_ones(x.shape[-1])) * self.scale
