"""Row-wise softmax over the last dimension of a (batch_size, dim) input."""

import torch
import torch.nn as nn

batch_size = 64
dim = 4096

#: Knob settings worth testing besides the default: size 1, odd and prime row lengths.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=127),
    dict(batch_size=8, dim=1000),
    dict(batch_size=17, dim=4099),
]


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
