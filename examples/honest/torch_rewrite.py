# kernelproof-reference: ../linear_relu/reference.py
# kernelproof-expect: verified
"""Honest pure-PyTorch rewrite of linear + ReLU: an einsum contraction, a bias add, a maximum.

It runs different aten ops from the reference (no addmm, no relu), so the op audit sees a
rewrite, not a passthrough. ``torch.maximum`` propagates NaN as ReLU does.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        # Same submodule name as the reference, so the harness copies its weight and bias.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.einsum("...i,oi->...o", x, self.linear.weight) + self.linear.bias
        return torch.maximum(y, y.new_zeros(()))
