"""2-D max pooling, nn.MaxPool2d(kernel_size, stride, padding=kernel_size // 2), of a (batch_size, channels, height, width) map.

Memory-bound: kernel_size^2 comparisons per output but only ~0.5 op per input byte at stride 2; the input is read once.
"""

import torch
import torch.nn as nn

batch_size = 8
channels = 64
height = 64
width = 64
kernel_size = 3
stride = 2
# default forward: ~18 ms on the 2-vCPU dev machine

#: A 1x1 map with a 1x1 window, odd/prime maps with an even window or a stride larger than the
#: window, and a larger map.
SHAPES = [
    dict(batch_size=1, channels=1, height=1, width=1, kernel_size=1, stride=1),
    dict(batch_size=2, channels=3, height=7, width=13, kernel_size=4, stride=3),
    dict(batch_size=3, channels=17, height=61, width=37, kernel_size=2, stride=5),
    dict(batch_size=4, channels=64, height=128, width=96, kernel_size=5, stride=2),
]


class Model(nn.Module):
    """Max pooling with implicit -inf padding of ``kernel_size // 2`` on each side."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size, stride=stride, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride]
