# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: blocked summation: sums of 64-element blocks, then a left-to-right sum of the
block sums (a tiled kernel's order)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = x.shape[-1]
        pad = (-dim) % 64
        padded = torch.nn.functional.pad(x, (0, pad))
        blocks = padded.reshape(*x.shape[:-1], -1, 64).sum(-1)
        return blocks.cumsum(-1)[..., -1] * self.scale
