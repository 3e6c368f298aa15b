# kernelproof-reference: ../tiny_add/reference.py
# kernelproof-expect: verified
"""Honest Triton kernel for x * scale + y, run by Triton's interpreter on CPU tensors.

``TRITON_INTERPRET=1`` must be set before triton is imported, hence the ``setdefault`` above the
import (a caller that already chose a value keeps it). Interpreter timings mean nothing; this
example exists to be verified for correctness. The kernel flattens both (contiguous) inputs and
masks the last block, so any size works.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

#: Elements per program. A power of two, as tl.arange requires; sizes need not be multiples of it.
_BLOCK = 1024


@triton.jit
def _scale_add_kernel(x_ptr, y_ptr, out_ptr, scale, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * scale + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if x.shape != y.shape:
            raise ValueError(f"scale-add kernel needs equal shapes, got {tuple(x.shape)} and {tuple(y.shape)}")
        if x.dtype != torch.float32 or y.dtype != torch.float32:
            raise TypeError(f"scale-add kernel supports float32 only, got {x.dtype} and {y.dtype}")
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        if n_elements == 0:
            return out
        grid = (triton.cdiv(n_elements, _BLOCK),)
        _scale_add_kernel[grid](x, y, out, float(self.scale), n_elements, BLOCK=_BLOCK)
        return out
