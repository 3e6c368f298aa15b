# kernelproof-reference: ../../../softmax/reference.py
# kernelproof-expect: verified
"""The honest twin of attack 36b: the same PyTorch softmax, with no helper thread."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
