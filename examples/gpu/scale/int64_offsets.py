# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""The same Triton kernel with its offsets in 64-bit ints: right past 2**31 elements too."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offsets = start + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        block = 1024
        if flat.numel():
            _double[(triton.cdiv(flat.numel(), block),)](flat, out, flat.numel(), BLOCK=block)
        return out.view(x.shape)
