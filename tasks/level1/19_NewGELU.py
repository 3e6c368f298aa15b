"""The tanh approximation of GELU written out as a chain of eager ops (GPT-2's "new GELU"), on (batch_size, dim).

Memory-bound: ~15 FLOPs per element, but eager PyTorch runs it as 8 separate passes that each read and write the whole tensor.
"""

import math

import torch
import torch.nn as nn

batch_size = 2048
dim = 1024
# default forward: ~15 ms on the 2-vCPU dev machine

#: A single element, odd/prime sizes, and a wider activation.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=7, dim=3),
    dict(batch_size=129, dim=1031),
    dict(batch_size=512, dim=8192),
]


class Model(nn.Module):
    """0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), one eager op at a time."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0]


def get_init_inputs():
    return []
