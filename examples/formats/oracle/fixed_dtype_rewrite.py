# kernelproof-reference: fixed_dtype.py
# kernelproof-expect: verified
"""An honest rewrite of the fixed-dtype task: the scale folded into the weight's columns."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.proj = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.linspace(0.5, 1.5, x.shape[-1], dtype=x.dtype)
        return torch.addmm(self.proj.bias, x, (self.proj.weight * scale).t())
