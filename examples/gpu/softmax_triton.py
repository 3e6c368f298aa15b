# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: verified
"""Honest Triton softmax for CUDA: one program per row, the whole row in one block.

Used by ``scripts/gpu_selfcheck.py`` (needs a CUDA GPU). Rows of any length up to the block
limit work: the block is the next power of two of the row length, masked past its end.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous().view(-1, x.shape[-1])
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        if n_rows and n_cols:
            block = triton.next_power_of_2(n_cols)
            _softmax_rows[(n_rows,)](x2, out, n_cols, x2.stride(0), out.stride(0), BLOCK=block)
        return out.view(x.shape)
