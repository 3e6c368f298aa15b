"""Sum of each row. Memory-bound: every element is read once.

A kernel tiled for the benchmark's row length (1000, 2000 at 2x) may never combine the
partial sums of several tiles; only rows of 4x and more show it.
"""

import torch
import torch.nn as nn

batch_size = 16
dim = 1000


class Model(nn.Module):
    """Row sums over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
