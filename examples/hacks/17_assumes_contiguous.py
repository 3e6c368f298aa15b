# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Assumes a contiguous input: reads the raw storage from its start, ignoring strides and offset.

HACKS row 17. Hand-written kernels often index ``data_ptr()`` as a dense row-major array. This
candidate does the same in PyTorch: it views the input's storage from element 0 with row-major
strides. For the benchmark's freshly allocated, contiguous input that is exactly the input; for a
transposed view it reads the elements in the wrong order, and for a view that starts inside its
storage it reads the NaN the harness plants before the data: a confident wrong answer either way.

What catches it: layout variants of the same values: a non-contiguous (transposed) view and a
view at a storage offset of 3 elements. Both answers are wrong: ``incorrect``.
"""

import torch
import torch.nn as nn


def _as_dense(x: torch.Tensor) -> torch.Tensor:
    """The first ``numel`` elements of x's storage, as a row-major tensor of x's shape."""
    strides, step = [], 1
    for size in reversed(x.shape):
        strides.append(step)
        step *= size
    dense = torch.empty(0, dtype=x.dtype, device=x.device)
    return dense.set_(x.untyped_storage(), 0, x.shape, tuple(reversed(strides)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = _as_dense(x)
        e = (rows - rows.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
