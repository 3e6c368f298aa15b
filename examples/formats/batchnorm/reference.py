"""KernelBench-style BatchNorm2d, as published: the module stays in its default training mode,
so it normalises with the batch's own mean and variance (and updates its running stats)."""

import torch
import torch.nn as nn

batch_size = 16
features = 8
dim1 = 32
dim2 = 32


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
