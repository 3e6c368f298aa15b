"""A ConvNeXt-style block: the host that will run a channel norm and a GELU kernel.

A stem convolution, a depthwise 7x7 convolution, then the channel MLP on the channels-last
view: ``x.permute(0, 2, 3, 1)`` is not a copy, so the norm receives a tensor whose channels
are strided by H*W, a layout a benchmark of the norm alone never poses.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
channels = 96
size = 16


class ChannelNorm(nn.Module):
    """LayerNorm over the last (channel) dimension."""

    def __init__(self, channels: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


class TanhGELU(nn.Module):
    """GELU, tanh approximation, written out as the paper gives it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x.pow(3))))


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.stem = nn.Conv2d(channels, channels, 3, padding=1)
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = ChannelNorm(channels)
        self.up = nn.Linear(channels, 4 * channels)
        self.act = TanhGELU()
        self.down = nn.Linear(4 * channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        h = self.dwconv(x).permute(0, 2, 3, 1)  # channels last, as a view
        h = self.down(self.act(self.up(self.norm(h))))
        return x + h.permute(0, 3, 1, 2)


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels]
