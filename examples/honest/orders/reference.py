"""A scaled row sum: ``x.sum(-1) * scale``, x of shape (batch_size, dim).

The reference for honest rewrites that sum in another order (issue 25, class 5): torch's
reduction is a cascade of partial sums, nearly exact on some data (one value repeated along
a row), so any other honest order errs many times its own error there.
"""

import torch
import torch.nn as nn

batch_size = 16
dim = 16384

SHAPES = [
    dict(batch_size=1, dim=16384),
    dict(batch_size=3, dim=17),
    dict(batch_size=5, dim=4099),
]


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1) * self.scale


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
