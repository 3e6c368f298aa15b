# kernelproof-reference: ../rmsnorm/reference.py
# kernelproof-expect: verified
"""Honest numba RMSNorm with ``cache=True``: numba writes its compiled kernel to a cache on
first use and loads it on later runs.

Without a cache folder of its own, numba writes ``__pycache__`` beside this file, which a
sandboxed candidate may not write (and kernelproof once called that "file access outside the
worker's sandbox", ``suspect``). kernelproof points ``NUMBA_CACHE_DIR`` (and the other build
caches) at a folder made for this candidate's source, so the honest kernel is verified from its
own folder.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(cache=True)
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
            raise TypeError(f"float32 only, got input {x.dtype} and weight {self.weight.dtype}")
        hidden = x.shape[-1]
        x2d = x.detach().contiguous().reshape(-1, hidden).numpy()
        weight = self.weight.detach().contiguous().numpy()
        out = np.empty_like(x2d)
        _rmsnorm_rows(x2d, weight, float(self.eps), out)
        return torch.from_numpy(out).reshape(x.shape)
