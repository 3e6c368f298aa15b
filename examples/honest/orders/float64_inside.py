# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: accumulates each row in float64 and rounds once (numba): more accurate than the
float32 reference, whose own error varies hundreds-fold between seeds; the issue's held-out
float64-internal matvec was ``incorrect`` at 12.3x it."""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _row_sums(x, out):
    rows, dim = x.shape
    for r in range(rows):
        acc = 0.0
        for c in range(dim):
            acc += np.float64(x[r, c])
        out[r] = np.float32(acc)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"this row sum supports float32 only, got {x.dtype}")
        rows = x.contiguous().reshape(-1, x.shape[-1])
        out = np.empty(rows.shape[0], dtype=np.float32)
        _row_sums(rows.numpy(), out)
        return torch.from_numpy(out).reshape(x.shape[:-1]) * self.scale
