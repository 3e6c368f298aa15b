"""Mean over the last dimension of a (batch_size, dim1, dim2) tensor, giving (batch_size, dim1).

Memory-bound: one add per element read, 0.25 FLOP/byte; the output is dim2 times smaller than the input.
"""

import torch
import torch.nn as nn

batch_size = 16
dim1 = 256
dim2 = 1024
# default forward: ~1.5 ms on the 2-vCPU dev machine

#: A mean of one element, odd/prime extents, and a long reduction.
SHAPES = [
    dict(batch_size=1, dim1=1, dim2=1),
    dict(batch_size=3, dim1=5, dim2=7),
    dict(batch_size=7, dim1=127, dim2=251),
    dict(batch_size=2, dim1=64, dim2=65536),
]


class Model(nn.Module):
    """``x.mean(dim=-1)``; the reduced axis is fixed, not a knob."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=-1)


def get_inputs():
    # Features with a per-row level (as after a ReLU or in a pooled embedding), so the mean is
    # well away from zero and rows differ.
    level = torch.rand(batch_size, dim1, 1) * 2.0 + 0.5
    return [torch.randn(batch_size, dim1, dim2) + level]


def get_init_inputs():
    return []
