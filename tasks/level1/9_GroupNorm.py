"""Group normalisation of a (batch_size, num_groups * channels_per_group, height, width) feature map, with learned affine.

Memory-bound: about 8 FLOPs per element against 8 bytes read and written, ~1 FLOP/byte.
"""

import torch
import torch.nn as nn

batch_size = 8
num_groups = 8
channels_per_group = 8
height = 64
width = 64
# default forward: ~1.7 ms on the 2-vCPU dev machine

#: One channel of two pixels (GroupNorm rejects a single value per group), odd/prime group sizes and images, and more channels per group.
SHAPES = [
    dict(batch_size=1, num_groups=1, channels_per_group=1, height=1, width=2),
    dict(batch_size=3, num_groups=3, channels_per_group=5, height=7, width=11),
    dict(batch_size=2, num_groups=7, channels_per_group=3, height=31, width=37),
    dict(batch_size=4, num_groups=32, channels_per_group=4, height=64, width=64),
]


class Model(nn.Module):
    """``nn.GroupNorm``; weight and bias are drawn around (1, 0) so ignoring them fails."""

    def __init__(self, num_groups: int, num_channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, num_channels, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.2)
            self.norm.bias.normal_(0.0, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    channels = num_groups * channels_per_group
    # Post-activation-like maps: a per-channel offset and scale, so statistics differ by group.
    offset = torch.randn(1, channels, 1, 1)
    scale = torch.rand(1, channels, 1, 1) + 0.5
    return [torch.randn(batch_size, channels, height, width) * scale + offset]


def get_init_inputs():
    return [num_groups, num_groups * channels_per_group]
