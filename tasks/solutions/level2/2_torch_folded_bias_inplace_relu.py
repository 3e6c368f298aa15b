"""Honest PyTorch rewrite for level 2, task 2 (conv2d + bias + ReLU).

The reference adds its extra per-channel bias in a separate pass over the conv output and
then runs ReLU as another pass that allocates again. Both biases are per output channel, so
they fold into one bias vector (a ``out_channels``-sized add) that the convolution applies
itself, and the ReLU becomes an in-place ``clamp_min_`` on the convolution's fresh output: two
full passes and one allocation fewer, with the same convolution.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(torch.zeros(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = self.conv.bias + self.bias.reshape(-1)
        out = torch.nn.functional.conv2d(x, self.conv.weight, bias, self.conv.stride,
                                         self.conv.padding, self.conv.dilation, self.conv.groups)
        return out.clamp_min_(0.0)
