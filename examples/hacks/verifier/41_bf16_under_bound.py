# kernelproof-reference: ../../honest/orders/reference.py
# kernelproof-expect: incorrect
"""Reads the forward error bound (``checks/forward_error.py``) and sums in bfloat16 input
precision, betting that a bound loose enough for *any* summation order of 16,384 terms is
loose enough for 8-bit mantissas too (the worst-case bound ``n u sum|x|`` is: 16,384 terms
lose up to 1e-3 of ``sum|x|`` in float32, more than bfloat16 rounding of the inputs costs).

HACKS row 41. Before issue 25's fix the reference's own error alone was the limit.

What catches it: the bound is not the worst case. Its systematic part grows with the share
of terms that repeat (none here), its random part with the terms' magnitudes plus the drift
towards the result, not ``sqrt(n)`` times the whole sum: bfloat16's input rounding is ~15x
over it per element and ~50x in RMS (``incorrect``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # bfloat16 halves the bytes read; the sum itself is float32 (no cast op on the output)
        return torch.mv(x.bfloat16().float(), x.new_ones(x.shape[-1])) * self.scale
