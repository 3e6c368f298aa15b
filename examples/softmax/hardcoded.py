# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Shape-hard-coded softmax: the normaliser assumes the default row length of 4096.

The row sum is computed as a mean and scaled back by a constant copied from the reference's
default ``dim``. At the default shape this is exact up to rounding; at any other ``dim`` every
output is off by the factor ``dim / 4096``, silently.
"""

import torch
import torch.nn as nn

#: The reference's default ``dim``, baked in.
_ROW_LENGTH = 4096


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        row_sum = e.mean(dim=-1, keepdim=True) * _ROW_LENGTH
        return e / row_sum
