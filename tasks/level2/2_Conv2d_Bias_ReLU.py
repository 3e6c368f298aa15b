"""2-D convolution, plus a separate per-channel bias, then ReLU, on images of shape
(batch_size, in_channels, height, width); padding keeps the spatial size for odd kernels.

Compute-bound: the convolution does 2*batch*out*in*k*k FLOPs per output pixel against one read
of the input and one write of the output; the bias add and ReLU are two extra elementwise passes.
"""

import torch
import torch.nn as nn

# default forward: ~7 ms on the 2-vCPU dev machine
batch_size = 8
in_channels = 32
out_channels = 64
height = 32
width = 48
kernel_size = 3

#: Knob settings worth testing besides the default: 1x1 everything, odd and prime sizes,
#: a kernel larger than the image's padding, and a larger image.
SHAPES = [
    dict(batch_size=1, in_channels=1, out_channels=1, height=1, width=1, kernel_size=1),
    dict(batch_size=3, in_channels=5, out_channels=7, height=13, width=11, kernel_size=5),
    dict(batch_size=2, in_channels=3, out_channels=17, height=31, width=29, kernel_size=3),
    dict(batch_size=8, in_channels=32, out_channels=64, height=64, width=64, kernel_size=3),
]


class Model(nn.Module):
    """``relu(conv2d(x) + bias)``; the conv has its own bias too, as in KernelBench."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x) + self.bias)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
