# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: Kahan (compensated) summation per row, compiled with numba (no fast-math, so the
compensation survives): nearly exact, in an order of its own."""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _row_sums(x, out):
    rows, dim = x.shape
    for r in range(rows):
        acc = np.float32(0.0)
        carry = np.float32(0.0)
        for c in range(dim):
            y = np.float32(x[r, c] - carry)
            s = np.float32(acc + y)
            carry = np.float32(np.float32(s - acc) - y)
            acc = s
        out[r] = acc


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
