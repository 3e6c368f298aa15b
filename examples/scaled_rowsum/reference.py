"""A scaled row sum: each row of a (batch_size, dim) input summed, times 1.75.

The task of issue 25's load cases (classes 5 and 6): honest rewrites that sum in another order
(a matrix-vector product, three passes over the input, a per-call thread pool, a float64
accumulator) must stay ``verified`` on a busy machine.
"""

import torch
import torch.nn as nn

batch_size = 512
dim = 2048

SCALE = 1.75


class Model(nn.Module):
    """``x.sum(dim=1) * 1.75``."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1) * SCALE


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
