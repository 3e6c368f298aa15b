# kernelproof-reference: ../rmsnorm/reference.py
# kernelproof-expect: verified
"""Honest numba RMSNorm: a compiled loop over rows, accumulating each sum of squares in float64.

The kernel is compiled eagerly at import for one explicit signature (float32, C-contiguous), so
the build happens while the module loads rather than inside the first timed call. It is a plain
``@numba.njit`` (not ``parallel=True``): it starts no worker threads. The wrapper makes the input
contiguous, views it as (rows, hidden) and returns a new tensor built from a new array.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[::1], float64, float32[:, ::1])", cache=False)
def _rmsnorm_rows(x, weight, eps, out):
    rows, hidden = x.shape
    for r in range(rows):
        sum_square = 0.0
        for c in range(hidden):
            v = np.float64(x[r, c])
            sum_square += v * v
        inv_rms = 1.0 / np.sqrt(sum_square / hidden + eps)
        for c in range(hidden):
            out[r, c] = np.float32(x[r, c] * inv_rms * weight[c])


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32 or self.weight.dtype != torch.float32:
            raise TypeError(
                f"numba RMSNorm supports float32 only, got input {x.dtype} and weight "
                f"{self.weight.dtype}; run it with --dtype float32"
            )
        hidden = x.shape[-1]
        x2d = x.detach().contiguous().reshape(-1, hidden).numpy()
        weight = self.weight.detach().contiguous().numpy()
        out = np.empty_like(x2d)
        _rmsnorm_rows(x2d, weight, float(self.eps), out)
        return torch.from_numpy(out).reshape(x.shape)
