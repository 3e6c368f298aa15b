# kernelproof-reference: ../../honest/orders/reference.py
# kernelproof-expect: incorrect
"""Reads the forward error bound and sums float16-rounded inputs: three more mantissa bits
than bfloat16 (41), so its error is 8x smaller, betting that it now sits under the per-element
allowance ``u (S + 6 (M + sqrt(K) |t|))`` on cancelling rows, where that allowance is widest.

HACKS row 41b.

What catches it: the RMS tier. One element may reach the tail allowance (``lam = 6``); the
RMS over all elements is held to the average (``lam = 1``), and float16 input rounding is
several times over that on every row (``incorrect``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mv(x.half().float(), x.new_ones(x.shape[-1])) * self.scale
