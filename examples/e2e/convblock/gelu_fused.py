"""The tanh GELU as one fused PyTorch op instead of eight element-wise ones: a real speedup
in isolation, on a module that takes a small share of the block's time."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")
