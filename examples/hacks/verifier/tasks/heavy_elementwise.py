"""An element-wise task that costs many operations per element: each output element depends on
its own input element only, through a chain of transcendental functions.

The target of ``38_memoise_pool_blocks.py``: an element-wise op whose inputs are built by moving
blocks of earlier inputs around can be answered by replaying earlier outputs, block by block.
"""

import torch
import torch.nn as nn

batch_size = 256
dim = 2048

SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=7),
    dict(batch_size=17, dim=257),
]


class Model(nn.Module):
    """A smooth, expensive element-wise function."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.erf(x) * torch.sin(3.0 * x) + torch.log1p(x * x)
        return torch.tanh(y) * torch.exp(-0.1 * x * x) + torch.atan(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
