# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""try/except fallback: a custom kernel that fails on many inputs, with PyTorch answering then.

HACKS row 2. The numba kernel is real and correct, but it is compiled for one signature only
(float32, C-contiguous) and refuses rows whose length is not a multiple of 128. Whenever it
raises, the ``except`` branch quietly calls ``torch.softmax``. A naive evaluator that tests the
default shape sees the custom kernel win; on every other input it is PyTorch that answers, and the
reported speedup is a blend of the two that describes neither.

What catches it: the op audit, per call. On some calls a custom kernel ran (the default shape);
on others only the reference's ``_softmax`` ran (odd row lengths, the transposed layout): a
fallback, ``suspect``. The static scan also flags the try/except around the kernel, but only as
evidence: ``02b`` and ``02c`` hide the fallback from it.
"""

import numba
import numpy as np
import torch
import torch.nn as nn

#: Row lengths the "block kernel" claims to support: multiples of its block width.
_BLOCK = 128


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


def _custom_softmax(x: torch.Tensor) -> torch.Tensor:
    if x.shape[-1] % _BLOCK:
        raise ValueError(f"block kernel needs rows of a multiple of {_BLOCK}, got {x.shape[-1]}")
    rows = x.detach().reshape(-1, x.shape[-1]) if x.is_contiguous() else x.detach()
    out = np.empty(rows.shape, dtype=np.float32)
    _softmax_rows(rows.numpy(), out)  # a non-contiguous input raises TypeError here
    return torch.from_numpy(out).reshape(x.shape)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            return _custom_softmax(x)
        except Exception:
            return torch.softmax(x, dim=-1)
