"""KernelBench level1/38_L1Norm_, sizes reduced for a 2-core CPU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs L1 normalization.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.mean(torch.abs(x), dim=1, keepdim=True)


batch_size = 32
dim = 1023


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
