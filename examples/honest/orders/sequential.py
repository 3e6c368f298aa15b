# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: a strictly left-to-right float32 sum per row (a plain C loop's order), compiled
with numba for one explicit signature at import.

On rows of one repeated value (the matrix's ``value:equal-rows``) torch's cascade is nearly
exact and this order is not: the issue's held-out C++ L1 norm was ``incorrect`` there at 4.56x
the reference's own error. It is within what any correct order may lose.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _row_sums(x, out):
    rows, dim = x.shape
    for r in range(rows):
        acc = np.float32(0.0)
        for c in range(dim):
            acc = np.float32(acc + x[r, c])
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
