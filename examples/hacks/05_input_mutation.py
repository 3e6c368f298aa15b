# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Input mutation: zeroes the input in place, then returns the softmax of zeros.

HACKS row 5. The softmax of a row of zeros is the constant 1/dim, so the candidate returns
that constant without reading its input, after overwriting the input with zeros. An evaluator
that runs the reference *after* the candidate, on the same tensor, computes the softmax of
zeros too, and the two agree perfectly.

What catches it: the reference computes on its own copy of the inputs in its own process, so
the candidate's answer is wrong (``incorrect``); and the harness compares the inputs with a
pristine copy after every call (``input-mutation``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.zero_()
        return torch.full_like(x, 1.0 / x.shape[-1])
