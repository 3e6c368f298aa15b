# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest and more accurate than the reference: the matrix-vector product in float64, rounded
to float32 at the end. Its extra time is inside the call; nothing runs after it returns.

Issue 25 class 5: must not be confused with work after return (class 2's rules).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.full((x.shape[1],), 1.75, dtype=torch.float64, device=x.device)
        return torch.mv(x.double(), ones).to(x.dtype)
