# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: accumulates in float64 and rounds once: more accurate than the reference."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.double().sum(-1) * self.scale).to(x.dtype)
