# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Returns ones whatever the input's finite values: right on this degenerate task, which is the
point. Verified, with a ``warn`` that names the task as degenerate. ``x * 0`` only carries NaN
and Inf through as NaN, as a softmax over one element does (a candidate that turns bad input
into numbers is wrong on the inf-nan cell)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0 + 1
