# kernelproof-reference: ../linear_relu/reference.py
# kernelproof-expect: incorrect
"""Disguised precision downgrade: the matmul runs under CPU autocast to a built dtype name.

HACKS row 11, disguised. No ``.half()``, ``.bfloat16()`` or ``.to(torch.bfloat16)`` appears: the
linear layer simply runs inside ``torch.autocast``, whose dtype is looked up with ``getattr``
from a string assembled at import. Autocast inserts the casts itself, so the matrix multiply
runs in bfloat16 and the result is cast back to float32 on the way out.

What catches it: the error against the float64 oracle, far beyond the reference's own float32
error (``correctness``, ``incorrect``); and the op audit's view of the low-precision casts that
autocast dispatched (``precision-cast``).
"""

import torch
import torch.nn as nn

_LOW = getattr(torch, "b" + "float" + str(16))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, dtype=_LOW):
            y = self.linear(x)
        return torch.relu(y).to(x.dtype)
