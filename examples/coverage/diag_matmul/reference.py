"""A diagonal matrix times a dense one, written the wasteful way: ``torch.diag(a) @ B``.

The reference does 2 n^3 FLOPs; an honest candidate scales B's rows by a in n^2 multiplies.
Its time is far below the reference's FLOPs at peak, which bind only the reference's algorithm:
the floor that may make a time suspect is reading a and B and writing the output.
"""

import torch
import torch.nn as nn

n = 1024


class Model(nn.Module):
    """``diag(a) @ B``."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.diag(a) @ b


def get_inputs():
    return [torch.randn(n), torch.randn(n, n)]


def get_init_inputs():
    return []
