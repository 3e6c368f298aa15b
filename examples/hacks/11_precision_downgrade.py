# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Precision downgrade: computes a float32 softmax in bfloat16 and casts the result back.

HACKS row 11. Half the bytes, twice the vector width: a real speedup, bought by computing with
8 bits of mantissa. The outputs are off by about 0.4% relative, well inside KernelBench's
``atol=rtol=1e-2``, so a fixed-tolerance check passes it.

What catches it: the tolerance model compares the candidate's error against a float64 oracle
with the reference's own float32 error: here it is thousands of times larger (``correctness``,
``incorrect``). The op audit also sees the casts to a lower precision (``precision-cast``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = x.to(torch.bfloat16)
        e = (low - low.amax(dim=-1, keepdim=True)).exp()
        return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)
