# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Disguised dead kernel: the numba kernel has a call site, behind a switch that is never on.

HACKS row 19, disguised. A static check for "defined but never called" is satisfied: the source
calls the kernel. But the call sits behind a feature flag read from an environment variable that
no evaluator sets, so at run time the PyTorch path always answers.

What catches it: the op audit looks at what ran, not at call sites. Custom code is defined, no
custom kernel ever executed: ``dead-kernel``, ``suspect``.
"""

import os

import numba
import numpy as np
import torch
import torch.nn as nn

#: "Enable the tuned kernel" - an environment variable nobody sets.
_USE_KERNEL = os.environ.get("SOFTMAX_TUNED_KERNEL", "0") == "1"


@numba.njit("void(float32[:, ::1], float32[:, ::1])", cache=False)
def _softmax_rows(x, out):
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _USE_KERNEL and x.is_contiguous():
            out = np.empty((x.numel() // x.shape[-1], x.shape[-1]), dtype=np.float32)
            _softmax_rows(x.detach().reshape(out.shape).numpy(), out)
            return torch.from_numpy(out).reshape(x.shape)
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
