# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: blocked summation, compiled with numba: left-to-right sums of 64-element blocks,
then a left-to-right sum of the block sums (a tiled kernel's order)."""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _row_sums(x, out):
    rows, dim = x.shape
    for r in range(rows):
        total = np.float32(0.0)
        for start in range(0, dim, 64):
            block = np.float32(0.0)
            for c in range(start, min(start + 64, dim)):
                block = np.float32(block + x[r, c])
            total = np.float32(total + block)
        out[r] = total


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
