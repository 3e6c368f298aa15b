"""A task whose ``forward`` hard-codes float32 (a mask built with ``dtype=torch.float32``): it
cannot run in float64, so there is no oracle; kernelproof compares with the reference in its
own dtype, with a wider tolerance, and says so."""

import torch
import torch.nn as nn

batch_size = 8
features = 64


class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.proj = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.linspace(0.5, 1.5, x.shape[-1], dtype=torch.float32)
        return self.proj(x * scale) @ torch.eye(x.shape[-1], dtype=torch.float32)


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
