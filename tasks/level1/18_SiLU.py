"""SiLU (swish), x * sigmoid(x), applied elementwise to a (batch_size, dim) activation.

Memory-bound: about 5 FLOPs (an exp and a division) per element against 8 bytes read and written, <1 FLOP/byte.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 1024
# default forward: ~4.7 ms on the 2-vCPU dev machine

#: A single element, odd/prime sizes, and a wider activation.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=5, dim=11),
    dict(batch_size=131, dim=1019),
    dict(batch_size=1024, dim=6144),
]


class Model(nn.Module):
    """``F.silu(x)``."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


def get_inputs():
    return [torch.randn(batch_size, dim) * 2.0]


def get_init_inputs():
    return []
