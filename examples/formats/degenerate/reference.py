"""A degenerate task, as published: a softmax over a dimension of size 1. Every output is 1.0
whatever the input, so any candidate returning ones passes its checks."""

import torch
import torch.nn as nn

batch_size = 16
features = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, 1, features)]


def get_init_inputs():
    return []
