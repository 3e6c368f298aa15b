"""Mish, x * tanh(softplus(x)), applied elementwise to a (batch_size, channels, length) activation.

Memory-bound: ~20 FLOPs (exp, log, tanh) per element against 8 bytes read and written, ~2 FLOP/byte, in 3 eager passes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
channels = 256
length = 512
# default forward: ~16 ms on the 2-vCPU dev machine

#: A single element, odd/prime sizes, and a longer sequence.
SHAPES = [
    dict(batch_size=1, channels=1, length=1),
    dict(batch_size=3, channels=5, length=9),
    dict(batch_size=7, channels=61, length=509),
    dict(batch_size=4, channels=128, length=8192),
]


class Model(nn.Module):
    """Mish written with eager ops: ``x * tanh(softplus(x))`` (softplus with its default threshold 20)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.tanh(F.softplus(x))


def get_inputs():
    return [torch.randn(batch_size, channels, length) * 2.0]


def get_init_inputs():
    return []
