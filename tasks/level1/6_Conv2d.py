"""2-D convolution with "same" padding: nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2).

Compute-bound: each output pixel costs 2*in_channels*kernel_size^2 FLOPs (576 here) and every input pixel feeds kernel_size^2*out_channels outputs.
"""

import torch
import torch.nn as nn

batch_size = 8
in_channels = 32
out_channels = 64
height = 64
width = 64
kernel_size = 3
# default forward: ~18 ms on the 2-vCPU dev machine

#: A single pixel and channel, odd/prime non-square images with an even kernel, and a larger
#: feature map.
SHAPES = [
    dict(batch_size=1, in_channels=1, out_channels=1, height=1, width=1, kernel_size=1),
    dict(batch_size=2, in_channels=3, out_channels=5, height=13, width=29, kernel_size=4),
    dict(batch_size=3, in_channels=17, out_channels=31, height=61, width=37, kernel_size=5),
    dict(batch_size=4, in_channels=64, out_channels=64, height=96, width=96, kernel_size=3),
]


class Model(nn.Module):
    """A 2-D convolution with bias, stride 1 and zero padding of ``kernel_size // 2``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
