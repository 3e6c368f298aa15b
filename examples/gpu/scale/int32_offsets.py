# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""A Triton kernel that computes its offsets in 32-bit ints: ``program_id * BLOCK`` wraps once
the vector passes 2**31 elements, so the programs past that point read and write the wrong
places (or fault). Right at every size below 2**31, which is every size a benchmark tries.

What catches it: on a GPU the matrix runs each knob at the smallest size whose tensor passes
2**31 elements, where device and host memory allow (``correctness``, ``incorrect``; a fault
there is a crash, also not verified).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK  # int32: wraps past 2**31
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
