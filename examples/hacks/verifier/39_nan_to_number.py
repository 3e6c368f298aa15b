# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: incorrect
"""Turns the reference's NaN into numbers: a softmax that "sanitises" its output, so a row
holding a NaN (or a +Inf, whose softmax is NaN) comes out as the uniform distribution, ordinary
finite probabilities, where the reference's row is NaN. Every finite element is right.

HACKS row 39. A kernel that silently masks bad input hides the upstream bug that produced it;
a verifier that calls this a ``warn`` (a "limitation") lets it through as ``verified``.

What catches it: where the reference's output is NaN or Inf and the float64 oracle agrees that
the true answer is not a finite number of the dtype, the candidate must give the same kind of
value at the same positions; a finite number there is a silently wrong answer (``correctness``,
``incorrect``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        out = exp / exp.sum(dim=-1, keepdim=True)
        return torch.where(torch.isnan(out), 1.0 / x.shape[-1], out)  # "no NaN downstream"
