"""1-D convolution, GroupNorm, then SiLU, on sequences of shape
(batch_size, in_channels, length): the conv block of audio and diffusion U-Net models.
The output channels are ``groups * channels_per_group``, so any knob values are valid.

Compute-bound: the convolution does 2*in_channels*kernel_size FLOPs per output element;
GroupNorm (a reduction over each group) and SiLU are memory-bound passes over the output.
"""

import torch
import torch.nn as nn

# default forward: ~6 ms on the 2-vCPU dev machine
batch_size = 8
in_channels = 64
groups = 8
channels_per_group = 8
length = 1024
kernel_size = 3

#: Knob settings worth testing besides the default: one of everything, odd and prime sizes,
#: a wide kernel, and a longer sequence.
SHAPES = [
    dict(batch_size=1, in_channels=1, groups=1, channels_per_group=1, length=2, kernel_size=1),
    dict(batch_size=3, in_channels=5, groups=3, channels_per_group=5, length=37, kernel_size=5),
    dict(batch_size=2, in_channels=7, groups=7, channels_per_group=2, length=251, kernel_size=3),
    dict(batch_size=8, in_channels=64, groups=8, channels_per_group=16, length=2048,
         kernel_size=3),
]


class Model(nn.Module):
    """``silu(group_norm(conv1d(x)))`` with a random GroupNorm affine."""

    def __init__(self, in_channels: int, groups: int, channels_per_group: int,
                 kernel_size: int):
        super().__init__()
        out_channels = groups * channels_per_group
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.norm = nn.GroupNorm(groups, out_channels)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, groups, channels_per_group, kernel_size]
