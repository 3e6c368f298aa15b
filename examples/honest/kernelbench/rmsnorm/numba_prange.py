"""Honest parallel numba RMSNorm: ``prange`` over the batch, at the thread count it is given.

numba's thread pool is sized by ``NUMBA_NUM_THREADS``, which the verifier sets; each call
runs on ``torch.get_num_threads()`` threads at most, so it uses the cores it was allowed
(``numba.set_num_threads``). Sums of squares are accumulated in float64.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(parallel=True, cache=False)
def _rmsnorm_parallel(x, eps, out):
    batch, features, positions = x.shape
    for b in numba.prange(batch):
        for p in range(positions):
            total = 0.0
            for f in range(features):
                v = np.float64(x[b, f, p])
                total += v * v
            scale = 1.0 / np.sqrt(total / features + eps)
            for f in range(features):
                out[b, f, p] = np.float32(x[b, f, p] * scale)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        numba.set_num_threads(max(1, min(numba.config.NUMBA_NUM_THREADS,
                                         torch.get_num_threads())))
        shaped = x.contiguous().reshape(x.shape[0], x.shape[1], -1)
        out = np.empty(shaped.shape, dtype=np.float32)
        _rmsnorm_parallel(shaped.numpy(), float(self.eps), out)
        return torch.from_numpy(out).reshape(x.shape)
