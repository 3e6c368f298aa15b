"""1-D convolution with "same" padding: nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2).

Compute-bound: each output element costs 2*in_channels*kernel_size FLOPs (640 here) while inputs and weights are reused across outputs.
"""

import torch
import torch.nn as nn

batch_size = 8
in_channels = 64
out_channels = 128
length = 1024
kernel_size = 5
# default forward: ~10 ms on the 2-vCPU dev machine

#: Pointwise (kernel 1) on one sample, odd/prime sizes with an even kernel (output one longer),
#: and a longer sequence with a wider kernel.
SHAPES = [
    dict(batch_size=1, in_channels=1, out_channels=1, length=1, kernel_size=1),
    dict(batch_size=3, in_channels=5, out_channels=7, length=37, kernel_size=4),
    dict(batch_size=5, in_channels=31, out_channels=61, length=1009, kernel_size=7),
    dict(batch_size=8, in_channels=64, out_channels=128, length=3000, kernel_size=9),
]


class Model(nn.Module):
    """A 1-D convolution with bias, stride 1 and zero padding of ``kernel_size // 2``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
