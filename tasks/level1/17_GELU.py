"""Exact (erf) GELU applied elementwise to a (batch_size, dim) activation.

Memory-bound: about 10 FLOPs (an erf) per element against 8 bytes read and written, ~1 FLOP/byte.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 1024
# default forward: ~5.4 ms on the 2-vCPU dev machine

#: A single element, odd/prime sizes, and a wider activation.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=13),
    dict(batch_size=127, dim=1021),
    dict(batch_size=1024, dim=6144),
]


class Model(nn.Module):
    """``F.gelu(x)`` with the exact erf formulation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    # Pre-activations of an MLP: wide enough that both the linear and the curved part matter.
    return [torch.randn(batch_size, dim) * 2.0]


def get_init_inputs():
    return []
