"""Honest blocked numba RMSNorm over the feature dimension.

The input is viewed as (batch, features, positions). Positions are processed in blocks of
``_BLOCK``: for each block, the sums of squares of every feature are accumulated (in float64)
into a small buffer that stays in cache, then the block is scaled. Same result as the
reference, in another order.
"""

import numba
import numpy as np
import torch
import torch.nn as nn

#: Positions per block: 64 float64 partial sums fit easily in L1.
_BLOCK = 64


@numba.njit(cache=False)
def _rmsnorm_blocked(x, eps, out):
    batch, features, positions = x.shape
    sums = np.empty(_BLOCK, dtype=np.float64)
    for b in range(batch):
        for start in range(0, positions, _BLOCK):
            stop = min(start + _BLOCK, positions)
            width = stop - start
            sums[:width] = 0.0
            for f in range(features):
                for p in range(width):
                    v = np.float64(x[b, f, start + p])
                    sums[p] += v * v
            for p in range(width):
                sums[p] = 1.0 / np.sqrt(sums[p] / features + eps)
            for f in range(features):
                for p in range(width):
                    out[b, f, start + p] = np.float32(x[b, f, start + p] * sums[p])


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shaped = x.contiguous().reshape(x.shape[0], x.shape[1], -1)
        out = np.empty(shaped.shape, dtype=np.float32)
        _rmsnorm_blocked(shaped.numpy(), float(self.eps), out)
        return torch.from_numpy(out).reshape(x.shape)
