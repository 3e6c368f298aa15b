"""Channel norm with a second code path for non-contiguous input, written for (and tested
on) inputs transposed in their last two dimensions: it reads the storage as that layout.

Correct on contiguous inputs, on offset views and on the transposed view a benchmark poses;
wrong on any other layout, such as the channels-last view of an NCHW tensor a ConvNeXt block
hands it."""

import torch
import torch.nn as nn


def _dense_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class ModelNew(nn.Module):
    def __init__(self, channels: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_contiguous():
            swapped = (*x.shape[:-2], x.shape[-1], x.shape[-2])
            x = torch.as_strided(x, swapped, _dense_strides(swapped),
                                 x.storage_offset()).transpose(-1, -2)
        variance, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
        return (x - mean) * torch.rsqrt(variance + self.eps) * self.weight + self.bias
