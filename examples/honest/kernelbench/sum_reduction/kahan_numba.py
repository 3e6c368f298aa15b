"""Honest Kahan (compensated) summation in numba over the reduced dimension.

Compensated summation keeps the running rounding error and feeds it back, so the result is
close to the exactly rounded sum. Kahan's compensation turns an infinite term into NaN
(inf - inf), so a row whose plain sum is not finite returns the plain sum, as torch does.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(cache=False)
def _kahan_rows(x, out):
    rows, cols = x.shape
    for r in range(rows):
        total = np.float32(0.0)
        compensation = np.float32(0.0)
        plain = np.float32(0.0)
        for c in range(cols):
            value = x[r, c]
            plain += value
            y = value - compensation
            t = total + y
            compensation = (t - total) - y
            total = t
        out[r] = total if np.isfinite(plain) else plain


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        moved = x.movedim(dim, -1).contiguous()
        flat = moved.reshape(-1, moved.shape[-1]).numpy()
        out = np.empty(flat.shape[0], dtype=np.float32)
        _kahan_rows(flat, out)
        return torch.from_numpy(out).reshape(moved.shape[:-1]).unsqueeze(dim)
