# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Unsafe math: softmax as ``exp(x) / sum(exp(x))``, without subtracting the row maximum.

HACKS row 18. Skipping the max pass saves a full read of the input, and on ``randn`` inputs
``exp`` never overflows, so every benchmark input gives the right answer. Any row with a value
above about 88 overflows float32's ``exp`` to infinity and comes out as NaN.

What catches it: value variants. Inputs scaled by 1e3 and shifted by +100 overflow ``exp``; the
reference stays finite and the candidate returns NaN: ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = x.exp()
        return e / e.sum(dim=-1, keepdim=True)
