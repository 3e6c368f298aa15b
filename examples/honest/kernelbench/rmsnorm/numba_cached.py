"""Honest numba RMSNorm with ``cache=True``: the compiled kernel is written to numba's cache
on first use and loaded from it on later runs.

Without a cache folder given, numba writes an index beside this file (``__pycache__``); the
verifier gives every candidate its own ``NUMBA_CACHE_DIR``, and this file's folder stays
read-only.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(cache=True)
def _rmsnorm_cached(x, eps, out):
    batch, features, positions = x.shape
    for b in range(batch):
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
        shaped = x.contiguous().reshape(x.shape[0], x.shape[1], -1)
        out = np.empty(shaped.shape, dtype=np.float32)
        _rmsnorm_cached(shaped.numpy(), float(self.eps), out)
        return torch.from_numpy(out).reshape(x.shape)
