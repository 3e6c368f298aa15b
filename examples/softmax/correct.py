# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest softmax, written out: subtract the row maximum, exponentiate, normalise by the row sum."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Subtracting the maximum keeps exp() from overflowing on large inputs.
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        return e / e.sum(dim=-1, keepdim=True)
