"""A damped row-wise softmax, softmax(x, -1) * 1e-5: every true output is tiny (about 1e-8).

This task exists to show why a fixed absolute tolerance is not a correctness check. With
KernelBench's ``atol=1e-2``, a candidate that returns zeros (or any constant below 1e-2) passes,
because every output is a million times smaller than the tolerance. kernelproof's scale-aware
comparison against a float64 oracle rejects it (HACKS row 12; ``examples/hacks/12_degenerate_zeros.py``).
"""

import torch
import torch.nn as nn

batch_size = 16
dim = 1024

#: Damping factor. A float, so it is not mistaken for a shape knob.
scale = 1e-5

#: Knob settings worth testing besides the default: size 1, odd and prime row lengths.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=127),
    dict(batch_size=5, dim=1031),
]


class Model(nn.Module):
    """Softmax over the last dimension, scaled by a small constant."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1) * self.scale


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale]
