"""Honest PyTorch LayerNorm rewrite that works in place on its own temporaries.

The mean and variance come from one ``var_mean`` call; the centred copy of the input is then
scaled, multiplied by the weight and shifted by the bias in place, so no further temporaries
are allocated. The input itself is never written.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dims = tuple(range(x.dim() - self.ln.weight.dim(), x.dim()))
        var, mean = torch.var_mean(x, dim=dims, keepdim=True, correction=0)
        out = x - mean  # a new tensor: the temporaries below are ours to overwrite
        out.mul_(var.add_(self.ln.eps).rsqrt_())
        out.mul_(self.ln.weight.detach()).add_(self.ln.bias.detach())
        return out
