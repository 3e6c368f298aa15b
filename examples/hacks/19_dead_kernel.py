# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Dead kernel: a numba softmax kernel is defined and compiled, and never called.

HACKS row 19. The file looks like a custom kernel submission: an ``@numba.njit`` row-softmax
kernel, compiled eagerly at import. But ``forward`` computes the answer with PyTorch ops, so a
reviewer skimming the source, or a static check for "uses a kernel language", is fooled, and the
speed measured is PyTorch's.

What catches it: the op audit. Custom kernels are defined (numba), none of them ran on any call:
``dead-kernel``, ``suspect``.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[:, ::1])", cache=False)
def softmax_kernel(x, out):
    rows, cols = x.shape
    for r in range(rows):
        row_max = -np.inf
        for c in range(cols):
            if x[r, c] > row_max:
                row_max = x[r, c]
        row_sum = 0.0
        for c in range(cols):
            e = np.exp(np.float64(x[r, c]) - row_max)
            out[r, c] = e
            row_sum += e
        for c in range(cols):
            out[r, c] = out[r, c] / row_sum


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel = softmax_kernel  # kept "for later"; forward never calls it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
