"""A tiny element-wise task, x * scale + y, sized for Triton's interpreter (TRITON_INTERPRET=1).

The row length is deliberately not a power of two, so a block kernel needs its mask at the
default shape already.
"""

import torch
import torch.nn as nn

batch_size = 8
dim = 100

#: Scalar constructor argument. A float, so it is not mistaken for a shape knob.
scale = 1.5

#: Knob settings worth testing besides the default: size 1, odd and prime sizes.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=7),
    dict(batch_size=5, dim=131),
    dict(batch_size=2, dim=257),
]


class Model(nn.Module):
    """Scale one input and add the other."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * self.scale + y


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale]
