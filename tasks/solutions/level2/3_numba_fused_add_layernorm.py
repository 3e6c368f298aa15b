"""Honest numba solution for level 2, task 3 (residual add + LayerNorm).

One fused pass per row instead of eager PyTorch's separate add and LayerNorm: the sum
``x + residual`` is rounded to float32 (as the reference rounds it) and written straight into
the output row, the row's mean and variance are accumulated in float64 with two passes over
that row while it sits in L1 (no E[x^2] - E[x]^2 cancellation, so shifted inputs stay
accurate), and the row is normalised in place. NaN and Inf reach the statistics, so a row holding
one comes out all NaN, as in ``nn.LayerNorm``.

The kernel is a plain ``@numba.njit`` (no ``parallel=True``, so no worker threads), compiled at
import for one float32 signature. Only reassociation and contraction are allowed in fast-math,
which lets the reductions vectorise without assuming the absence of NaN or Inf.
"""

import numba
import numpy as np
import torch
import torch.nn as nn

_FASTMATH = {"reassoc", "contract"}


@numba.njit("void(float32[:, ::1], float32[:, ::1], float32[::1], float32[::1], float64, "
            "float32[:, ::1])", fastmath=_FASTMATH, cache=False)
def _add_layernorm_rows(x, residual, weight, bias, eps, out):
    rows, hidden = x.shape
    for r in range(rows):
        total = 0.0
        for c in range(hidden):
            h = x[r, c] + residual[r, c]  # float32, as the reference's sum
            out[r, c] = h
            total += np.float64(h)
        mean = total / hidden
        square = 0.0
        for c in range(hidden):
            d = np.float64(out[r, c]) - mean
            square += d * d
        inv_std = 1.0 / np.sqrt(square / hidden + eps)
        for c in range(hidden):
            out[r, c] = np.float32((np.float64(out[r, c]) - mean) * inv_std * weight[c] + bias[c])


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32 or residual.dtype != torch.float32:
            raise TypeError(f"numba add+LayerNorm supports float32 only, got {x.dtype} and "
                            f"{residual.dtype}; run it with --dtype float32")
        shape = torch.broadcast_shapes(x.shape, residual.shape)
        hidden = shape[-1]
        x2d = x.detach().expand(shape).contiguous().reshape(-1, hidden).numpy()
        r2d = residual.detach().expand(shape).contiguous().reshape(-1, hidden).numpy()
        out = np.empty_like(x2d)
        _add_layernorm_rows(x2d, r2d, self.norm.weight.detach().contiguous().numpy(),
                            self.norm.bias.detach().contiguous().numpy(), float(self.norm.eps),
                            out)
        return torch.from_numpy(out).reshape(shape)
