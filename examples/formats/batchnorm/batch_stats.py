# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest training-mode BatchNorm written out: normalise with the batch's biased variance,
then scale and shift by the affine parameters (copied from the reference by name)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=(0, 2, 3), keepdim=True)
        var = (x - mean).square().mean(dim=(0, 2, 3), keepdim=True)
        scale = self.bn.weight.view(1, -1, 1, 1) * torch.rsqrt(var + self.bn.eps)
        return (x - mean) * scale + self.bn.bias.view(1, -1, 1, 1)
