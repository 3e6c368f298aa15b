"""Sum over the middle dimension of a (batch_size, dim1, dim2) tensor, giving (batch_size, dim2).

Memory-bound: one add per element read, 0.25 FLOP/byte; the output is dim1 times smaller than the input.
"""

import torch
import torch.nn as nn

batch_size = 16
dim1 = 256
dim2 = 1024
# default forward: ~1.2 ms on the 2-vCPU dev machine

#: A sum of one element, odd/prime extents, and a long reduction.
SHAPES = [
    dict(batch_size=1, dim1=1, dim2=1),
    dict(batch_size=3, dim1=5, dim2=7),
    dict(batch_size=7, dim1=251, dim2=127),
    dict(batch_size=4, dim1=4096, dim2=512),
]


class Model(nn.Module):
    """``x.sum(dim=1)``; the reduced axis is fixed, not a knob."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return []
