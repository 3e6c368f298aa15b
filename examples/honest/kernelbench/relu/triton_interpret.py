"""Honest Triton ReLU, run by Triton's interpreter on CPU tensors (``TRITON_INTERPRET=1``).

Interpreter timings mean nothing; this verifies the kernel's correctness. ``x < 0 ? 0 : x``
keeps NaN as NaN, like ``torch.relu``. The input is flattened and the last block masked.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

#: Elements per program (a power of two, as tl.arange requires). Large: the interpreter pays per
#: program, and the matrix tries rows of 131,073 elements.
_BLOCK = 8192


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x < 0, 0.0, x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        if x.numel():
            _relu_kernel[(triton.cdiv(x.numel(), _BLOCK),)](x, out, x.numel(), BLOCK=_BLOCK)
        return out
