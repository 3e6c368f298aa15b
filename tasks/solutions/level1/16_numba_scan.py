"""Honest numba cumulative sum along the last dimension: a serial scan per row.

Each row is scanned with a float64 running total (PyTorch's CPU cumsum also accumulates float32
in double), and every prefix is rounded once to float32. A NaN or Inf propagates along the rest
of its row, exactly as in the reference.

Compiled eagerly at import for one signature (float32, C-contiguous); plain ``@numba.njit``,
no ``parallel=True``: it starts no threads.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[:, ::1])", cache=False)
def _cumsum_rows(x, out):
    rows, length = x.shape
    for r in range(rows):
        running = 0.0
        for c in range(length):
            running += np.float64(x[r, c])
            out[r, c] = np.float32(running)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"numba cumsum supports float32 only, got {x.dtype}")
        if x.dim() == 0:
            raise ValueError("cumsum over the last dimension needs at least one dimension")
        length = x.shape[-1]
        rows = x.detach().contiguous().reshape(-1, length).numpy()
        out = np.empty_like(rows)
        _cumsum_rows(rows, out)
        return torch.from_numpy(out).reshape(x.shape)
