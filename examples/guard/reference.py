"""Row-wise softmax over a small (batch_size, dim) input: the task the guard examples ship.

Small on purpose: a serving loop calls it thousands of times in the guard's tests and
benchmark.
"""

import torch
import torch.nn as nn

batch_size = 64
dim = 256


class Model(nn.Module):
    """Softmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
