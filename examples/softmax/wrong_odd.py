# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Subtly wrong softmax: the row sum is reduced two elements at a time and the odd one out is lost.

Correct whenever ``dim`` is even. When ``dim`` is odd the last element of each row is left out of
the normaliser, so every output is slightly too large (and a row of length 1 divides by zero).
It never raises: this is the silent kind of bug kernelproof's odd-size variants must catch.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        paired = e.shape[-1] // 2 * 2
        # Pairwise reduction: (..., dim // 2, 2). The tail element of an odd row is dropped.
        pairs = e[..., :paired].reshape(*e.shape[:-1], paired // 2, 2)
        row_sum = pairs.sum(dim=-1).sum(dim=-1, keepdim=True)
        return e / row_sum
