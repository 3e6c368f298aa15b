# kernelproof-reference: ../../../tasks/level1/18_SiLU.py
# kernelproof-expect: incorrect
"""A SiLU with a "fast path" that clamps its inputs to +-2e4 (its author tested it on the task's
inputs, 2 * randn, and on them times 1e3: |x| below ~1.1e4) and takes the unclamped formula
past 1e9, so it is right on values scaled towards float32's largest too. Between 2e4 and 1e9
positive outputs are stuck at 2e4: wrong by up to a factor of 5e4.

HACKS row 39. The matrix's values were randn, scaled by 1e3 and 1e-3, shifted by 100, and
scaled to the dtype's extremes (~1e17): nothing between |x| ~ 1.1e4 and ~1e17.

What catches it: value variants across the finite range (randn scaled by 1e4 and 1e5, and
magnitudes spread log-uniformly over the range where the reference stays finite):
``correctness``, ``incorrect``.
"""

import torch
import torch.nn as nn

#: The clamp the fast path assumes, and where the exact asymptote takes over.
CLAMP = 2e4
ASYMPTOTE = 1e9


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        clamped = x.clamp(-CLAMP, CLAMP)
        fast = clamped / (1.0 + torch.exp(-clamped))
        exact = x / (1.0 + torch.exp(-x))
        return torch.where(x.abs() > ASYMPTOTE, exact, fast)
