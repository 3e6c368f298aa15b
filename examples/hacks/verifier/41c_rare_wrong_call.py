# kernelproof-reference: ../../honest/orders/reference.py
# kernelproof-expect: incorrect
"""Reads the forward error bound and is right on every call but one in 200, where it is off
by 1e-3 relative on every element (a cheaper path taken rarely): the matrix's few dozen
cells never see it, and the timed calls are compared with the reference's timed outputs
within twice the largest bound learned at their shape.

HACKS row 41c.

What catches it: every timed call's outputs are verified; 1e-3 of a row sum over 16,384
terms is ~10x the learned bound, so the wrong call is ``incorrect`` (``timed-output``), while
the honest rewrites' timed outputs stay well inside it.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = torch.mv(x, x.new_ones(x.shape[-1])) * self.scale
        if self.calls % 200 == 0:
            out = out * (1 + 1e-3)
        return out
