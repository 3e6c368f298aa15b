"""Honest PyTorch rewrite for level 2, task 7 (conv2d + BatchNorm(eval) + ReLU).

In inference BatchNorm is a per-channel affine map, ``y * s + (beta - mean * s)`` with
``s = gamma / sqrt(var + eps)``, so it folds into the convolution: scale each output channel's
filter by ``s`` and give the convolution the shifted bias. The fold costs
``out_channels * in_channels * k * k`` multiplies per call (computed in ``forward``, so it
always follows the current weights and running statistics); it removes BatchNorm's full pass
over the output, and ReLU runs in place on the convolution's fresh output.

The fold is only valid with running statistics, so training mode raises instead of computing
something else (the task's ``POLICY`` puts models in eval mode).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size,
                              padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            raise RuntimeError("the folded conv-BN needs running statistics: call .eval()")
        bn = self.bn
        scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
        weight = self.conv.weight * scale.reshape(-1, 1, 1, 1)
        bias = bn.bias - bn.running_mean * scale
        out = torch.nn.functional.conv2d(x, weight, bias, self.conv.stride, self.conv.padding,
                                         self.conv.dilation, self.conv.groups)
        return out.clamp_min_(0.0)
