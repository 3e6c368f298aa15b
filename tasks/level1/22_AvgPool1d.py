"""1-D average pooling, nn.AvgPool1d(kernel_size, stride, padding=kernel_size // 2), of a (batch_size, channels, length) signal.

Memory-bound: kernel_size adds per output, ~0.5 FLOP per input byte at kernel 8 / stride 4; the input is read once.
"""

import torch
import torch.nn as nn

batch_size = 16
channels = 64
length = 8192
kernel_size = 8
stride = 4
# default forward: ~22 ms on the 2-vCPU dev machine

#: A one-sample signal with a 1-wide window, odd/prime lengths with odd windows or a stride
#: beyond the window, and a longer signal.
SHAPES = [
    dict(batch_size=1, channels=1, length=1, kernel_size=1, stride=1),
    dict(batch_size=3, channels=5, length=29, kernel_size=3, stride=2),
    dict(batch_size=7, channels=13, length=1009, kernel_size=5, stride=7),
    dict(batch_size=4, channels=64, length=32768, kernel_size=16, stride=8),
]


class Model(nn.Module):
    """Average pooling with zero padding of ``kernel_size // 2`` counted in the average."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size, stride=stride, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    # A signal with slow drift plus noise, so windows have distinct, non-zero means.
    drift = torch.randn(batch_size, channels, 1) * 2.0
    return [torch.randn(batch_size, channels, length) + drift]


def get_init_inputs():
    return [kernel_size, stride]
