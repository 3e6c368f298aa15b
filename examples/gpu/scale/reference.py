"""Doubles a flat float16 vector: the smallest task whose one knob sizes a single tensor.

On a GPU the matrix adds a variant whose tensor passes 2**31 elements (4 GiB of float16 in and
out), where a kernel that indexes with a 32-bit int wraps. Used by ``scripts/gpu_selfcheck.py``.
"""

import torch
import torch.nn as nn

n = 1 << 20


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def get_inputs():
    return [torch.randn(n, dtype=torch.float16)]


def get_init_inputs():
    return []
