# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest but slow: reads its input three times, ``x@1 + (x*0.5)@1 + (x*0.25)@1`` (row sums
as matrix-vector products, so that the op audit sees a rewrite, not the reference's ``sum``).

Issue 25 class 6: ``suspect`` in 2 of 4 runs at a load of about 3.5 on 2 cores ("left 767 us
more untimed time in its batch than the reference's did"), ``verified`` in the other 2.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
        return torch.mv(x, ones) + torch.mv(x * 0.5, ones) + torch.mv(x * 0.25, ones)
