# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Eval-mode BatchNorm: normalises with the running statistics (mean 0, variance 1 at
construction) instead of the batch's. Right only if the task were in eval mode."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bn = self.bn
        scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
        shift = bn.bias - bn.running_mean * scale
        return x * scale.view(1, -1, 1, 1) + shift.view(1, -1, 1, 1)
