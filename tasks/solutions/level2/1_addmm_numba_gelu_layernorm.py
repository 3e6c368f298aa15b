"""Honest solution for level 2, task 1 (Linear + GELU + LayerNorm): BLAS GEMM, numba epilogue.

The GEMM stays with ``torch.addmm`` (bias folded into the GEMM as its beta term); GELU and
LayerNorm, which eager PyTorch runs as two more full passes over the output with a temporary in
between, become one numba loop nest per row: the exact GELU ``0.5 * y * (1 + erf(y / sqrt 2))``
is applied while the row's sum accumulates in float64, then the variance (a second pass, no
cancellation) and the affine normalisation follow on the L1-resident row.

A plain ``@numba.njit`` (no threads), compiled at import for one float32 signature; fast-math
is limited to reassociation and contraction so NaN and Inf keep their meaning.

Honest but not faster: about 0.75x eager single-threaded on the dev machine. Without Intel SVML,
numba's ``erf`` is a scalar libm call per element, while PyTorch's GELU is vectorised; the saved
pass does not pay for that. (Leaving GELU to PyTorch and fusing only LayerNorm measured 1.0x.)
"""

import math

import numba
import numpy as np
import torch
import torch.nn as nn

_FASTMATH = {"reassoc", "contract"}
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@numba.njit("void(float32[:, ::1], float32[::1], float32[::1], float64)",
            fastmath=_FASTMATH, cache=False)
def _gelu_layernorm_rows(y, weight, bias, eps):
    """In place: each row of ``y`` becomes LayerNorm(GELU(row))."""
    rows, width = y.shape
    for r in range(rows):
        total = 0.0
        for c in range(width):
            v = np.float64(y[r, c])
            g = np.float32(0.5 * v * (1.0 + math.erf(v * _INV_SQRT2)))
            y[r, c] = g
            total += np.float64(g)
        mean = total / width
        square = 0.0
        for c in range(width):
            d = np.float64(y[r, c]) - mean
            square += d * d
        inv_std = 1.0 / math.sqrt(square / width + eps)
        for c in range(width):
            y[r, c] = np.float32((np.float64(y[r, c]) - mean) * inv_std * weight[c] + bias[c])


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32 or self.linear.weight.dtype != torch.float32:
            raise TypeError(f"the numba epilogue supports float32 only, got {x.dtype}; run it "
                            "with --dtype float32")
        rows = x.reshape(-1, x.shape[-1])
        y = torch.addmm(self.linear.bias.detach(), rows.detach(),  # fresh and contiguous
                        self.linear.weight.detach().t())
        _gelu_layernorm_rows(y.numpy(), self.norm.weight.detach().contiguous().numpy(),
                             self.norm.bias.detach().contiguous().numpy(), float(self.norm.eps))
        return y.reshape(*x.shape[:-1], y.shape[-1])
