"""Honest PyTorch rewrite of the middle-axis sum: a product with a vector of ones.

``x.sum(dim=1)`` for x of shape (B, D1, D2) equals ``ones(D1) @ x``: matmul broadcasts the
vector over the batch and contracts it with the middle axis, so BLAS does the reduction. A
different op from the reference's ``sum``; NaN and Inf reach the output the same way (``1 *
nan`` is NaN, ``inf + -inf`` is NaN).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
        return torch.matmul(ones, x)
