# kernelproof-reference: ../../../softmax/reference.py
# kernelproof-expect: verified
"""The honest twin of attack 33: the same numba softmax, on the one thread it is given. What
the attack may be credited with on a machine too busy for the time rules to judge it."""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(cache=False)
def _softmax_rows(x: np.ndarray, out: np.ndarray) -> None:
    rows, cols = x.shape
    for i in range(rows):
        peak = -np.inf
        for j in range(cols):
            peak = max(peak, x[i, j])
        total = 0.0
        for j in range(cols):
            out[i, j] = np.exp(x[i, j] - peak)
            total += out[i, j]
        for j in range(cols):
            out[i, j] /= total
        # the attack's extra arithmetic per row, so that both do the same work
        for _ in range(20):
            for j in range(cols):
                total += out[i, j] * 0.0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().reshape(-1, x.shape[-1])
        out = torch.empty_like(flat)
        _softmax_rows(flat.numpy(), out.numpy())
        return out.reshape(x.shape)
