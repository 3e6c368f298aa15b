# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest linear + ReLU, written out as a matrix product, a bias add and a clamp.

The submodule keeps the reference's name ``linear`` so that the harness copies its weight and
bias into this model.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.linear.weight.T + self.linear.bias
        return y.clamp_min(0.0)
